import SynchroClient
import SynchroHTTP

/// `CurlTransport` adapted to the engine's transport: every exchange is a protocol POST with the bearer
/// credential and `X-App-Version` (wire-protocol §1.2).
public struct HTTPSyncTransport: SyncTransport {
    let curl: CurlTransport
    let credential: String
    let appVersion: String

    /// A transport to the server at `baseURL` as the user `credential` authenticates.
    public init(baseURL: String, credential: String, appVersion: String) throws(TransportError) {
        curl = try CurlTransport(configuration: .init(baseURL: baseURL))
        self.credential = credential
        self.appVersion = appVersion
    }

    public func post(path: String, body: [UInt8]) throws -> SyncReply {
        var request = TransportRequest.protocolPost(
            path: path, body: body, credential: credential, appVersion: appVersion)
        request.maximumResponseBytes = ResponseBudget.forPath(path).maximumBytes
        let response: TransportResponse
        do {
            response = try curl.send(request)
        } catch TransportError.tooLarge(let limit) {
            throw ResponseTooLarge(limit: limit)
        }
        return SyncReply(
            status: response.status, headers: response.headers.map { (name: $0.name, value: $0.value) },
            body: response.body)
    }
}
