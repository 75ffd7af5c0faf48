import SQLiteKit
import SynchroStore

/// One retained rejection (`_synchro_rejected_mutations`, `spec/client-store.md` §4.8), as
/// ``SynchroDatabase/inspectRejectedMutationRecords()`` returns it: a current record carries the exact authored
/// mutation JSON and the exact rejection JSON; a legacy record (from the rejection table that predates the
/// mutation ledger) carries neither, and nothing is filled in for them.
public struct RejectedMutationRecord: Sendable, Equatable {
    /// What the record holds beyond its identity.
    public enum Payload: Sendable, Equatable {
        /// The exact authored mutation and the exact rejection object, as JSON text.
        case current(mutationJSON: String, rejectionJSON: String)
        /// A pre-ledger record: only the fields the old table stored.
        case legacy
    }

    /// The rejected mutation's stable ID.
    public let mutationID: String
    /// The local table it wrote.
    public let tableName: String
    /// Its primary key as text.
    public let recordID: String
    /// `conflict` or `rejected_terminal`.
    public let status: String
    /// The server's code (`version_conflict`, `schema_incompatible`, …).
    public let code: String
    /// The server's message, when it sent one.
    public let message: String?
    /// When the rejection was recorded.
    public let createdAt: String
    /// The current or legacy payload.
    public let payload: Payload
}

/// Reads and the explicit clearing policy of retained rejections.
enum RejectedMutationStore {
    static func all(on connection: Connection) throws -> [RejectedMutationRecord] {
        let rows = try connection.rows("""
            SELECT mutation_id, table_name, record_id, status, code, message, created_at, mutation_json, rejected_json
            FROM _synchro_rejected_mutations ORDER BY created_at, mutation_id
            """)
        return try rows.map { row in
            let mutationID = row[0].textValue ?? ""
            let payload: RejectedMutationRecord.Payload
            switch (row[7].textValue, row[8].textValue) {
            case (let mutation?, let rejection?): payload = .current(mutationJSON: mutation, rejectionJSON: rejection)
            case (nil, nil): payload = .legacy
            default: throw SynchroDatabaseError.inconsistentRecord(mutationID: mutationID, rule: "partial_json")
            }
            return RejectedMutationRecord(
                mutationID: mutationID, tableName: row[1].textValue ?? "", recordID: row[2].textValue ?? "",
                status: row[3].textValue ?? "", code: row[4].textValue ?? "", message: row[5].textValue,
                createdAt: row[6].textValue ?? "", payload: payload)
        }
    }

    /// Deletes the retained rejections named (all when nil) and returns how many went. The ledger entries stay:
    /// the ledger is append-only, so ``SynchroDatabase/inspectRetainedMutationRecords()`` still lists them.
    static func clear(_ mutationIDs: [String]?, on connection: Connection) throws -> Int {
        guard let mutationIDs else {
            try connection.run("DELETE FROM _synchro_rejected_mutations")
            return connection.changes
        }
        var cleared = 0
        for id in mutationIDs {
            try connection.run("DELETE FROM _synchro_rejected_mutations WHERE mutation_id = ?", [.text(id)])
            cleared += connection.changes
        }
        return cleared
    }
}

extension ClientStore {
    /// The explicit policy that clears retained rejections (client contract, "Public native SDK surface"): the
    /// named ones, or all when `mutationIDs` is nil; returns how many were cleared. The ledger keeps its entries
    /// (it is append-only). A cleared `rejected_terminal` record no longer protects its row
    /// (`spec/client-store.md` §9): the next pull or rebuild may bring the row back to the server's state.
    @discardableResult
    public func clearRejectedMutationRecords(_ mutationIDs: [String]? = nil) throws(ClientStoreError) -> Int {
        do {
            return try serverApply { transaction in
                try RejectedMutationStore.clear(mutationIDs, on: transaction.connection)
            }
        } catch let error as ClientStoreError {
            throw error
        } catch let error as SQLiteError {
            throw .sqlite(error)
        } catch {
            throw .closed
        }
    }
}
