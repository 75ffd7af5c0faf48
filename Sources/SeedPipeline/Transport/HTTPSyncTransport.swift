import SynchroClient
import SynchroHTTP

/// `CurlTransport` adapted to the engine's transport: every exchange is a protocol POST with the bearer
/// credential and `X-App-Version` (wire-protocol §1.2). A request that gets no reply throws a
/// ``SyncTransportFailure`` naming its kind and URL (``NetworkFailure``); the engine retries it when transient.
public struct HTTPSyncTransport: SyncTransport {
    let curl: CurlTransport
    let credential: String
    let appVersion: String
    /// Retries of the transport itself, for callers without the engine's own (`validate --server`); nil for the
    /// engine, which retries with its durable backoff.
    let retry: NetworkRetryPolicy?

    /// A transport to the server at `baseURL` as the user `credential` authenticates; `timeout` bounds each
    /// request (connection included), the connection itself at most ``NetworkTimeouts/connectLimit``.
    public init(
        baseURL: String, credential: String, appVersion: String, timeout: Duration = NetworkTimeouts.defaultTimeout,
        retry: NetworkRetryPolicy? = nil
    ) throws(TransportError) {
        curl = try CurlTransport(configuration: NetworkTimeouts.configuration(baseURL: baseURL, timeout: timeout))
        self.credential = credential
        self.appVersion = appVersion
        self.retry = retry
    }

    public func post(path: String, body: [UInt8]) throws -> SyncReply {
        var request = TransportRequest.protocolPost(
            path: path, body: body, credential: credential, appVersion: appVersion)
        request.maximumResponseBytes = ResponseBudget.forPath(path).maximumBytes
        let response: TransportResponse
        do throws(NetworkFailure) {
            if let retry {
                response = try retry.send(request, via: curl, baseURL: curl.baseURL)
            } else {
                do {
                    response = try curl.send(request)
                } catch {
                    throw NetworkFailure(url: curl.baseURL + path, error: error)
                }
            }
        } catch {
            if case .tooLarge(let limit)? = error.error { throw ResponseTooLarge(limit: limit) }
            throw SyncTransportFailure(
                rule: error.rule, message: error.description, isRetryable: error.error?.isTransient ?? true)
        }
        return SyncReply(
            status: response.status, headers: response.headers.map { (name: $0.name, value: $0.value) },
            body: response.body)
    }
}
