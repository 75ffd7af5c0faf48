import Foundation
import SynchroProtocol

/// The reference delta server's pull pages: seed 003's `changes` shape and seed 004's `list` shape.
enum DeltaPages {
    /// `GET /v1/sync/{entity}?since=S&limit=L` (seed 003 §2): changes with `rev > since` ascending, `limit` default
    /// 500 and at most 2000, `has_more` from one row more than the page, `reset` when `since` is behind the vacuum
    /// horizon (§6).
    static func changes(
        store: DeltaStore, entity: String, parameters: [String: String], fault: DeltaServerFault?
    ) throws -> HTTPResponse {
        guard let since = Int64(parameters["since"] ?? "0"), since >= 0,
              let requested = Int(parameters["limit"] ?? "500"), requested > 0
        else {
            return .jsonError(status: 400, code: "invalid_request", message: "since and limit", retryable: false)
        }
        let limit = min(requested, 2000)
        // Each change as RFC 8785 text, built as octets straight from the stored ones with the stored (canonical)
        // entity spliced in unparsed: members in code-point order `entity`/`id`, `op`, `rev`. `spans` delimits the
        // changes in `text`, so the rev faults can repeat or reorder whole changes.
        let (stored, horizon) = try store.storedRows(entity: entity, since: since, limit: limit + 1)
        let more = stored.rows.count > limit
        let page = stored.rows.prefix(limit)
        var text: [UInt8] = []
        text.reserveCapacity(stored.octets.count + page.count * 48)
        var spans: [Range<Int>] = []
        spans.reserveCapacity(page.count)
        try stored.octets.withUnsafeBufferPointer { octets in
            for row in page {
                let start = text.count
                if row.deleted {
                    text.append(contentsOf: #"{"id":"#.utf8)
                    let id = UnsafeBufferPointer(rebasing: octets[row.id])
                    guard try CanonicalJSON.appendString(utf8: id, to: &text) else { throw DeltaPageFailure() }
                    text.append(contentsOf: #","op":"delete","rev":"#.utf8)
                } else {
                    text.append(contentsOf: #"{"entity":"#.utf8)
                    text.append(contentsOf: octets[row.data])
                    text.append(contentsOf: #","op":"upsert","rev":"#.utf8)
                }
                text.append(contentsOf: String(row.rev).utf8)
                text.append(UInt8(ascii: "}"))
                spans.append(start..<text.count)
            }
        }
        let last = page.last?.rev ?? since
        if fault == .reset || (since > 0 && since < horizon) {
            return json(.object(JSONObject([
                JSONMember("changes", .array([])), JSONMember("reset", .bool(true)),
                JSONMember("server_time", .string(serverTime())),
            ])))
        }
        if fault == .repeatedRev, spans.count > 1 { spans[1] = spans[0] }
        if fault == .descendingRev { spans.reverse() }
        var body: [UInt8] = []
        body.reserveCapacity(text.count + spans.count + 128)
        body.append(contentsOf: #"{"changes":["#.utf8)
        for (index, span) in spans.enumerated() {
            if index > 0 { body.append(UInt8(ascii: ",")) }
            body.append(contentsOf: text[span])
        }
        body.append(contentsOf: #"],"has_more":"#.utf8)
        body.append(contentsOf: (more ? "true" : "false").utf8)
        body.append(contentsOf: #","next_cursor":""#.utf8)
        body.append(contentsOf: String(last).utf8)
        body.append(contentsOf: #"","server_time":""#.utf8)
        body.append(contentsOf: serverTime().utf8)
        body.append(contentsOf: #""}"#.utf8)
        return .json(body: body)
    }

    /// `GET /v1/list/{entity}?updatedAfter=T&limit=N`, or OData's `$filter=updatedAt gt T&$top=N` (seed 004): a
    /// JSON array of rows after the timestamp, each with `updatedAt` (its revision's timestamp) and `deletedAt`
    /// (that timestamp for a tombstone, else null).
    static func list(store: DeltaStore, entity: String, parameters: [String: String]) throws -> HTTPResponse {
        var since = parameters["updatedAfter"]
        var limit = parameters["limit"].flatMap { Int($0) }
        if let filter = parameters["$filter"] {
            let words = filter.split(separator: " ")
            guard words.count == 3, words[0] == "updatedAt", words[1] == "gt" else {
                return .jsonError(status: 400, code: "invalid_request", message: "$filter", retryable: false)
            }
            since = String(words[2])
        }
        if let top = parameters["$top"] { limit = Int(top) }
        guard let since, let after = DeltaTimestamp.revision(since), let limit, (1...2000).contains(limit) else {
            return .jsonError(status: 400, code: "invalid_request", message: "since and limit", retryable: false)
        }
        let rows = try store.rows(entity: entity, since: after, limit: limit).rows.map { row -> JSONValue in
            let stamp = JSONValue.string(DeltaTimestamp.text(row.rev))
            return .object(JSONObject(row.data.members.filter { $0.key != "updatedAt" && $0.key != "deletedAt" } + [
                JSONMember("updatedAt", stamp), JSONMember("deletedAt", row.deleted ? stamp : .null),
            ]))
        }
        return json(.array(rows))
    }

    static func json(_ value: JSONValue) -> HTTPResponse {
        .json(body: (try? CanonicalJSON.encode(value)) ?? Array("{}".utf8))
    }

    static func serverTime() -> String {
        let formatter = ISO8601DateFormatter()
        return formatter.string(from: Date())
    }
}

/// A stored id that is not UTF-8 (the store never writes one): the page is answered 500.
struct DeltaPageFailure: Error {}

/// The list shape's timestamps: revision `r` is `2026-01-01T00:00:00.000Z` plus `r` milliseconds, so timestamps are
/// as monotonic as revisions and compare as text.
enum DeltaTimestamp {
    static let origin = Date(timeIntervalSince1970: 1_767_225_600)

    static func text(_ rev: Int64) -> String {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        return formatter.string(from: origin.addingTimeInterval(Double(rev) / 1000))
    }

    /// The revision a timestamp stands for (0 before the origin); nil when it is not a timestamp.
    static func revision(_ text: String) -> Int64? {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        guard let date = formatter.date(from: text) ?? ISO8601DateFormatter().date(from: text) else { return nil }
        return max(0, Int64((date.timeIntervalSince(origin) * 1000).rounded()))
    }
}

/// `POST /v1/sync/{entity}` (seed 003 §3): `{"mutations": [{op, client_id, base_rev, entity | id}]}`, applied in
/// order; each answered `{"client_id", "status": "ok", "rev", "id"}` or, when the row moved past `base_rev`,
/// `{"client_id", "status": "conflict", "current_rev", "current_entity"}`. A `client_id` seen before gets its first
/// answer again (idempotent retries).
enum DeltaPush {
    static func apply(store: DeltaStore, entity: String, body: [UInt8]) throws -> HTTPResponse {
        guard let document = (try? StrictJSONParser().parse(body))?.objectValue,
              let mutations = document["mutations"]?.arrayValue
        else { return .jsonError(status: 400, code: "invalid_request", message: "mutations", retryable: false) }
        var results: [JSONValue] = []
        for mutation in mutations {
            guard let object = mutation.objectValue, let clientID = object["client_id"]?.stringValue,
                  let op = object["op"]?.stringValue, op == "upsert" || op == "delete",
                  let baseRev = object["base_rev"]?.numberValue?.exactInt64,
                  let id = op == "upsert" ? object["entity"]?.objectValue?["id"]?.stringValue : object["id"]?.stringValue
            else { return .jsonError(status: 400, code: "invalid_request", message: "mutation", retryable: false) }
            if let previous = try store.pushResult(entity: entity, clientID: clientID),
               let value = try? StrictJSONParser().parse(Array(previous.utf8)) {
                results.append(value)
                continue
            }
            let result: JSONValue
            if let current = try store.row(entity: entity, id: id), current.rev > baseRev {
                result = .object(JSONObject([
                    JSONMember("client_id", .string(clientID)), JSONMember("current_entity", current.deleted
                        ? .null : .object(current.data)),
                    JSONMember("current_rev", .number(JSONNumber(current.rev))), JSONMember("status", .string("conflict")),
                ]))
            } else {
                let rev = try store.write(entity: entity, [(id, op == "upsert" ? object["entity"]?.objectValue : nil)])
                result = .object(JSONObject([
                    JSONMember("client_id", .string(clientID)), JSONMember("id", .string(id)),
                    JSONMember("rev", .number(JSONNumber(rev.first ?? 0))), JSONMember("status", .string("ok")),
                ]))
            }
            _ = try store.pushResult(entity: entity, clientID: clientID, record: try CanonicalJSON.string(result))
            results.append(result)
        }
        return DeltaPages.json(.object(JSONObject([JSONMember("results", .array(results))])))
    }
}
