import SeedArtifacts
import SynchroHTTP
import SynchroProtocol

/// The reference server's export routes (docs/server.md): `GET /sync/schema`, `POST /operator/seed/manifest`
/// and `POST /operator/seed/scope`, authenticated with the operator token.
public struct HTTPExportSource: SeedExportSource {
    private let transport: any HTTPTransport
    private let operatorToken: String
    private let baseURL: String
    private let retry: NetworkRetryPolicy

    /// A source for the server at `baseURL` (`http(s)://host:port`, optionally ending in `/operator/seed`); each
    /// request ends after `timeout` and is retried as `retry` allows (by default not at all: the commands pass
    /// `--retries`).
    public init(
        baseURL: String, operatorToken: String, timeout: Duration = .seconds(60),
        retry: NetworkRetryPolicy = NetworkRetryPolicy(retries: 0)
    ) throws(SeedExportError) {
        var base = baseURL
        for suffix in ["/operator/seed/", "/operator/seed", "/"] where base.hasSuffix(suffix) {
            base.removeLast(suffix.count)
        }
        var configuration = CurlTransport.Configuration(baseURL: base)
        configuration.totalTimeout = timeout
        configuration.connectTimeout = min(timeout, configuration.connectTimeout)
        do {
            let curl = try CurlTransport(configuration: configuration)
            transport = curl
            self.baseURL = curl.baseURL
        } catch {
            throw .invalidSource(reason: "the source URL is not an http(s) URL without credentials")
        }
        self.operatorToken = operatorToken
        self.retry = retry
    }

    /// A source over an existing transport (tests inject faults here); `baseURL` only names it in failures.
    public init(
        transport: any HTTPTransport, operatorToken: String, baseURL: String = "http://source",
        retry: NetworkRetryPolicy = NetworkRetryPolicy(retries: 0)
    ) {
        self.transport = transport
        self.operatorToken = operatorToken
        self.baseURL = baseURL
        self.retry = retry
    }

    public func schemaManifest() throws(SeedExportError) -> [UInt8] {
        try send(TransportRequest(method: .get, path: "/sync/schema"), route: "schema")
    }

    public func exportManifest(pageLimit: Int64) throws(SeedExportError) -> [UInt8] {
        try post("/operator/seed/manifest", route: "export manifest", .object(JSONObject([
            JSONMember("page_limit", .number(JSONNumber(pageLimit)))
        ])))
    }

    public func scopePage(_ request: SeedPageRequest) throws(SeedExportError) -> [UInt8] {
        try post("/operator/seed/scope", route: "scope page", .object(JSONObject([
            JSONMember("scope_id", .string(request.scopeID)),
            JSONMember("page_token", .string(request.pageToken)),
            JSONMember("continuation_receipt", .string(request.receipt)),
            JSONMember("expected_row_ordinal", .number(JSONNumber(request.expectedRowOrdinal))),
            JSONMember("limit", .number(JSONNumber(request.limit))),
        ])))
    }

    private func post(_ path: String, route: String, _ body: JSONValue) throws(SeedExportError) -> [UInt8] {
        let octets: [UInt8]
        do {
            octets = try CanonicalJSON.encode(body)
        } catch {
            throw .invalidSource(reason: "a request member has no RFC 8785 form")
        }
        return try send(TransportRequest(
            method: .post, path: path,
            headers: [("Authorization", "Bearer " + operatorToken), ("Content-Type", "application/json")],
            body: octets), route: route)
    }

    private func send(_ request: TransportRequest, route: String) throws(SeedExportError) -> [UInt8] {
        let response: TransportResponse
        do {
            response = try retry.send(request, via: transport, baseURL: baseURL)
        } catch {
            throw .transport(
                route: route, reason: error.description, rule: error.rule, retriesExhausted: error.retriesExhausted)
        }
        guard response.status == 200 else {
            // Only the error code is kept: messages may echo request members.
            let code = (try? StrictJSONParser().parse(response.body))?.objectValue?["error"]?.objectValue?["code"]?
                .stringValue
            throw .refused(route: route, status: response.status, code: code)
        }
        return response.body
    }
}
