/// The schema hash (`spec/integrity.md` §4.2, `spec/wire-protocol.md` §7.5):
/// `hex(SHA-256(SCHEMA_DOMAIN || RFC8785_UTF8(body)))`, where the body is the manifest without
/// `schema_hash`, with tables, fields and indexes sorted by their IDs.
extension SchemaManifest {
    /// The lowercase hex schema hash of an already canonical body.
    public static func computeHash(canonicalBody: [UInt8]) -> String {
        var hasher = SHA256()
        hasher.update(OctetWriter(domain: domain, capacity: 32).bytes)
        hasher.update(canonicalBody)
        return Hex.encode(hasher.finalize())
    }

    /// `SCHEMA_DOMAIN || canonicalBody`: the exact octets SHA-256 runs over.
    public static func hashPreimage(canonicalBody: [UInt8]) -> [UInt8] {
        var writer = OctetWriter(domain: domain, capacity: 32 + canonicalBody.count)
        writer.append(canonicalBody)
        return writer.bytes
    }

    /// `SCHEMA_DOMAIN || canonicalBody` of this manifest (what the conformance vectors list).
    public var hashPreimage: [UInt8] { Self.hashPreimage(canonicalBody: canonicalBody) }

    /// The hash a manifest JSON value's body hashes to, whatever its declared `schema_hash` says
    /// and even when other manifest rules fail; throws only when the body cannot be sorted.
    public static func computeHash(json: JSONValue) throws(ManifestError) -> String {
        computeHash(canonicalBody: try canonicalBody(of: json))
    }

    /// `RFC8785_UTF8(body)` of a manifest JSON value: `schema_hash` removed, tables sorted by
    /// `table_id`, each table's fields by `field_id` and indexes by `index_id` (UTF-8 octets).
    ///
    /// Lenient on purpose (members are not checked) so tools can report the hash of a manifest
    /// that is invalid for another reason; it throws only when an element to sort has no string ID.
    public static func canonicalBody(of json: JSONValue) throws(ManifestError) -> [UInt8] {
        guard case .object(let object) = json else { throw .notAnObject(path: "manifest") }
        var members: [JSONMember] = []
        members.reserveCapacity(object.count)
        for member in object.members where !member.key.exactlyEquals("schema_hash") {
            if member.key.exactlyEquals("tables"), case .array(let tables) = member.value {
                members.append(JSONMember(member.key, .array(try sortedTables(tables))))
            } else {
                members.append(member)
            }
        }
        do throws(CanonicalJSON.Failure) {
            return try CanonicalJSON.encode(.object(JSONObject(members)))
        } catch {
            // Every number was checked as a protocol integer, so only a noncharacter can fail here;
            // a lenient caller may still hit a non-finite number, which is equally unhashable.
            throw .noncharacter
        }
    }

    /// Validates what it can and reports the declared hash next to the recomputed one: the
    /// basis of `seedkit digest manifest`.
    public static func check(json: JSONValue) throws(ManifestError) -> ManifestHashCheck {
        let body = try canonicalBody(of: json)
        var declared: String?
        if case .object(let object) = json, case .string(let hash)? = object["schema_hash"] { declared = hash }
        var validationError: ManifestError?
        do throws(ManifestError) {
            _ = try SchemaManifest(json: json)
        } catch {
            validationError = error
        }
        return ManifestHashCheck(
            declaredHash: declared, computedHash: computeHash(canonicalBody: body), canonicalBody: body,
            validationError: validationError)
    }

    private static func sortedTables(_ tables: [JSONValue]) throws(ManifestError) -> [JSONValue] {
        var keyed: [(id: String, value: JSONValue)] = []
        keyed.reserveCapacity(tables.count)
        for (i, table) in tables.enumerated() {
            let path = "manifest.tables[\(i)]"
            guard case .object(let object) = table else { throw .notAnObject(path: path) }
            var members: [JSONMember] = []
            members.reserveCapacity(object.count)
            for member in object.members {
                if let idName = sortKey(forArray: member.key), case .array(let elements) = member.value {
                    let sorted = try sortedByID(elements, idName: idName, path: "\(path).\(member.key)")
                    members.append(JSONMember(member.key, .array(sorted)))
                } else {
                    members.append(member)
                }
            }
            keyed.append((try id(of: object, name: "table_id", path: path), .object(JSONObject(members))))
        }
        return keyed.sorted { $0.id.utf8Precedes($1.id) }.map(\.value)
    }

    /// The ID member that orders a table's nested array, nil for members that are not sorted.
    private static func sortKey(forArray member: String) -> String? {
        if member.exactlyEquals("fields") { return "field_id" }
        if member.exactlyEquals("indexes") { return "index_id" }
        return nil
    }

    private static func sortedByID(
        _ elements: [JSONValue], idName: String, path: String
    ) throws(ManifestError) -> [JSONValue] {
        var keyed: [(id: String, value: JSONValue)] = []
        keyed.reserveCapacity(elements.count)
        for (i, element) in elements.enumerated() {
            guard case .object(let object) = element else { throw .notAnObject(path: "\(path)[\(i)]") }
            keyed.append((try id(of: object, name: idName, path: "\(path)[\(i)]"), element))
        }
        return keyed.sorted { $0.id.utf8Precedes($1.id) }.map(\.value)
    }

    private static func id(of object: JSONObject, name: String, path: String) throws(ManifestError) -> String {
        guard let value = object[name] else { throw .missingMember(path: path, member: name) }
        guard case .string(let id) = value else { throw .memberType(path: path, member: name) }
        return id
    }
}

/// The outcome of recomputing a manifest's hash: what the CLI reports for `digest manifest`.
public struct ManifestHashCheck: Sendable, Equatable {
    /// The `schema_hash` member as given, nil when absent or not a string.
    public let declaredHash: String?
    /// `hex(SHA-256(SCHEMA_DOMAIN || canonicalBody))`.
    public let computedHash: String
    /// The exact octets that were hashed (without the domain prefix).
    public let canonicalBody: [UInt8]
    /// The first manifest rule the input breaks (a hash mismatch included), nil for a valid manifest.
    public let validationError: ManifestError?

    /// True when the declared hash is exactly the recomputed one.
    public var matches: Bool { declaredHash.map { $0.exactlyEquals(computedHash) } ?? false }

    /// True when the manifest passes every rule, hash included.
    public var isValid: Bool { validationError == nil }
}
