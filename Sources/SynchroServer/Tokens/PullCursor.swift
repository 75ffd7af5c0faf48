import SynchroProtocol

/// What an incremental cursor binds (`spec/wire-protocol.md` §2.8): user, client, generation,
/// scope, schema hash, stream/membership/retention generations and the stream position.
struct PullCursor: Equatable {
    var user: String
    var client: String
    var generation: Int64
    var scope: String
    var schemaHash: String
    var streamGeneration: Int64
    var membershipGeneration: Int64
    var retentionGeneration: Int64
    var position: Int64

    var payload: JSONValue {
        .object(JSONObject([
            JSONMember("kind", .string("pull_cursor")),
            JSONMember("user", .string(user)),
            JSONMember("client", .string(client)),
            JSONMember("generation", .string(String(generation))),
            JSONMember("scope", .string(scope)),
            JSONMember("schema_hash", .string(schemaHash)),
            JSONMember("stream_generation", .string(String(streamGeneration))),
            JSONMember("membership_generation", .string(String(membershipGeneration))),
            JSONMember("retention_generation", .string(String(retentionGeneration))),
            JSONMember("position", .string(String(position))),
        ]))
    }

    /// Reads an authentic payload; nil when its shape is not a pull cursor's.
    init?(payload: JSONObject) {
        func text(_ name: String) -> String? { payload[name]?.stringValue }
        func number(_ name: String) -> Int64? { text(name).flatMap { Int64($0) } }
        guard payload.count == 10, text("kind") == "pull_cursor", let user = text("user"), let client = text("client"),
              let generation = number("generation"), let scope = text("scope"), let hash = text("schema_hash"),
              let stream = number("stream_generation"), let membership = number("membership_generation"),
              let retention = number("retention_generation"), let position = number("position")
        else { return nil }
        self.init(
            user: user, client: client, generation: generation, scope: scope, schemaHash: hash,
            streamGeneration: stream, membershipGeneration: membership, retentionGeneration: retention,
            position: position)
    }

    init(
        user: String, client: String, generation: Int64, scope: String, schemaHash: String, streamGeneration: Int64,
        membershipGeneration: Int64, retentionGeneration: Int64, position: Int64
    ) {
        self.user = user
        self.client = client
        self.generation = generation
        self.scope = scope
        self.schemaHash = schemaHash
        self.streamGeneration = streamGeneration
        self.membershipGeneration = membershipGeneration
        self.retentionGeneration = retentionGeneration
        self.position = position
    }
}
