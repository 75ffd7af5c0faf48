import SQLiteKit
import SynchroProtocol

/// `POST /operator/schema`: publish the next manifest of the lineage and activate it
/// (`spec/wire-protocol.md` §7, §12; the request, the rules and the answer are in `docs/server.md`).
///
/// The engine has already checked the operator credential, the media type and strict JSON. Here:
/// validation (``SchemaPublication``), then activation in one transaction (``SchemaActivation``),
/// then the engine state moves to the new manifest. From then on push, pull and rebuild presenting
/// the old reference get 422 `schema_mismatch`, and connect dispatches the old reference by the
/// stored transition classes (``SchemaDispatch``). Posting exactly the request that published the
/// current manifest again returns its original answer, so an operator may retry a lost response.
enum SchemaPublishEndpoint {
    static func handle(_ body: JSONValue, now: Int64, state: inout EngineState) -> Result<EndpointReply, WireError> {
        do {
            return .success(try publish(body, state: &state))
        } catch let error as SchemaPublicationError {
            return .failure(error.wire)
        } catch {
            return .failure(WireError.from(error))
        }
    }

    private static func publish(_ body: JSONValue, state: inout EngineState) throws -> EndpointReply {
        let request = try SchemaPublication.Body(body)
        let manifest = try SchemaPublication.manifest(of: request)
        let current = state.manifest
        let requestBytes = try CanonicalJSON.encode(body)
        if manifest.schemaHash.exactlyEquals(current.schemaHash) {
            return try replay(requestBytes, version: current.schemaVersion, store: state.store)
        }
        let publication = try SchemaPublication(
            body: request, manifest: manifest, current: current, dataset: state.dataset, store: state.store)
        let response = try CanonicalJSON.encode(answer(publication))
        var activation = SchemaActivation(publication: publication, current: current, store: state.store)
        try activation.run(request: requestBytes, response: response, current: current)
        state.manifest = manifest
        // Cached digests are keyed by schema hash already; dropping them frees the old schema's.
        state.scopeDigests = ScopeDigestCache()
        return EndpointReply(body: response)
    }

    /// The same request again gets the stored answer; anything else naming the current manifest
    /// would reuse its version and hash.
    private static func replay(_ request: [UInt8], version: Int64, store: ServerStore) throws -> EndpointReply {
        guard let stored = try store.meta(SchemaActivation.requestKey(version))?.blobValue, stored == request,
              let response = try store.meta(SchemaActivation.responseKey(version))?.blobValue
        else { throw SchemaPublicationError("schema_reused") }
        return EndpointReply(body: response)
    }

    /// `{"schema": {version, hash}, "parent_schema", "transition_class", "affected_scopes", "changes"}`.
    private static func answer(_ publication: SchemaPublication) -> JSONValue {
        let manifest = publication.manifest
        return .object(JSONObject([
            JSONMember("schema", manifest.reference.json),
            JSONMember("parent_schema", manifest.parentSchema?.json ?? .null),
            JSONMember("transition_class", .string(manifest.transitionClass.rawValue)),
            JSONMember("affected_scopes", .array(publication.affectedScopes.map(JSONValue.string))),
            JSONMember("changes", .array(publication.transition.changes.map(\.json))),
        ]))
    }
}
