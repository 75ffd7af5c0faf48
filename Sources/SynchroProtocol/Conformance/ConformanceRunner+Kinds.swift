extension ConformanceRunner {
    /// Runs one vector's input through the protocol code for its kind.
    public static func evaluate(_ vector: ConformanceVector) -> Evaluation {
        let input = VectorInput(object: vector.input)
        do throws(VectorInput.Problem) {
            switch vector.kind {
            case "typed_value": return try typedValue(input)
            case "schema_manifest": return try schemaManifest(input)
            case "row_identity": return try rowIdentity(input)
            case "row_digest": return try rowDigest(input)
            case "scope_digest": return try scopeDigest(input)
            case "mutation_fingerprint": return try mutationFingerprint(input)
            case "batch_fingerprint": return try batchFingerprint(input)
            default: return .unsupportedKind
            }
        } catch {
            switch error {
            case .missing(let why): return .malformedInput(why)
            case .rejected(let rule): return .rejected(rule: rule)
            }
        }
    }

    private static func typedValue(_ input: VectorInput) throws(VectorInput.Problem) -> Evaluation {
        let specValue = try input.value("field_spec")
        let raw = try input.embeddedJSON("raw_json")
        let spec: FieldSpec
        do { spec = try FieldSpec(json: specValue) } catch { throw .rejected(error.rule) }
        do {
            return .produced(bytes: try PortableValue.typedBytes(raw, spec: spec), digest: nil)
        } catch {
            throw .rejected(error.rule)
        }
    }

    private static func schemaManifest(_ input: VectorInput) throws(VectorInput.Problem) -> Evaluation {
        let manifest = try input.manifest()
        return .produced(bytes: manifest.hashPreimage, digest: manifest.schemaHashOctets)
    }

    private static func rowIdentity(_ input: VectorInput) throws(VectorInput.Problem) -> Evaluation {
        let manifest = try input.manifest()
        let tableID = try input.string("table_id")
        let pk = try input.embeddedJSON("pk_json")
        do {
            return .produced(bytes: try RowIdentity(manifest: manifest, tableID: tableID, primaryKey: pk).bytes,
                             digest: nil)
        } catch {
            throw .rejected(error.rule)
        }
    }

    private static func rowDigest(_ input: VectorInput) throws(VectorInput.Problem) -> Evaluation {
        let manifest = try input.manifest()
        let tableID = try input.string("table_id")
        let pk = try input.embeddedJSON("pk_json")
        let row = try input.embeddedJSON("row_json")
        let serverVersion = try input.string("server_version")
        do {
            let result = try RowDigest.compute(
                manifest: manifest, tableID: tableID, primaryKey: pk, row: row, serverVersion: serverVersion)
            return .produced(bytes: result.preimage, digest: result.digest)
        } catch {
            throw .rejected(error.rule)
        }
    }

    private static func scopeDigest(_ input: VectorInput) throws(VectorInput.Problem) -> Evaluation {
        let schemaHash = try input.string("schema_hash")
        let scopeID = try input.string("scope_id")
        guard case .array(let items) = try input.value("entries") else { throw .missing("entries is not an array") }
        var entries: [(identity: String, rowDigest: String)] = []
        for item in items {
            guard case .object(let entry) = item,
                  case .string(let identity)? = entry["row_identity_hex"],
                  case .string(let digest)? = entry["row_digest_hex"]
            else { throw .missing("an entry lacks row_identity_hex or row_digest_hex") }
            entries.append((identity, digest))
        }
        do {
            let result = try ScopeDigest.compute(schemaHashHex: schemaHash, scopeID: scopeID, hexEntries: entries)
            return .produced(bytes: result.preimage, digest: result.digest)
        } catch {
            throw .rejected(error.rule)
        }
    }

    private static func mutationFingerprint(_ input: VectorInput) throws(VectorInput.Problem) -> Evaluation {
        let user = try input.string("authenticated_user_id")
        let clientID = try input.string("client_id")
        let text = try input.string("mutation_json")
        do {
            let mutation = try PushMutation.parse(bytes: Array(text.utf8), shape: .conformanceVector)
            let fingerprint = try PushFingerprint.mutation(mutation, authenticatedUserID: user, clientID: clientID)
            return .produced(bytes: fingerprint.preimage, digest: fingerprint.digest)
        } catch {
            throw .rejected(error.rule)
        }
    }

    private static func batchFingerprint(_ input: VectorInput) throws(VectorInput.Problem) -> Evaluation {
        let user = try input.string("authenticated_user_id")
        let text = try input.string("batch_json")
        do {
            let request = try PushRequest.parse(body: Array(text.utf8), shape: .conformanceVector)
            let fingerprint = try PushFingerprint.batch(request, authenticatedUserID: user)
            return .produced(bytes: fingerprint.preimage, digest: fingerprint.digest)
        } catch {
            throw .rejected(error.rule)
        }
    }
}

/// Typed access to a vector's `input` members. A missing member is a broken vector; a member
/// whose embedded JSON does not parse is a rejection (the vector tests exactly that).
struct VectorInput {
    enum Problem: Error {
        case missing(String)
        case rejected(String)
    }

    let object: JSONObject

    func value(_ name: String) throws(Problem) -> JSONValue {
        guard let value = object[name] else { throw .missing("input has no \(name)") }
        return value
    }

    func string(_ name: String) throws(Problem) -> String {
        guard case .string(let s) = try value(name) else { throw .missing("input \(name) is not a string") }
        return s
    }

    /// A member holding JSON text, parsed strictly.
    func embeddedJSON(_ name: String) throws(Problem) -> JSONValue {
        let text = try string(name)
        do {
            return try StrictJSONParser().parse(text)
        } catch {
            throw .rejected("invalid_json.\(error.rule.rawValue)")
        }
    }

    /// The `manifest_json` member, parsed and validated as a schema manifest.
    func manifest() throws(Problem) -> SchemaManifest {
        let json = try embeddedJSON("manifest_json")
        do {
            return try SchemaManifest(json: json)
        } catch {
            throw .rejected("manifest.\(error.rule)")
        }
    }
}
