import Foundation
import SeedArtifacts
import SeedSources
import SynchroProtocol
import SynchroServer

extension PipelineDefinition {
    /// The members of the document, of `source`, and of each nested object (docs/pipelines.md lists them).
    static let rootMembers = ["name", "source", "scopes", "page_limit", "pack", "rehearsal", "publish", "steps", "sign"]
    static let embeddedMembers = ["dataset", "rows"]
    static let serverMembers = ["url", "operator_token_env", "user_token_env"]
    static let postgresqlMembers = ["connection", "server_url", "user_token_env"]
    static let deltaMembers = ["definition", "base_url"]
    static let packMembers = ["level"]
    static let rehearsalMembers = ["user", "rebuild_compare", "app_version"]
    static let publishMembers = ["directory"]
    static let signMembers = ["key_file", "key_env"]

    /// Loads and validates the pipeline file at `file` with `overrides` applied (``PipelineOverride``); relative paths
    /// in it are resolved against its directory and credentials are read from `environment`.
    public static func load(
        file: String, environment: [String: String] = ProcessInfo.processInfo.environment,
        overrides: [PipelineOverride] = []
    ) throws(PipelineDefinitionError) -> PipelineDefinition {
        let url = URL(fileURLWithPath: file).standardizedFileURL
        guard let data = FileManager.default.contents(atPath: url.path) else {
            throw .unreadableFile(path: file)
        }
        var definition = try PipelineDefinition(
            bytes: Array(data), baseDirectory: url.deletingLastPathComponent().path, environment: environment,
            defaultName: url.deletingPathExtension().lastPathComponent, overrides: overrides)
        definition.file = (url.lastPathComponent, Hex.encode(SHA256.hash(Array(data))))
        return definition
    }

    /// Validates a pipeline document given as bytes; relative paths are resolved against `baseDirectory`.
    public init(
        bytes: [UInt8], baseDirectory: String, environment: [String: String],
        defaultName: String = "pipeline", overrides: [PipelineOverride] = []
    ) throws(PipelineDefinitionError) {
        var json: JSONValue
        do {
            json = try StrictJSONParser(limits: JSONLimits(maxBytes: 1 << 20, maxDepth: 16)).parse(bytes)
        } catch {
            throw .malformedJSON(error)
        }
        for override in overrides { json = try override.apply(to: json) }
        let root = try PipelineMemberReader(json, path: "", allowed: Self.rootMembers)
        let base = URL(fileURLWithPath: baseDirectory).standardizedFileURL.path
        // The steps first, because which credentials and members are required depends on them; then the required
        // members, then the optional ones. A document with several errors reports the first in this order.
        let steps = try Self.steps(root, signs: root.has("sign"))
        let signingKey = try Self.signingKey(
            root, base: base, environment: environment, signs: steps.contains(.sign))
        let source = try Self.source(root, base: base, environment: environment, rehearses: steps.contains(.rehearse))
        if case .delta = source { try Self.refuseSynchroOnlyMembers(root) }
        let publishDirectory = try Self.publishDirectory(root, base: base)
        let name = try root.string("name") ?? defaultName
        let scopes = try root.stringList("scopes")
        let pageLimit = try root.integer("page_limit", in: 1...1000) ?? 1000
        let packLevel = try Self.packLevel(root)
        let rehearsal = try Self.rehearsal(root, source: source, rehearses: steps.contains(.rehearse))
        self.init(
            name: name, baseDirectory: base, source: source, scopes: scopes, pageLimit: pageLimit,
            packLevel: Int32(packLevel), rehearsal: rehearsal, publishDirectory: publishDirectory, steps: steps,
            signingKey: signingKey)
    }

    /// The members that shape a Synchro export and its protocol rehearsal, refused by name with a delta source
    /// (docs/decisions.md, "Delta pipelines: scopes, page_limit and rehearsal are refused"): a delta API has no
    /// scopes, its page sizes are the definition's own (`paging.limit`, `pageSize`), and the delta rehearsal has no
    /// user, app version or rebuild to configure. Accepting them would let a file say something the run ignores.
    static let synchroOnlyMembers = ["scopes", "page_limit", "rehearsal"]

    private static func refuseSynchroOnlyMembers(_ root: PipelineMemberReader) throws(PipelineDefinitionError) {
        for name in synchroOnlyMembers where root.has(name) {
            let reason = switch name {
            case "scopes": "does not apply to a delta source: it exports every entity type of its definition"
            case "page_limit":
                "does not apply to a delta source: page sizes are the definition's (paging.limit, pageSize)"
            default:
                "does not apply to a delta source: its rehearsal warms the seed from its checkpoints and compares "
                    + "with a full pull, with nothing to configure"
            }
            throw .invalidValue(member: name, reason: reason)
        }
    }

    private static func publishDirectory(
        _ root: PipelineMemberReader, base: String
    ) throws(PipelineDefinitionError) -> String {
        guard let publish = try root.child("publish", allowed: Self.publishMembers) else {
            throw .missingMember(member: "publish")
        }
        guard let directory = try publish.string("directory") else {
            throw .missingMember(member: publish.member("directory"))
        }
        let resolved = Self.resolve(directory, base: base)
        // The directory is replaced as a whole on every publication.
        guard resolved != "/", !(base + "/").hasPrefix(resolved + "/") else {
            throw .invalidValue(
                member: publish.member("directory"),
                reason: "must not be the root, the pipeline file's directory or one of its parents")
        }
        return resolved
    }

    // MARK: - Members

    /// The listed steps; without a list, every step, `sign` only when the file has a `sign` member.
    private static func steps(
        _ root: PipelineMemberReader, signs: Bool
    ) throws(PipelineDefinitionError) -> [PipelineStep] {
        guard let names = try root.stringList("steps") else {
            return PipelineStep.allCases.filter { signs || $0 != .sign }
        }
        var steps: [PipelineStep] = []
        for (index, name) in names.enumerated() {
            guard let step = PipelineStep(rawValue: name) else {
                throw .invalidValue(
                    member: "steps[\(index)]",
                    reason: "must be one of \(PipelineStep.allCases.map(\.rawValue).joined(separator: ", "))")
            }
            steps.append(step)
        }
        for step in steps.sorted() {
            if let needed = step.requires, !steps.contains(needed) {
                throw .stepRequires(member: "steps", step: step, requires: needed)
            }
        }
        return steps.sorted()
    }

    private static func source(
        _ root: PipelineMemberReader, base: String, environment: [String: String], rehearses: Bool
    ) throws(PipelineDefinitionError) -> PipelineSource {
        let kinds = ["embedded", "server", "postgresql", "delta"]
        let source = try PipelineMemberReader(root.required("source"), path: "source", allowed: kinds)
        let present = kinds.filter { source.has($0) }
        guard present.count < 2 else { throw .conflictingMembers(member: "source", names: present) }
        switch present.first {
        case nil:
            throw .invalidValue(
                member: "source", reason: "must have one member, embedded, server, postgresql or delta")
        case "delta"?:
            return try delta(source, base: base, environment: environment)
        case "postgresql"?:
            return try postgresql(source, environment: environment, rehearses: rehearses)
        case "embedded"?:
            let embedded = try source.child("embedded", allowed: Self.embeddedMembers)!
            guard let dataset = try embedded.string("dataset") else {
                throw .missingMember(member: embedded.member("dataset"))
            }
            let rows = try embedded.integer("rows", in: 0...Int64(DatasetGenerator.maxRowCount))
            return .embedded(dataset: resolve(dataset, base: base), rows: rows.map { Int($0) })
        default:
            let server = try source.child("server", allowed: Self.serverMembers)!
            guard let url = try server.string("url") else { throw .missingMember(member: server.member("url")) }
            let operatorToken = try credential(server, "operator_token_env", environment: environment, needed: true)!
            let userToken = try credential(server, "user_token_env", environment: environment, needed: rehearses)
            return .server(PipelineServerSource(
                url: try serverURL(url, member: server.member("url")), operatorToken: operatorToken,
                userToken: userToken))
        }
    }

    /// Exactly one of `sign.key_file` (resolved against the file's directory) or `sign.key_env`, required when the
    /// pipeline signs. The variable is read only then.
    private static func signingKey(
        _ root: PipelineMemberReader, base: String, environment: [String: String], signs: Bool
    ) throws(PipelineDefinitionError) -> PipelineSigningKey? {
        guard let sign = try root.child("sign", allowed: Self.signMembers) else {
            if signs { throw .missingMember(member: "sign") }
            return nil
        }
        switch (sign.has("key_file"), sign.has("key_env")) {
        case (true, true): throw .conflictingMembers(member: "sign", names: ["key_file", "key_env"])
        case (false, false): throw .invalidValue(member: "sign", reason: "must have one member, key_file or key_env")
        case (true, false):
            guard let path = try sign.string("key_file") else { throw .missingMember(member: sign.member("key_file")) }
            return signs ? .file(resolve(path, base: base)) : nil
        case (false, true):
            return try credential(sign, "key_env", environment: environment, needed: signs)
                .map(PipelineSigningKey.environment)
        }
    }

    private static func postgresql(
        _ source: PipelineMemberReader, environment: [String: String], rehearses: Bool
    ) throws(PipelineDefinitionError) -> PipelineSource {
        let postgresql = try source.child("postgresql", allowed: Self.postgresqlMembers)!
        guard let connection = try postgresql.string("connection") else {
            throw .missingMember(member: postgresql.member("connection"))
        }
        switch PostgresExportSource.containsPassword(connection) {
        case nil:
            throw .invalidValue(
                member: postgresql.member("connection"), reason: "must be a libpq URI or key=value list")
        case true?:
            throw .invalidValue(
                member: postgresql.member("connection"),
                reason: "must not carry a password; libpq reads it from PGPASSWORD or ~/.pgpass")
        case false?:
            break
        }
        var serverURL: String?
        if rehearses {
            guard let url = try postgresql.string("server_url") else {
                throw .missingMember(member: postgresql.member("server_url"))
            }
            serverURL = try Self.serverURL(url, member: postgresql.member("server_url"))
        }
        let userToken = try credential(postgresql, "user_token_env", environment: environment, needed: rehearses)
        return .postgresql(PipelinePostgresSource(connection: connection, serverURL: serverURL, userToken: userToken))
    }

    /// `source.delta.definition`: the delta source definition file, read and validated now, so `pipeline validate`
    /// reports its errors by the definition's own member path.
    private static func delta(
        _ source: PipelineMemberReader, base: String, environment: [String: String]
    ) throws(PipelineDefinitionError) -> PipelineSource {
        let delta = try source.child("delta", allowed: Self.deltaMembers)!
        let member = delta.member("definition")
        guard let file = try delta.string("definition") else { throw .missingMember(member: member) }
        let path = resolve(file, base: base)
        guard let data = FileManager.default.contents(atPath: path) else {
            throw .invalidValue(member: member, reason: "names a file that cannot be read")
        }
        var bytes = Array(data)
        let baseURL = try delta.string("base_url")
        if let baseURL {
            // The definition's own `base_url` replaced (staging vs production, a test's port), then the whole
            // definition validated as usual, so the override obeys the definition's URL rules.
            guard let object = (try? StrictJSONParser().parse(bytes))?.objectValue,
                  let encoded = try? CanonicalJSON.encode(.object(JSONObject(
                      object.members.filter { $0.key != "base_url" } + [JSONMember("base_url", .string(baseURL))])))
            else { throw .invalidValue(member: member, reason: "is not a JSON object") }
            bytes = encoded
        }
        let definition: DeltaSourceDefinition
        do {
            definition = try DeltaSourceDefinition(bytes: bytes, environment: environment)
        } catch {
            let at = baseURL != nil && error.description.contains("base_url") ? delta.member("base_url") : member
            throw .invalidValue(member: at, reason: "is not a valid delta source definition: \(error.description)")
        }
        var bearer: PipelineCredential?
        if let variable = definition.bearerEnvironmentVariable, let value = environment[variable], !value.isEmpty {
            bearer = PipelineCredential(variable: variable, value: value)
        }
        return .delta(PipelineDeltaSource(
            definitionPath: path, definitionSHA256: Hex.encode(SHA256.hash(Array(data))), definition: definition,
            baseURLOverride: baseURL,
            bearer: bearer))
    }

    private static func rehearsal(
        _ root: PipelineMemberReader, source: PipelineSource, rehearses: Bool
    ) throws(PipelineDefinitionError) -> PipelineRehearsal {
        let reader = try root.child("rehearsal", allowed: Self.rehearsalMembers)
        let user = try reader?.string("user")
        if case .embedded = source, rehearses, user == nil {
            throw .missingMember(member: reader == nil ? "rehearsal" : "rehearsal.user")
        }
        let appVersion = try reader?.string("app_version") ?? "1.0.0"
        guard SemanticVersion(appVersion) != nil else {
            throw .invalidValue(member: "rehearsal.app_version", reason: "must be a SemVer 2.0.0 version")
        }
        return PipelineRehearsal(
            user: user, rebuildCompare: try reader?.bool("rebuild_compare") ?? false, appVersion: appVersion)
    }

    private static func packLevel(_ root: PipelineMemberReader) throws(PipelineDefinitionError) -> Int64 {
        guard let pack = try root.child("pack", allowed: Self.packMembers) else {
            return Int64(PackOptions.defaultLevel)
        }
        let range = Int64(PackOptions.levels.lowerBound)...Int64(PackOptions.levels.upperBound)
        return try pack.integer("level", in: range) ?? Int64(PackOptions.defaultLevel)
    }

    // MARK: - Values

    /// The value of the environment variable a `*_env` member names; nil when the member is absent and not needed.
    private static func credential(
        _ reader: PipelineMemberReader, _ name: String, environment: [String: String], needed: Bool
    ) throws(PipelineDefinitionError) -> PipelineCredential? {
        guard let variable = try reader.string(name) else {
            if needed { throw .missingMember(member: reader.member(name)) }
            return nil
        }
        guard isEnvironmentName(variable) else {
            throw .invalidValue(
                member: reader.member(name), reason: "must name an environment variable ([A-Za-z_][A-Za-z0-9_]*)")
        }
        guard needed else { return nil }
        guard let value = environment[variable], !value.isEmpty else {
            throw .missingEnvironmentVariable(member: reader.member(name), variable: variable)
        }
        return PipelineCredential(variable: variable, value: value)
    }

    static func isEnvironmentName(_ text: String) -> Bool {
        guard let first = text.utf8.first, first == UInt8(ascii: "_") || isLetter(first) else { return false }
        return text.utf8.allSatisfy { $0 == UInt8(ascii: "_") || isLetter($0) || (0x30...0x39).contains($0) }
    }

    private static func isLetter(_ byte: UInt8) -> Bool {
        (0x41...0x5A).contains(byte) || (0x61...0x7A).contains(byte)
    }

    /// `http(s)://host[:port][/path]` without credentials, query or fragment; a trailing `/` is dropped.
    private static func serverURL(_ text: String, member: String) throws(PipelineDefinitionError) -> String {
        let scheme = ["http://", "https://"].first { text.lowercased().hasPrefix($0) }
        guard let scheme else { throw .invalidValue(member: member, reason: "must start with http:// or https://") }
        let rest = text.dropFirst(scheme.count)
        let authority = rest.prefix { $0 != "/" }
        guard !authority.isEmpty else { throw .invalidValue(member: member, reason: "must name a host") }
        guard !authority.contains("@") else {
            throw .invalidValue(member: member, reason: "must not carry credentials; use operator_token_env")
        }
        guard !text.contains("?"), !text.contains("#"), !text.contains(" ") else {
            throw .invalidValue(member: member, reason: "must not have a query, a fragment or spaces")
        }
        var url = text
        while url.hasSuffix("/") { url.removeLast() }
        return url
    }

    /// `path` made absolute against `base` and standardized (`..` and `.` removed).
    static func resolve(_ path: String, base: String) -> String {
        let url = path.hasPrefix("/")
            ? URL(fileURLWithPath: path) : URL(fileURLWithPath: base).appendingPathComponent(path)
        return url.standardizedFileURL.path
    }
}
