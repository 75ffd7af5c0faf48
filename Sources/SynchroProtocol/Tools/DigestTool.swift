/// The entry points behind `seedkit digest`: JSON octets in, a JSON result out (docs/cli.md).
///
/// Each validates its input with the same code the client, server and seed tools use, so a
/// result here is what any of them would compute, and every rejection names the rule.
public enum DigestTool {
    /// The schema hash of a manifest; `schema_hash` may be absent (a manifest being authored).
    public static func manifest(_ input: [UInt8]) throws(ToolError) -> JSONValue {
        let json = try parse(input)
        let check: ManifestHashCheck
        do { check = try SchemaManifest.check(json: json) } catch { throw manifestError(error) }
        if check.declaredHash == nil {
            // Validate everything else against the computed hash, as if it had been declared.
            let completed = adding("schema_hash", .string(check.computedHash), to: json)
            do { _ = try SchemaManifest(json: completed) } catch { throw manifestError(error) }
        } else if !check.matches {
            throw ToolError(
                rule: "schema_hash_mismatch",
                message: "the declared schema_hash differs from the computed one, \(check.computedHash)")
        } else if let error = check.validationError {
            throw manifestError(error)
        }
        let version = json.objectValue?["schema_version"] ?? .null
        return object([
            ("schema_hash", .string(check.computedHash)),
            ("schema_version", version),
            ("canonical_body_octets", count(check.canonicalBody.count)),
        ])
    }

    /// The row identity and row checksum of one complete row.
    public static func row(_ input: [UInt8]) throws(ToolError) -> JSONValue {
        let request = try Request(parse(input), command: "row")
        let manifest = try request.manifest()
        let table = try request.string("table")
        let pk = try request.member("pk")
        let row = try request.member("row")
        let serverVersion = try request.string("server_version")
        do {
            let digest = try RowDigest.compute(
                manifest: manifest, tableID: table, primaryKey: pk, row: row, serverVersion: serverVersion)
            return object([
                ("table", .string(table)),
                ("row_identity", .string(digest.identity.hex)),
                ("row_checksum", digest.checksum.json),
            ])
        } catch {
            throw ToolError(rule: error.rule, message: error.description)
        }
    }

    /// The scope checksum and cardinality of a set of rows given as (table, pk, row digest).
    public static func scope(_ input: [UInt8]) throws(ToolError) -> JSONValue {
        let request = try Request(parse(input), command: "scope")
        let manifest = try request.manifest()
        let scopeID = try request.string("scope_id")
        guard case .array(let rows) = try request.member("rows") else {
            throw ToolError(rule: "invalid_input", message: "rows must be an array")
        }
        var entries: [(identity: RowIdentity, rowDigest: [UInt8])] = []
        entries.reserveCapacity(rows.count)
        for (index, rowValue) in rows.enumerated() {
            entries.append(try scopeEntry(rowValue, index: index, manifest: manifest))
        }
        do {
            let digest = try ScopeDigest.compute(
                schemaHash: manifest.schemaHashOctets, scopeID: scopeID, entries: entries)
            return object([
                ("scope_id", .string(scopeID)),
                ("cardinality", count(entries.count)),
                ("checksum", digest.checksum.json),
            ])
        } catch {
            throw ToolError(rule: error.rule, message: error.description)
        }
    }

    /// Fingerprints and push-limit measures of a wire push body, for the authenticated `user`.
    public static func push(_ input: [UInt8], user: String) throws(ToolError) -> JSONValue {
        do {
            let received = try ReceivedPushBody.parse(input, shape: .wire)
            let batch = try PushFingerprint.batch(received.request, authenticatedUserID: user)
            let fingerprints = try PushFingerprint.mutations(of: received.request, authenticatedUserID: user)
            let limits = PushLimits.measure(received)
            let mutations = zip(received.request.mutations, zip(fingerprints, limits.mutations)).map {
                mutation, pair -> JSONValue in
                object([
                    ("mutation_id", .string(mutation.mutationID)),
                    ("mutation_fingerprint", .string(pair.0.hex)),
                    ("normalized_mutation_octets", count(pair.1.normalizedOctets)),
                    ("authored_columns", count(pair.1.authoredColumns)),
                    ("element_body_octets", count(pair.1.elementBodyOctets)),
                    ("element_canonical_octets", count(pair.1.elementCanonicalOctets)),
                ])
            }
            let envelope = limits.reservedEnvelope
            let atomic = received.request.isAtomic
            return object([
                ("atomic", .bool(atomic)),
                ("batch_fingerprint", .string(batch.hex)),
                ("mutations", .array(mutations)),
                ("limits", object([
                    ("request_body_octets", count(limits.bodyOctets)),
                    ("canonical_request_octets", count(limits.canonicalOctets)),
                    ("reserved_envelope_octets", count(atomic ? envelope.atomicBodyOctets : envelope.bodyOctets)),
                    ("reserved_envelope_canonical_octets",
                     count(atomic ? envelope.atomicCanonicalOctets : envelope.canonicalOctets)),
                    ("reserved_request_octets", count(limits.reservedBodyOctets)),
                    ("reserved_request_canonical_octets", count(limits.reservedCanonicalOctets)),
                    ("max_request_octets", count(PushLimits.maxRequestBodyOctets)),
                    ("max_normalized_mutation_octets", count(PushLimits.maxNormalizedMutationOctets)),
                    ("max_authored_columns", count(PushLimits.maxAuthoredColumns)),
                    ("max_mutations", count(PushLimits.maxMutationsPerRequest)),
                    ("within_server_limits", .bool(limits.isWithinServerLimits)),
                    ("within_seal_limits", .bool(limits.isWithinSealLimits)),
                ])),
            ])
        } catch {
            throw ToolError(rule: error.rule, message: error.description)
        }
    }

    // MARK: - Helpers

    private static func scopeEntry(
        _ value: JSONValue, index: Int, manifest: SchemaManifest
    ) throws(ToolError) -> (identity: RowIdentity, rowDigest: [UInt8]) {
        guard case .object(let row) = value, case .string(let table)? = row["table"], let pk = row["pk"] else {
            throw ToolError(rule: "invalid_input", message: "rows[\(index)] needs table and pk")
        }
        let identity: RowIdentity
        do {
            identity = try RowIdentity(manifest: manifest, tableID: table, primaryKey: pk)
        } catch {
            throw ToolError(rule: error.rule, message: "rows[\(index)]: \(error.description)")
        }
        switch (row["row_digest"], row["row_checksum"]) {
        case (.string(let hex)?, nil):
            guard Hex.isLowercaseHex(hex, octets: 32), let digest = Hex.decode(hex) else {
                throw ToolError(rule: "invalid_row_digest", message: "rows[\(index)].row_digest is not 64 lowercase hex")
            }
            return (identity, digest)
        case (nil, let checksum?):
            do {
                return (identity, try Checksum(json: checksum).digest)
            } catch {
                throw ToolError(rule: error.rule, message: "rows[\(index)].row_checksum: \(error.description)")
            }
        default:
            throw ToolError(
                rule: "invalid_input", message: "rows[\(index)] needs exactly one of row_digest and row_checksum")
        }
    }

    private static func parse(_ input: [UInt8]) throws(ToolError) -> JSONValue {
        do {
            return try StrictJSONParser().parse(input)
        } catch {
            throw ToolError(rule: "invalid_json", message: error.description)
        }
    }

    private static func manifestError(_ error: ManifestError) -> ToolError {
        ToolError(rule: error.rule, message: "invalid manifest: \(error.description)")
    }

    private static func adding(_ name: String, _ value: JSONValue, to json: JSONValue) -> JSONValue {
        guard case .object(let o) = json else { return json }
        return .object(JSONObject(o.members + [JSONMember(name, value)]))
    }

    private static func count(_ n: Int) -> JSONValue { .number(JSONNumber(Int64(n))) }

    private static func object(_ members: [(String, JSONValue)]) -> JSONValue {
        .object(JSONObject(members.map { JSONMember($0.0, $0.1) }))
    }

    /// An input object with required members and its `manifest`.
    private struct Request {
        let object: JSONObject
        let command: String

        init(_ json: JSONValue, command: String) throws(ToolError) {
            guard case .object(let object) = json else {
                throw ToolError(rule: "invalid_input", message: "digest \(command) needs a JSON object")
            }
            self.object = object
            self.command = command
        }

        func member(_ name: String) throws(ToolError) -> JSONValue {
            guard let value = object[name] else {
                throw ToolError(rule: "missing_member", message: "digest \(command) input needs \(name)")
            }
            return value
        }

        func string(_ name: String) throws(ToolError) -> String {
            guard case .string(let s) = try member(name) else {
                throw ToolError(rule: "invalid_input", message: "digest \(command) input member \(name) must be a string")
            }
            return s
        }

        func manifest() throws(ToolError) -> SchemaManifest {
            let json = try member("manifest")
            do {
                return try SchemaManifest(json: json)
            } catch {
                throw manifestError(error)
            }
        }
    }
}
