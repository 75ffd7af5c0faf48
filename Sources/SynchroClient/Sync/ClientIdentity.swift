import SQLiteKit
import SynchroStore
import SynchroProtocol

/// The client identity the engine presents (client contract, "Local database and durable metadata": the
/// registered `client_id` is store state): the bound `client_server_id`, whatever ID the store was opened with,
/// and the identities the store left after a lost first-connect response (`docs/decisions.md`, "A lost
/// first-connect response: the store leaves the identity it never held").
enum ClientIdentity {
    /// The bound client ID, which push, pull and rebuild present; a store without one has never connected.
    static func bound(on connection: Connection) throws -> String {
        guard let clientID = try MetaStore.value(.clientServerID, on: connection), !clientID.isEmpty else {
            throw SyncError.invalidState(reason: "the store is not bound to a client ID")
        }
        return clientID
    }

    /// The ID connect presents: the bound one, or for a store never bound the configured one, which connect binds
    /// before it sends anything.
    static func presented(on connection: Connection, configured: String) throws -> String {
        guard let clientID = try MetaStore.value(.clientServerID, on: connection), !clientID.isEmpty else {
            return configured
        }
        return clientID
    }

    /// The client IDs this store left, oldest first.
    static func replaced(on connection: Connection) throws -> [String] {
        guard let text = try MetaStore.value(.replacedClientIDs, on: connection) else { return [] }
        guard let ids = try StrictJSONParser().parse(Array(text.utf8)).arrayValue?.compactMap(\.stringValue) else {
            throw SyncError.invalidState(reason: "the replaced client IDs are not a JSON array")
        }
        return ids
    }

    /// Leaves the bound identity for `newID` when the store never held it: no connect was ever installed
    /// (generation 0), so no batch was ever sealed and no mutation identity ever reached a server under it. In one
    /// transaction: the left ID is appended to the replaced IDs, `newID` is bound, and the durable retry record —
    /// whose work identity is the refused connect — is retired. Every authored mutation, its ID and the queue stay
    /// as they are. Returns the left ID, or nil when the store is not eligible (and nothing changed).
    static func leaveUnheld(for newID: String, in store: ClientStore) throws(SyncError) -> String? {
        try store.applySync { connection -> String? in
            guard let left = try MetaStore.value(.clientServerID, on: connection), !left.isEmpty,
                  !left.exactlyEquals(newID),
                  try MetaStore.integer(.clientGeneration, on: connection) == 0,
                  try connection.scalar("SELECT count(*) FROM _synchro_push_batches")?.integerValue == 0
            else { return nil }
            let replaced = try Self.replaced(on: connection) + [left]
            let text = try CanonicalJSON.string(.array(replaced.map(JSONValue.string)))
            try MetaStore.set(.replacedClientIDs, text, on: connection)
            try MetaStore.set(.clientServerID, newID, on: connection)
            try connection.run("DELETE FROM _synchro_backoff")
            return left
        }
    }
}
