import SynchroProtocol

/// What a rebuild continuation binds (`spec/wire-protocol.md` §2.8, `spec/integrity.md` §6.2):
/// the session, its rebuild ID, user, client, scope, generation, schema hash, lineage generations,
/// snapshot boundary, the ordinal of the next page's first record, the page limit, the accepted-write
/// epoch and the session's expiry. Signed with the continuation key (`r3.` tokens), so a pull
/// cursor never verifies as a continuation or the other way round.
struct RebuildContinuation: Equatable {
    var sessionID: Int64
    var rebuildID: String
    var user: String
    var client: String
    var scope: String
    var generation: Int64
    var schemaHash: String
    var generations: StreamGenerations
    var boundary: Int64
    var ordinal: Int64
    var limit: Int64
    var epoch: Int64
    /// Microseconds since the epoch at which the session stops serving pages.
    var expiry: Int64

    init(session: RebuildSession, ordinal: Int64) {
        sessionID = session.id
        rebuildID = session.rebuildID
        user = session.userID
        client = session.clientID
        scope = session.scope
        generation = session.generation
        schemaHash = session.schemaHash
        generations = session.generations
        boundary = session.boundary
        self.ordinal = ordinal
        limit = session.limit
        epoch = session.epoch
        expiry = session.expiry
    }

    var payload: JSONValue {
        func decimal(_ value: Int64) -> JSONValue { .string(String(value)) }
        return .object(JSONObject([
            JSONMember("kind", .string("rebuild_continuation")),
            JSONMember("session", decimal(sessionID)),
            JSONMember("rebuild_id", .string(rebuildID)),
            JSONMember("user", .string(user)),
            JSONMember("client", .string(client)),
            JSONMember("scope", .string(scope)),
            JSONMember("generation", decimal(generation)),
            JSONMember("schema_hash", .string(schemaHash)),
            JSONMember("stream_generation", decimal(generations.stream)),
            JSONMember("membership_generation", decimal(generations.membership)),
            JSONMember("retention_generation", decimal(generations.retention)),
            JSONMember("boundary", decimal(boundary)),
            JSONMember("ordinal", decimal(ordinal)),
            JSONMember("limit", decimal(limit)),
            JSONMember("epoch", decimal(epoch)),
            JSONMember("expiry", decimal(expiry)),
        ]))
    }

    /// Reads an authentic payload; nil when its shape is not a continuation's.
    init?(payload: JSONObject) {
        func text(_ name: String) -> String? { payload[name]?.stringValue }
        func number(_ name: String) -> Int64? { text(name).flatMap { Int64($0) } }
        guard payload.count == 16, text("kind")?.exactlyEquals("rebuild_continuation") == true,
              let session = number("session"), let rebuildID = text("rebuild_id"), let user = text("user"),
              let client = text("client"), let scope = text("scope"), let generation = number("generation"),
              let hash = text("schema_hash"),
              let stream = number("stream_generation"), let membership = number("membership_generation"),
              let retention = number("retention_generation"), let boundary = number("boundary"),
              let ordinal = number("ordinal"), let limit = number("limit"), let epoch = number("epoch"),
              let expiry = number("expiry")
        else { return nil }
        sessionID = session
        self.rebuildID = rebuildID
        self.user = user
        self.client = client
        self.scope = scope
        self.generation = generation
        schemaHash = hash
        generations = StreamGenerations(stream: stream, membership: membership, retention: retention)
        self.boundary = boundary
        self.ordinal = ordinal
        self.limit = limit
        self.epoch = epoch
        self.expiry = expiry
    }
}
