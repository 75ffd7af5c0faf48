import SynchroProtocol

/// One export exactly as a server sent it: the schema manifest, the export manifest and every page of every
/// portable scope, keyed by the request that fetched it. ``SeedExportReplay`` answers upstream's PostgreSQL
/// functions from it.
public struct ExportRecording: Sendable {
    /// One page and the request that fetched it.
    public struct Page: Sendable {
        public let scopeID: String
        public let pageToken: String
        public let expectedRowOrdinal: Int64
        public let body: [UInt8]

        public init(scopeID: String, pageToken: String, expectedRowOrdinal: Int64, body: [UInt8]) {
            self.scopeID = scopeID
            self.pageToken = pageToken
            self.expectedRowOrdinal = expectedRowOrdinal
            self.body = body
        }
    }

    public var schemaManifest: [UInt8]
    public var exportManifest: [UInt8]
    public var pages: [Page]

    public init(schemaManifest: [UInt8], exportManifest: [UInt8], pages: [Page]) {
        self.schemaManifest = schemaManifest
        self.exportManifest = exportManifest
        self.pages = pages
    }

    /// Records a whole export from the reference server's operator routes over HTTP, with the requests
    /// `HTTPExportSource` sends (`GET /sync/schema`, `POST /operator/seed/manifest`, `POST /operator/seed/scope`).
    public static func record(from server: RunningServer, pageLimit: Int64) throws -> ExportRecording {
        let schema = try server.send("GET", "/sync/schema", body: [], headers: [])
        guard schema.status == 200 else { throw RecordingFailure("GET /sync/schema answered \(schema.status)") }
        let manifest = try operatorPost(server, "/operator/seed/manifest", [
            JSONMember("page_limit", .number(JSONNumber(pageLimit)))
        ])
        var pages: [Page] = []
        for scope in manifest.json.objectValue?["portable_scopes"]?.arrayValue ?? [] {
            guard let object = scope.objectValue, let id = object["id"]?.stringValue,
                  let receipt = object["continuation"]?.stringValue, var token = object["page_token"]?.stringValue
            else { throw RecordingFailure("an export manifest scope lacks id, continuation or page_token") }
            var ordinal: Int64 = 0
            while true {
                let page = try operatorPost(server, "/operator/seed/scope", [
                    JSONMember("scope_id", .string(id)), JSONMember("page_token", .string(token)),
                    JSONMember("continuation_receipt", .string(receipt)),
                    JSONMember("expected_row_ordinal", .number(JSONNumber(ordinal))),
                    JSONMember("limit", .number(JSONNumber(pageLimit))),
                ])
                pages.append(Page(scopeID: id, pageToken: token, expectedRowOrdinal: ordinal, body: page.body))
                let object = page.object
                ordinal += Int64(object["records"]?.arrayValue?.count ?? 0)
                guard object["has_more"] == .bool(true), let next = object["page_token"]?.stringValue else { break }
                token = next
            }
        }
        return ExportRecording(schemaManifest: schema.body, exportManifest: manifest.body, pages: pages)
    }

    private static func operatorPost(
        _ server: RunningServer, _ path: String, _ members: [JSONMember]
    ) throws -> RunningServer.Reply {
        let body = try CanonicalJSON.encode(.object(JSONObject(members)))
        let reply = try server.send("POST", path, body: body, headers: [
            ("Authorization", "Bearer " + RunningServer.operatorToken), ("Content-Type", "application/json"),
        ])
        guard reply.status == 200 else { throw RecordingFailure("POST \(path) answered \(reply.status)") }
        return reply
    }
}

/// Why an export could not be recorded.
public struct RecordingFailure: Error, CustomStringConvertible {
    public let description: String

    init(_ description: String) {
        self.description = description
    }
}
