import Foundation
import Synchronization
import SynchroProtocol
import SynchroServer

/// A delta-sync API on a free loopback port for tests (real HTTP through the project's server): seed 003's pull
/// endpoint for `articles` (`GET /v1/sync/articles?since=&limit=`, monotonic `rev`, soft deletes, a vacuum horizon
/// that answers `reset`) and seed 004's list shape for `users` (`GET /users?<template>`: the fixture understands
/// `updatedAfter={since}&limit={limit}` and OData's `$filter=updatedAt gt {since}&$top={limit}`), a bearer
/// credential and a required tenant header, and scripted faults.
public final class DeltaFixtureServer: @unchecked Sendable {
    public static let token = "secret-delta-token"
    public static let tenant = "acme"

    /// A scripted answer replacing the normal one for the next matching request.
    public enum Fault: Sendable {
        /// `status` with an optional `Retry-After` value.
        case status(Int, retryAfter: String?)
        /// `{changes: [], reset: true}` (articles only).
        case reset
        /// The normal page with its second change's `rev` equal to the first's (articles only).
        case repeatedRev
        /// The normal page with its changes in descending `rev` order (articles only).
        case descendingRev
        /// `{changes: [], has_more: true}`.
        case hasMoreOnEmptyPage
        /// A page of `limit + 1` changes or rows.
        case overLimit
        /// The normal page with `next_cursor` equal to `since` (articles) or every row's cursor equal to `since`.
        case stuckCursor
        /// A body that is not JSON.
        case malformed
        /// The normal page with one upsert missing its key.
        case rowWithoutKey
    }

    struct Row {
        var id: String
        var rev: Int64
        var data: JSONObject
        var deleted: Bool
    }

    struct State {
        var articles: [String: Row] = [:]
        var articleRev: Int64 = 0
        var horizon: Int64 = 0
        var users: [String: Row] = [:]
        var userClock: Int64 = 0
        var faults: [(entity: String, fault: Fault)] = []
        /// Called before each normal page is answered (writes landing while an export runs).
        var beforePage: (@Sendable (DeltaFixtureServer, String) -> Void)?
        var queries: [String] = []
        var headers: [HTTPHeaders] = []
    }

    private let state = Mutex(State())
    private let server: HTTPServer
    public let baseURL: String

    public init() throws {
        let box = WeakBox()
        server = HTTPServer(handler: HTTPClosureHandler { request in
            box.server?.answer(request) ?? HTTPResponse(status: 503)
        })
        let port = try server.start(host: "127.0.0.1", port: 0)
        baseURL = "http://127.0.0.1:\(port)"
        box.server = self
    }

    deinit { server.stop() }

    private final class WeakBox: @unchecked Sendable {
        weak var server: DeltaFixtureServer?
    }

    // MARK: data

    /// Upserts article `id` with `title` under a new revision.
    public func upsertArticle(_ id: String, title: String, words: Int64 = 1) {
        state.withLock { state in
            state.articleRev += 1
            state.articles[id] = Row(id: id, rev: state.articleRev, data: JSONObject([
                JSONMember("id", .string(id)), JSONMember("title", .string(title)),
                JSONMember("words", .number(JSONNumber(words))),
                JSONMember("updated_at", .string(Self.timestamp(state.articleRev))),
                JSONMember("tags", .array([.string("t\(words % 3)")])),
            ]), deleted: false)
        }
    }

    /// Changes article `id`'s title without a new revision: a server bug (a write that bypasses `rev`), which a pull
    /// from a checkpoint cannot see and a pull from zero can — what a rehearsal exists to catch.
    public func rewriteArticleWithoutRevision(_ id: String, title: String) {
        state.withLock { state in
            guard var row = state.articles[id] else { return }
            row.data = JSONObject(row.data.members.map { $0.key == "title" ? JSONMember("title", .string(title)) : $0 })
            state.articles[id] = row
        }
    }

    /// Soft-deletes article `id` under a new revision.
    public func deleteArticle(_ id: String) {
        state.withLock { state in
            guard var row = state.articles[id] else { return }
            state.articleRev += 1
            row.rev = state.articleRev
            row.deleted = true
            state.articles[id] = row
        }
    }

    /// Vacuums tombstones up to the current revision: the next client behind it is told to reset (once: the
    /// fixture cannot tell a pull from zero that has passed its first page from a client that fell behind).
    public func vacuum() {
        state.withLock { state in
            state.horizon = state.articleRev
            state.articles = state.articles.filter { !$0.value.deleted }
        }
    }

    /// Upserts user `id` (seed 004 shape, `updatedAt` moving forward one second per write).
    public func upsertUser(_ id: String, name: String) {
        state.withLock { state in
            state.userClock += 1
            state.users[id] = Row(id: id, rev: state.userClock, data: JSONObject([
                JSONMember("id", .string(id)), JSONMember("name", .string(name)),
                JSONMember("updatedAt", .string(Self.timestamp(state.userClock))), JSONMember("deletedAt", .null),
            ]), deleted: false)
        }
    }

    /// Soft-deletes user `id`: its row carries `deletedAt`.
    public func deleteUser(_ id: String) {
        state.withLock { state in
            guard var row = state.users[id] else { return }
            state.userClock += 1
            row.rev = state.userClock
            row.deleted = true
            state.users[id] = row
        }
    }

    /// Queues `fault` for the next request to `entity` (`articles` or `users`).
    public func inject(_ fault: Fault, for entity: String) {
        state.withLock { $0.faults.append((entity, fault)) }
    }

    public func beforeEachPage(_ hook: @escaping @Sendable (DeltaFixtureServer, String) -> Void) {
        state.withLock { $0.beforePage = hook }
    }

    /// Every query string received, in order.
    public var queries: [String] { state.withLock { $0.queries } }
    /// Every request's header fields, in order.
    public var requestHeaders: [HTTPHeaders] { state.withLock { $0.headers } }

    /// `2026-01-01T00:00:00.000Z` plus `seconds`.
    public static func timestamp(_ seconds: Int64) -> String {
        let date = Date(timeIntervalSince1970: 1_767_225_600 + Double(seconds))
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        return formatter.string(from: date)
    }

    // MARK: answers

    private func answer(_ request: HTTPRequest) -> HTTPResponse {
        let query = request.query ?? ""
        let entity = request.path == "/v1/sync/articles" ? "articles" : request.path == "/users" ? "users" : ""
        let (fault, hook) = state.withLock { state -> (Fault?, (@Sendable (DeltaFixtureServer, String) -> Void)?) in
            state.queries.append(query)
            state.headers.append(request.headers)
            guard let index = state.faults.firstIndex(where: { $0.entity == entity }) else {
                return (nil, state.beforePage)
            }
            return (state.faults.remove(at: index).fault, state.beforePage)
        }
        guard request.method == "GET", !entity.isEmpty else { return HTTPResponse(status: 404) }
        guard request.headers.single("Authorization") == "Bearer " + Self.token else {
            return HTTPResponse(status: 401)
        }
        guard request.headers.single("X-Tenant") == Self.tenant else { return HTTPResponse(status: 403) }
        if case .status(let status, let retryAfter) = fault {
            return HTTPResponse(status: status, headers: retryAfter.map { [("Retry-After", $0)] } ?? [])
        }
        if case .malformed = fault { return json(Array("{\"changes\": [".utf8)) }
        hook?(self, entity)
        let parameters = Self.parameters(query)
        return entity == "articles" ? articlesPage(parameters, fault: fault) : usersPage(parameters, fault: fault)
    }

    private func articlesPage(_ parameters: [String: String], fault: Fault?) -> HTTPResponse {
        let since = Int64(parameters["since"] ?? "0") ?? 0
        let limit = min(Int(parameters["limit"] ?? "500") ?? 500, 2000)
        let (rows, behindHorizon) = state.withLock { state in
            let behind = since > 0 && since < state.horizon
            if behind { state.horizon = 0 }
            return (state.articles.values.filter { $0.rev > since }.sorted { $0.rev < $1.rev }, behind)
        }
        if case .reset = fault { return json(object(["changes": .array([]), "reset": .bool(true)])) }
        if behindHorizon { return json(object(["changes": .array([]), "reset": .bool(true)])) }
        if case .hasMoreOnEmptyPage = fault {
            return json(object(["changes": .array([]), "has_more": .bool(true), "next_cursor": .string("\(since)")]))
        }
        let count = if case .overLimit = fault { limit + 1 } else { limit }
        var page = Array(rows.prefix(count))
        if case .overLimit = fault, page.count <= limit {
            page += Array(repeating: page.last ?? Row(id: "x", rev: since + 1, data: JSONObject([]), deleted: false),
                          count: limit + 1 - page.count)
        }
        var changes: [JSONValue] = page.map { row in
            row.deleted
                ? object(["op": .string("delete"), "rev": .number(JSONNumber(row.rev)), "id": .string(row.id)])
                : object(["op": .string("upsert"), "rev": .number(JSONNumber(row.rev)), "entity": .object(row.data)])
        }
        switch fault {
        case .repeatedRev where changes.count > 1: changes[1] = changes[0]
        case .descendingRev: changes.reverse()
        case .rowWithoutKey where !changes.isEmpty:
            changes[0] = object(["op": .string("upsert"), "rev": .number(JSONNumber(page[0].rev)),
                                 "entity": .object(JSONObject([JSONMember("title", .string("no key"))]))])
        default: break
        }
        let stuck = fault.map { if case .stuckCursor = $0 { true } else { false } } == true
        let next = stuck ? since : (page.last?.rev ?? since)
        return json(object([
            "changes": .array(changes), "next_cursor": .string(String(next)), "has_more": .bool(rows.count > limit),
            "server_time": .string("2026-04-15T09:00:00Z"),
        ]))
    }

    private func usersPage(_ parameters: [String: String], fault: Fault?) -> HTTPResponse {
        var since = parameters["updatedAfter"] ?? ""
        var limit = Int(parameters["limit"] ?? "") ?? 0
        if let filter = parameters["$filter"] {
            let words = filter.split(separator: " ")
            guard words.count == 3, words[0] == "updatedAt", words[1] == "gt" else { return HTTPResponse(status: 400) }
            since = String(words[2])
        }
        if let top = parameters["$top"] { limit = Int(top) ?? 0 }
        guard limit > 0, !since.isEmpty else { return HTTPResponse(status: 400) }
        let rows = state.withLock { state in
            state.users.values.map { row -> (String, Row) in
                var data = row.data
                if row.deleted {
                    data = JSONObject(data.members.filter { $0.key != "deletedAt" }
                        + [JSONMember("deletedAt", .string(Self.timestamp(row.rev)))])
                }
                return (Self.timestamp(row.rev), Row(id: row.id, rev: row.rev, data: data, deleted: row.deleted))
            }.filter { $0.0 > since }.sorted { $0.0 < $1.0 }.map(\.1)
        }
        let count = if case .overLimit = fault { limit + 1 } else { limit }
        var page = rows.prefix(count).map { JSONValue.object($0.data) }
        if case .overLimit = fault { while page.count <= limit { page.append(page.last ?? .object(JSONObject([]))) } }
        if case .stuckCursor = fault {
            page = page.map { row in
                .object(JSONObject((row.objectValue?.members ?? []).filter { $0.key != "updatedAt" }
                    + [JSONMember("updatedAt", .string(since))]))
            }
        }
        if case .rowWithoutKey = fault, !page.isEmpty {
            page[0] = .object(JSONObject([
                JSONMember("name", .string("no key")), JSONMember("updatedAt", .string(since)),
            ]))
        }
        return json(.array(page))
    }

    private func object(_ members: KeyValuePairs<String, JSONValue>) -> JSONValue { .object(JSONObject(members)) }

    private func json(_ value: JSONValue) -> HTTPResponse {
        json((try? CanonicalJSON.encode(value)) ?? [])
    }

    private func json(_ bytes: [UInt8]) -> HTTPResponse {
        HTTPResponse(status: 200, headers: [("Content-Type", "application/json")], body: bytes)
    }

    /// `a=b&c=d`, percent-decoded.
    static func parameters(_ query: String) -> [String: String] {
        var result: [String: String] = [:]
        for pair in query.split(separator: "&") {
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            guard parts.count == 2 else { continue }
            result[String(parts[0]).removingPercentEncoding ?? ""] = String(parts[1]).removingPercentEncoding
        }
        return result
    }
}
