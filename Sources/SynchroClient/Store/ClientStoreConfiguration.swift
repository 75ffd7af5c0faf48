import SynchroStore
/// How a ``ClientStore`` is opened.
public struct ClientStoreConfiguration: Sendable {
    /// The working database file (created when missing).
    public var path: String
    /// The configured client ID. The store uses it for the real-client-ID worst-case measure of atomic groups;
    /// binding it to the database (`client_server_id`) is the sync start's job.
    public var clientID: String
    /// Source of the UUIDs the engine generates itself.
    public var uuids: UUIDSource
    /// Clock of the timestamps the engine writes itself.
    public var clock: ClientClock

    /// A configuration with the random UUID source and the system clock unless given.
    public init(path: String, clientID: String, uuids: UUIDSource = .random, clock: ClientClock = .system) {
        self.path = path
        self.clientID = clientID
        self.uuids = uuids
        self.clock = clock
    }
}
