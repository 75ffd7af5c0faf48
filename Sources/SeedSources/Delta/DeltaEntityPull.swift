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
            while true {
                let query = template.render(since: outcome.cursor, limit: size, cursorField: cursorField)
                let json = try fetcher.get(path: base, query: query, extraHeaders: entity.headers)
                let page: DeltaPage
                do {
                    page = try DeltaPage(
                        listPage: json, since: outcome.cursor, pageSize: size, key: entity.primaryKey,
                        cursorField: cursorField, deletedField: deletedField)
                } catch {
                    throw .page(entity: entity.name, page: outcome.pages + 1, rule: error.name)
                }
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

    private func pullChanges(
        path: String, limit: Int, maxResets: Int, start: Outcome?, events: (DeltaExportEvent) -> Void
    ) throws(DeltaSourceError) -> Outcome {
        var outcome = start ?? Outcome(cursor: "0")
        var since: Int64 = 0
        if let start {
            guard let cursor = Int64(start.cursor), cursor >= 0 else {
                throw .page(entity: entity.name, page: 0, rule: "checkpoint_not_a_revision")
            }
            since = cursor
        } else {
            try write(cursor: "0", serverTime: nil, outcome: outcome, changes: [], page: 0)
        }
        var pagesThisPass = 0
        while true {
            let json = try fetcher.get(path: path, query: "since=\(since)&limit=\(limit)", extraHeaders: entity.headers)
            let page: DeltaPage
            do {
                page = try DeltaPage(changesPage: json, since: since, limit: limit, key: entity.primaryKey)
            } catch {
                throw .page(entity: entity.name, page: pagesThisPass + 1, rule: error.name)
            }
            outcome.pages += 1
            pagesThisPass += 1
            if page.reset {
                guard outcome.resets < maxResets else {
                    throw .page(entity: entity.name, page: pagesThisPass, rule: "reset_limit_exceeded")
                }
                outcome.resets += 1
                outcome.cursor = "0"
                outcome.serverTime = page.serverTime
                since = 0
                pagesThisPass = 0
                try write(cursor: "0", serverTime: page.serverTime, outcome: outcome, changes: [], page: 0, wipe: true)
                events(.reset(entity: entity.name))
                continue
            }
            outcome.cursor = page.cursor
            outcome.serverTime = page.serverTime ?? outcome.serverTime
            since = Int64(page.cursor) ?? since
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
                try storage { () throws(SQLiteError) in try connection.cachedStatement(upsert).run(values) }
            case .delete(let id):
                let value: SQLiteValue
                do {
                    value = try DeltaColumnCodec.sqliteValue(id, column: key)
                } catch {
                    throw .page(entity: entity.name, page: page, rule: "type_mismatch:\(key.name)")
                }
                try storage { () throws(SQLiteError) in try connection.cachedStatement(delete).run([value]) }
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
