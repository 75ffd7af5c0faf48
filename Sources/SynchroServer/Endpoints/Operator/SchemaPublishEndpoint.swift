import SynchroProtocol

/// `POST /operator/schema`: publish a new manifest version with lineage (`spec/wire-protocol.md` §12).
enum SchemaPublishEndpoint {
    static func handle(_ body: JSONValue, now: Int64, state: inout EngineState) -> Result<EndpointReply, WireError> {
        .failure(WireError(.temporaryUnavailable, "schema publication is not available yet"))
    }
}
