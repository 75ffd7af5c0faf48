import SQLiteKit
import SynchroStore
import SynchroProtocol

/// The online half of ``StoreValidator``: one pull request built from the stored cursors, whose validated
/// response is compared with the stored checksums and never applied.
enum ServerComparisonRequest {
    /// What the comparison needs from the snapshot: the request and the manifest its page is validated under.
    struct Prepared {
        let request: PullRequest
        let manifest: ClientManifest
        /// The stored verified checksum of each scope that has one.
        let checksums: [String: Checksum]
    }

    /// Builds the request from the stored state; nil (with a finding added by `compare`) when the store has
    /// never connected or its metadata is unusable.
    static func build(on connection: Connection, validation: StoreValidation) throws -> Prepared? {
        guard validation.isValid,
              let clientID = try MetaStore.value(.clientServerID, on: connection), !clientID.isEmpty,
              let manifest = try? LocalRows.activeManifest(on: connection),
              let request = try? PullApplier.request(on: connection, limit: ExactObjectReader.pageLimit.upperBound)
        else { return nil }
        let stored = try connection.query(
            "SELECT scope_id, checksum FROM _synchro_scopes WHERE checksum IS NOT NULL"
        ) { (try $0.text(at: 0), try $0.text(at: 1)) }
        var checksums: [String: Checksum] = [:]
        for (scope, text) in stored {
            checksums[scope] = try? Checksum(json: StrictJSONParser().parse(Array(text.utf8)))
        }
        return Prepared(request: request, manifest: manifest, checksums: checksums)
    }

    /// Sends the request and records each scope's comparison in `validation`.
    static func compare(
        _ validation: StoreValidation, request: Prepared?, transport: any SyncTransport
    ) -> StoreValidation {
        var result = validation
        for index in result.scopes.indices { result.scopes[index].server = .notCompared }
        guard let request else {
            // Damage found offline makes the comparison meaningless; only an unconnected store is reported.
            if validation.isValid { result.findings.append(.serverComparisonFailed(rule: "not_connected")) }
            return result
        }
        let page: PullPage
        do {
            let body = try SyncExchange.mapping { try CanonicalJSON.encode(request.request.json) }
            let (json, _) = try SyncExchange.post(transport, path: "/sync/pull", body: body)
            page = try PullPage(
                json: json, localScopes: Set(request.request.scopes.entries.map(\.scopeID)),
                manifest: request.manifest.manifest)
        } catch {
            if case .transport(let failure) = error {
                result.findings.append(.serverComparisonFailed(rule: failure.rule, detail: failure.message))
            } else {
                result.findings.append(.serverComparisonFailed(rule: error.rule))
            }
            return result
        }
        let changed = Set(page.changes.map(\.scope))
        for index in result.scopes.indices {
            let scope = result.scopes[index]
            let comparison = Self.comparison(
                of: scope, stored: request.checksums[scope.scopeID], page: page, changed: changed)
            result.scopes[index].server = comparison
            if comparison == .mismatch { result.findings.append(.serverChecksumMismatch(scope: scope.scopeID)) }
        }
        result.newlyAssignedScopes = page.added.sorted { $0.utf8Precedes($1) }
        return result
    }

    private static func comparison(
        of scope: StoreValidation.Scope, stored: Checksum?, page: PullPage, changed: Set<String>
    ) -> StoreValidation.ServerComparison {
        if page.removed.contains(scope.scopeID) { return .unassigned }
        if page.rebuild.contains(scope.scopeID) { return .rebuildRequested }
        if changed.contains(scope.scopeID) { return .behind }
        guard scope.hasCursor, let stored, let server = page.checksums?[scope.scopeID] else { return .notCompared }
        // The stored checksum equals the one recomputed from the rows (the offline checks passed).
        return server == stored ? .matches : .mismatch
    }
}
