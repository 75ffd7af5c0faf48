import SQLiteKit
import SynchroStore
import SynchroProtocol

/// Row digests under the earlier schemas of `_synchro_schema_archive` (`spec/client-store.md` §4.13), for
/// validation only: a Class 2 change leaves the provenance digests of rows it did not re-deliver under the schema
/// they were verified with, and telling those apart from damage needs the digest the row's values give there.
///
/// An archived schema keeps each table's field IDs and types and the schema hash, which is all a row digest
/// depends on besides the values (`spec/integrity.md` §4.4–§4.5). Only schemas whose fields of the table are a
/// subset of the active table's, with the same types, are used: the typed octets of each field are then the ones
/// the active digest wrote, and the earlier body is those octets for the earlier field set.
struct ArchivedRowDigester {
    /// One earlier schema: its raw hash and, per table ID, its field IDs and types.
    private struct Schema {
        let hashOctets: [UInt8]
        let fields: [String: [String: PortableType]]
    }

    private let schemas: [Schema]

    /// Whether the store archived any schema besides the active one.
    var hasEarlierSchemas: Bool { !schemas.isEmpty }

    /// Reads every archived schema except the active reference.
    init(connection: Connection, active: SchemaReference) throws {
        let archived = try connection.query(
            "SELECT schema_version, schema_hash, schema_json FROM _synchro_schema_archive ORDER BY schema_version"
        ) { ($0.int64(at: 0), try $0.text(at: 1), try $0.text(at: 2)) }
        var schemas: [Schema] = []
        for (version, hash, json) in archived where version != active.version || hash != active.hash {
            // An unreadable archive row proves nothing; the validator then reports what it cannot explain.
            guard let octets = Hex.decode(hash), octets.count == 32,
                let tables = try? LocalSchemaJSON.decode(json)
            else { continue }
            var fields: [String: [String: PortableType]] = [:]
            for table in tables {
                fields[table.tableID] = Dictionary(
                    table.columns.map { ($0.fieldID, $0.logicalType) }, uniquingKeysWith: { first, _ in first })
            }
            schemas.append(Schema(hashOctets: octets, fields: fields))
        }
        self.schemas = schemas
    }

    /// Whether some earlier schema gives `digest` for the row whose active-schema digest is `active`: the same
    /// identity, values and server version, digested with that schema's hash and field set.
    func reproduces(
        _ digest: [UInt8], active: RowDigest, table: ManifestTable, serverVersion: String
    ) -> Bool {
        guard let segments = Self.fieldSegments(of: active.body) else { return false }
        let activeTypes = Dictionary(
            table.fields.map { ($0.fieldID, $0.type) }, uniquingKeysWith: { first, _ in first })
        for schema in schemas {
            guard let earlier = schema.fields[table.tableID],
                earlier.allSatisfy({ activeTypes[$0.key] == $0.value })
            else { continue }
            var body = Self.u32(UInt32(earlier.count))
            for segment in segments where earlier[segment.fieldID] != nil {
                body.append(contentsOf: segment.octets)
            }
            var preimage = Array(RowDigest.domain.utf8) + [0]
            preimage += schema.hashOctets
            preimage += Self.blob(active.identity.bytes)
            preimage += Self.blob(body)
            preimage += Self.blob(Array(serverVersion.utf8))
            if SHA256.hash(preimage) == digest { return true }
        }
        return false
    }

    /// Splits a row body into its `text(field_id) || typed(value)` entries, in body order; nil when it does not
    /// parse (never for a body the digester wrote).
    private static func fieldSegments(of body: [UInt8]) -> [(fieldID: String, octets: ArraySlice<UInt8>)]? {
        var segments: [(fieldID: String, octets: ArraySlice<UInt8>)] = []
        var offset = 4
        func length(at position: Int) -> Int? {
            guard position + 8 <= body.count else { return nil }
            let value = body[position..<position + 8].reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
            return value <= UInt64(body.count) ? Int(value) : nil
        }
        while offset < body.count {
            let start = offset
            guard let nameLength = length(at: offset), offset + 8 + nameLength + 2 <= body.count else { return nil }
            let name = String(decoding: body[offset + 8..<offset + 8 + nameLength], as: UTF8.self)
            offset += 8 + nameLength
            let tag = body[offset]
            let present = body[offset + 1] == 1
            offset += 2
            if present {
                switch tag {
                case PortableType.int.tag: offset += 4
                case PortableType.int64.tag, PortableType.float.tag: offset += 8
                case PortableType.boolean.tag: offset += 1
                default:
                    guard let payload = length(at: offset) else { return nil }
                    offset += 8 + payload
                }
            }
            guard offset <= body.count else { return nil }
            segments.append((name, body[start..<offset]))
        }
        return segments
    }

    private static func u32(_ value: UInt32) -> [UInt8] {
        (0..<4).map { UInt8(truncatingIfNeeded: value >> (24 - 8 * $0)) }
    }

    private static func blob(_ octets: [UInt8]) -> [UInt8] {
        let count = UInt64(octets.count)
        return (0..<8).map { UInt8(truncatingIfNeeded: count >> (56 - 8 * $0)) } + octets
    }
}
