import SQLiteKit
import SynchroProtocol
import SystemKit

/// Pulls one entity type to its end into the seed being written, as seed 003 §8 and seed 004's session loop
/// describe a client doing it: each page applied in one transaction together with the checkpoint it advances to,
/// deletes removing the row (the seed holds live rows only), and `reset: true` wiping the table and starting again
/// from zero, at most `max_resets` times.
struct DeltaEntityPull {
    let entity: DeltaSourceDefinition.Entity
    let connection: Connection
    let fetcher: DeltaPageFetcher
    /// The crash-test boundary reached after each committed page (`<boundary>.page`, ``CrashPoint``): `export`
    /// for an export, `warm` when bringing an installed database current.
    var boundary = "export"

    /// What the pull did, for the report and the evidence.
    struct Outcome: Sendable {
        var cursor: String
        var serverTime: String?
        var pages = 0
        var resets = 0
    }

    /// Pulls from zero (`start` nil: a new seed) or from a stored checkpoint (`start`: its cursor, server time and
    /// counters; nothing is written before the first page, so the checkpoint stays where it was until a page is
    /// durably applied).
    func run(from start: Outcome? = nil, events: (DeltaExportEvent) -> Void) throws(DeltaSourceError) -> Outcome {
        switch entity.paging {
        case .changes(let path, let limit, let maxResets):
            return try pullChanges(path: path, limit: limit, maxResets: maxResets, start: start, events: events)
        case .list(let base, let template, let cursorField, let deletedField, let size, _, let initial):
            var outcome = start ?? Outcome(cursor: initial)
            if start == nil { try write(cursor: initial, serverTime: nil, outcome: outcome, changes: [], page: 0) }
            let (fetcher, headers, key) = (fetcher, entity.headers, entity.primaryKey)
            let prefetch = DeltaPagePrefetch(
                from: outcome.cursor,
                fetch: { since in
                    let query = template.render(since: since, limit: size, cursorField: cursorField)
                    return Self.read { () throws(DeltaSourceError) in
                        try fetcher.get(path: base, query: query, extraHeaders: headers)
                    } page: { json throws(DeltaPage.Rule) in
                        try DeltaPage(
                            listPage: json, since: since, pageSize: size, key: key, cursorField: cursorField,
                            deletedField: deletedField)
                    }
                },
                following: { page, _ in page.hasMore ? page.cursor : nil })
            defer { prefetch.stop() }
            while true {
                let page = try take(prefetch, page: outcome.pages + 1)
                outcome.pages += 1
                outcome.cursor = page.cursor
                try write(
                    cursor: page.cursor, serverTime: nil, outcome: outcome, changes: page.changes, page: outcome.pages)
                events(.page(entity: entity.name, changes: page.changes.count))
                CrashPoint.reached("\(boundary).page")
                if !page.hasMore { return outcome }
            }
        }
    }

    /// The page `get` answered, read by `page`; a failure of either as the prefetch hands it over.
    private static func read(
        _ get: () throws(DeltaSourceError) -> JSONValue, page: (JSONValue) throws(DeltaPage.Rule) -> DeltaPage
    ) -> DeltaPagePrefetch.Item {
        do throws(DeltaSourceError) {
            let json = try get()
            do throws(DeltaPage.Rule) {
                return .success(try page(json))
            } catch {
                return .failure(.rule(error.name))
            }
        } catch {
            return .failure(.source(error))
        }
    }

    /// The next page from `prefetch`; a broken rule becomes the typed error naming this entity type and `page`.
    private func take(_ prefetch: DeltaPagePrefetch, page: Int) throws(DeltaSourceError) -> DeltaPage {
        switch prefetch.next() {
        case .success(let fetched): return fetched
        case .failure(.source(let error)): throw error
        case .failure(.rule(let rule)): throw .page(entity: entity.name, page: page, rule: rule)
        }
    }

    private func pullChanges(
        path: String, limit: Int, maxResets: Int, start: Outcome?, events: (DeltaExportEvent) -> Void
    ) throws(DeltaSourceError) -> Outcome {
        var outcome = start ?? Outcome(cursor: "0")
        var since: Int64 = 0  // where the first request starts
        if let start {
            guard let cursor = Int64(start.cursor), cursor >= 0 else {
                throw .page(entity: entity.name, page: 0, rule: "checkpoint_not_a_revision")
            }
            since = cursor
        } else {
            try write(cursor: "0", serverTime: nil, outcome: outcome, changes: [], page: 0)
        }
        var pagesThisPass = 0
        let (fetcher, headers, key) = (fetcher, entity.headers, entity.primaryKey)
        let prefetch = DeltaPagePrefetch(
            from: since,
            fetch: { since in
                Self.read { () throws(DeltaSourceError) in
                    try fetcher.get(path: path, query: "since=\(since)&limit=\(limit)", extraHeaders: headers)
                } page: { json throws(DeltaPage.Rule) in
                    try DeltaPage(changesPage: json, since: since, limit: limit, key: key)
                }
            },
            // After a reset the pull starts again from zero; otherwise from the page's cursor.
            following: { page, since in
                page.reset ? 0 : page.hasMore ? (Int64(page.cursor) ?? since) : nil
            })
        defer { prefetch.stop() }
        while true {
            let page = try take(prefetch, page: pagesThisPass + 1)
            outcome.pages += 1
            pagesThisPass += 1
            if page.reset {
                guard outcome.resets < maxResets else {
                    throw .page(entity: entity.name, page: pagesThisPass, rule: "reset_limit_exceeded")
                }
                outcome.resets += 1
                outcome.cursor = "0"
                outcome.serverTime = page.serverTime
                pagesThisPass = 0
                try write(cursor: "0", serverTime: page.serverTime, outcome: outcome, changes: [], page: 0, wipe: true)
                events(.reset(entity: entity.name))
                continue
            }
            outcome.cursor = page.cursor
            outcome.serverTime = page.serverTime ?? outcome.serverTime
            try write(
                cursor: page.cursor, serverTime: outcome.serverTime, outcome: outcome, changes: page.changes,
                page: pagesThisPass)
            events(.page(entity: entity.name, changes: page.changes.count))
            CrashPoint.reached("\(boundary).page")
            if !page.hasMore { return outcome }
        }
    }

    /// Applies one page and its checkpoint in one transaction (a failure rolls both back).
    private func write(
        cursor: String, serverTime: String?, outcome: Outcome, changes: [DeltaPage.Change], page: Int,
        wipe: Bool = false
    ) throws(DeltaSourceError) {
        do {
            try connection.execute("BEGIN IMMEDIATE")
        } catch {
            throw .output(.storage("\(error)"))
        }
        do throws(DeltaSourceError) {
            try apply(changes, page: page, wipe: wipe)
            try storage { () throws(SQLiteError) in
                try connection.run(
                    "INSERT OR REPLACE INTO _delta_checkpoints (entity, cursor, server_time, row_count, digest, pages, "
                        + "resets) VALUES (?, ?, ?, 0, NULL, ?, ?)",
                    [.text(entity.name), .text(cursor), serverTime.map { .text($0) } ?? .null,
                     .integer(Int64(outcome.pages)), .integer(Int64(outcome.resets))])
                try connection.execute("COMMIT")
            }
        } catch {
            try? connection.execute("ROLLBACK")
            throw error
        }
    }

    private var table: String { SQLiteIdentifier.quote(entity.table) }

    private func apply(_ changes: [DeltaPage.Change], page: Int, wipe: Bool) throws(DeltaSourceError) {
        if wipe { try storage { () throws(SQLiteError) in try connection.execute("DELETE FROM \(table)") } }
        guard !changes.isEmpty else { return }
        let names = entity.columns.map { SQLiteIdentifier.quote($0.name) }
        let key = entity.columns[entity.keyIndex]
        let upsert = "INSERT OR REPLACE INTO \(table) (\(names.joined(separator: ", "))) VALUES ("
            + Array(repeating: "?", count: names.count).joined(separator: ", ") + ")"
        let delete = "DELETE FROM \(table) WHERE \(SQLiteIdentifier.quote(key.name)) = ?"
        // Looked up once per page, not per row (the cache hashes the whole statement text).
        var upsertStatement: Statement?
        var deleteStatement: Statement?
        for change in changes {
            switch change {
            case .upsert(let row):
                var values: [SQLiteValue] = []
                values.reserveCapacity(entity.columns.count)
                for column in entity.columns {
                    do {
                        values.append(try DeltaColumnCodec.sqliteValue(row[column.name], column: column))
                    } catch {
                        let rule: String = switch error {
                        case _ where column.name == key.name && error != .type: "row_without_key"
                        case .missing: "missing_value:\(column.name)"
                        case .null: "null_value:\(column.name)"
                        case .type: "type_mismatch:\(column.name)"
                        }
                        throw .page(entity: entity.name, page: page, rule: rule)
                    }
                }
                try storage { () throws(SQLiteError) in
                    if upsertStatement == nil { upsertStatement = try connection.cachedStatement(upsert) }
                    try upsertStatement?.run(values)
                }
            case .delete(let id):
                let value: SQLiteValue
                do {
                    value = try DeltaColumnCodec.sqliteValue(id, column: key)
                } catch {
                    throw .page(entity: entity.name, page: page, rule: "type_mismatch:\(key.name)")
                }
                try storage { () throws(SQLiteError) in
                    if deleteStatement == nil { deleteStatement = try connection.cachedStatement(delete) }
                    try deleteStatement?.run([value])
                }
            }
        }
    }

    private func storage(_ body: () throws(SQLiteError) -> Void) throws(DeltaSourceError) {
        do {
            try body()
        } catch {
            throw .output(.storage("\(error)"))
        }
    }
}

/// Progress of a delta export.
public enum DeltaExportEvent: Sendable {
    /// A page of `entity` was applied with its checkpoint.
    case page(entity: String, changes: Int)
    /// The source answered `reset: true`: `entity` starts again from zero.
    case reset(entity: String)
    /// `entity` is complete.
    case entityDone(entity: String, rows: Int64)
}
