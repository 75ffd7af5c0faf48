import SQLiteKit
import SynchroProtocol

/// A registered client installation of one user (`spec/wire-protocol.md` §2.4, §3.5).
struct ClientRecord {
    let userID: String
    let clientID: String
    var generation: Int64
    /// The schema version the client has installed, as far as the server knows (the version its last supported
    /// connect was answered with).
    var schemaVersion: Int64
    var scopeSetVersion: Int64
    /// The assigned scope set, in byte order.
    var assigned: [String]
    var retired: Bool
    /// Incremented by every push that applied a write; rebuild sessions bind it.
    var acceptedWriteEpoch: Int64
    /// The capture LSN of the client's latest accepted write; pull/rebuild wait for it (capture_pending).
    var pendingFenceLSN: Int64
    var lastActivity: Int64
    /// Set by fault injection or the stale interval: the next push/pull/rebuild gets 409.
    var generationExpired: Bool { false }

    static func load(user: String, client: String, from db: any StoreExecutor) throws -> ClientRecord? {
        let rows = try db.cachedStatement("""
            SELECT generation, schema_version, scope_set_version, assigned, retired, accepted_write_epoch,
                   pending_fence_lsn, last_activity_us
            FROM clients WHERE user_id = ? AND client_id = ?
            """).rows([.text(user), .text(client)])
        guard let row = rows.first else { return nil }
        let assignedJSON = try StrictJSONParser().parse(Array((row[3].textValue ?? "[]").utf8))
        return ClientRecord(
            userID: user, clientID: client, generation: row[0].integerValue ?? 0,
            schemaVersion: row[1].integerValue ?? 0, scopeSetVersion: row[2].integerValue ?? 0,
            assigned: assignedJSON.arrayValue?.compactMap(\.stringValue) ?? [],
            retired: row[4].integerValue == 1, acceptedWriteEpoch: row[5].integerValue ?? 0,
            pendingFenceLSN: row[6].integerValue ?? 0, lastActivity: row[7].integerValue ?? 0)
    }

    func save(to db: any StoreExecutor) throws {
        let assignedText = String(decoding: try CanonicalJSON.encode(.array(assigned.map(JSONValue.string))), as: UTF8.self)
        try db.cachedStatement("""
            INSERT OR REPLACE INTO clients(user_id, client_id, generation, schema_version, scope_set_version, assigned,
                retired, accepted_write_epoch, pending_fence_lsn, last_activity_us)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
            """).run([
                .text(userID), .text(clientID), .integer(generation), .integer(schemaVersion),
                .integer(scopeSetVersion), .text(assignedText), .integer(retired ? 1 : 0),
                .integer(acceptedWriteEpoch), .integer(pendingFenceLSN), .integer(lastActivity),
            ])
    }

    /// The user a client ID is bound to, if any: a client ID belongs to one user forever.
    static func boundUser(of client: String, in db: any StoreExecutor) throws -> String? {
        try db.cachedStatement("SELECT user_id FROM client_bindings WHERE client_id = ?").scalar([.text(client)])?.textValue
    }

    static func bind(client: String, to user: String, in db: any StoreExecutor) throws {
        try db.cachedStatement("INSERT OR IGNORE INTO client_bindings(client_id, user_id) VALUES (?, ?)")
            .run([.text(client), .text(user)])
    }
}

extension Array where Element == String {
    /// Sorted by unsigned UTF-8 octets, the order of every scope list on the wire.
    func byteOrdered() -> [String] { sorted { $0.utf8Precedes($1) } }
}
