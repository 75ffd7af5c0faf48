import Foundation
import SynchroProtocol

/// A validated dataset of the reference server: a protocol 3 schema manifest, the scopes its
/// rows belong to, and how to generate those rows (`docs/datasets.md`).
///
/// Loading checks every rule up front, including a trial generation of a few rows per table,
/// so a dataset that loads can be served without a generation-time failure (except for row
/// counts chosen later that leave a type's range, which ``DatasetGenerator`` reports).
public struct Dataset: Sendable {
    /// The `name` member of `dataset.json`.
    public let name: String
    /// The validated manifest; its hash is the computed one when `manifest.json` omits it.
    public let manifest: SchemaManifest
    /// The manifest as served (`schema_definition`): `manifest.json` with `schema_hash` present.
    public let manifestJSON: JSONValue
    /// The scope declarations in file order.
    public let scopeDeclarations: [ScopeDeclaration]
    /// The fixed generation seed.
    public let seed: UInt64
    /// The users per-user tables are generated for, in file order.
    public let users: [String]
    /// One plan per manifest table, in manifest (ascending `table_id`) order.
    let plans: [TablePlan]

    /// Loads and validates `manifest.json` and `dataset.json` in `directory`.
    public init(directory: URL) throws(DatasetError) {
        try self.init(
            manifestBytes: try Self.read(directory.appendingPathComponent(DatasetError.manifestFile)),
            datasetBytes: try Self.read(directory.appendingPathComponent(DatasetError.datasetFile)))
    }

    /// Validates a dataset given as the octets of its two files.
    public init(manifestBytes: [UInt8], datasetBytes: [UInt8]) throws(DatasetError) {
        let (manifest, manifestJSON) = try DatasetLoader.manifest(manifestBytes)
        let loaded = try DatasetLoader(manifest: manifest).load(datasetBytes)
        self.name = loaded.name
        self.manifest = manifest
        self.manifestJSON = manifestJSON
        self.scopeDeclarations = loaded.declarations
        self.seed = loaded.seed
        self.users = loaded.users
        self.plans = loaded.plans
        try DatasetGenerator(dataset: self).trialRun()
    }

    private static func read(_ url: URL) throws(DatasetError) -> [UInt8] {
        do {
            return Array(try Data(contentsOf: url))
        } catch {
            throw DatasetError(.fileUnreadable, file: url.lastPathComponent, at: "")
        }
    }

    // MARK: Scopes

    /// The shared scopes, in ascending UTF-8 order of ID.
    public var sharedScopes: [SharedScope] {
        scopeDeclarations.compactMap { declaration -> SharedScope? in
            if case .shared(let scope) = declaration { return scope }
            return nil
        }.sorted { $0.id.utf8Precedes($1.id) }
    }

    /// The per-user scope families, in file order.
    public var perUserScopes: [PerUserScope] {
        scopeDeclarations.compactMap { declaration -> PerUserScope? in
            if case .perUser(let scope) = declaration { return scope }
            return nil
        }
    }

    /// The IDs of the server-declared portable scopes, ascending by UTF-8 octets: exactly the
    /// scopes a portable seed carries (`spec/integrity.md` §7.1).
    public var portableScopes: [String] {
        sharedScopes.filter(\.portable).map(\.id)
    }

    /// The scopes the server assigns to `user`: every shared scope and the user's private scope
    /// of each per-user family, ascending by UTF-8 octets as scope lists are on the wire.
    public func assignedScopes(forUser user: String) -> [String] {
        let ids = sharedScopes.map(\.id) + perUserScopes.map { $0.scopeID(forUser: user) }
        return ids.sorted { $0.utf8Precedes($1) }
    }

    /// Every scope a complete row of `tableID` belongs to, ascending by UTF-8 octets.
    public func scopes(forTable tableID: String, row: JSONValue) -> [String] {
        scopeDeclarations.flatMap { $0.scopes(forTable: tableID, row: row) }.sorted { $0.utf8Precedes($1) }
    }

    /// True when `tableID` is a per-user table (its rows belong to their owners' scopes).
    public func isPerUserTable(_ tableID: String) -> Bool {
        plan(for: tableID)?.isPerUser ?? false
    }

    /// The tables whose row count the server's `--rows` option replaces, ascending by ID.
    public var rowsOverridableTableIDs: [String] {
        plans.filter { plan in
            if case .fixed(_, true) = plan.rowCount { return true }
            return false
        }.map(\.tableID)
    }

    func plan(for tableID: String) -> TablePlan? {
        plans.first { $0.tableID.exactlyEquals(tableID) }
    }
}
