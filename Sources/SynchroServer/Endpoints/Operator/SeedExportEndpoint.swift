import SynchroProtocol

/// `POST /operator/seed/manifest` and `/operator/seed/scope`: portable seed export
/// (`spec/integrity.md` §7.2).
enum SeedExportEndpoint {
    static func manifest(_ body: JSONValue, now: Int64, state: inout EngineState) -> Result<EndpointReply, WireError> {
        .failure(WireError(.temporaryUnavailable, "seed export is not available yet"))
    }

    static func scope(_ body: JSONValue, now: Int64, state: inout EngineState) -> Result<EndpointReply, WireError> {
        .failure(WireError(.temporaryUnavailable, "seed export is not available yet"))
    }
}
