@testable import SynchroProtocol
import Testing
import _SeedkitTestSupport

/// The integrity hot paths against plain reference computations over many random inputs: the word-wise octet order,
/// the scope digest's flat sort and chunked hashing, and row digests from stored values against the wire path.
@Suite("Integrity fast paths against reference computations")
struct IntegrityFastPathTests {
    // MARK: Octet order

    @Test("ByteRun.compare orders octet runs exactly as lexicographicallyPrecedes, a proper prefix first")
    func octetOrder() {
        var random = SeededRandom(seed: 0x0C7E_0001)
        let shared: [UInt8] = (0..<21).map { _ in UInt8(truncatingIfNeeded: random.next()) }
        let alphabet: [UInt8] = [0x00, 0x01, 0x7F, 0x80, 0xFE, 0xFF]
        func run() -> [UInt8] {
            let prefix = Array(shared.prefix(random.below(shared.count + 1)))
            return prefix + (0..<random.below(12)).map { _ in alphabet[random.below(alphabet.count)] }
        }
        for _ in 0..<20_000 {
            let a = run()
            let b = random.below(8) == 0 ? a : run()
            let expected = a == b ? 0 : (a.lexicographicallyPrecedes(b) ? -1 : 1)
            let order = a.withUnsafeBufferPointer { x in b.withUnsafeBufferPointer { y in ByteRun.compare(x, y) } }
            #expect(order.signum() == expected, "\(a) vs \(b)")
        }
        #expect([UInt8]().withUnsafeBufferPointer { x in [0].withUnsafeBufferPointer { ByteRun.compare(x, $0) } } < 0)
    }

    @Test("SHA256 one-shot and streaming digests match the FIPS 180-2 vectors")
    func sha256Vectors() {
        #expect(Hex.encode(SHA256.hash(Array("abc".utf8)))
            == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
        let message = Array("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq".utf8)
        var hasher = SHA256()
        hasher.update(message[..<7])
        hasher.update(message[7...])
        #expect(Hex.encode(hasher.finalize()) == "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1")
        #expect(Hex.encode(SHA256.hash([])) == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
    }

    // MARK: Scope digests

    private typealias Entry = (identity: RowIdentity, rowDigest: [UInt8])

    /// §4.6 written out plainly: a stable sort of the entry positions by identity octets, then one preimage.
    private static func referenceScopeDigest(
        schemaHash: [UInt8], scopeID: String, _ entries: [Entry]
    ) -> Result<[UInt8], ScopeDigestError> {
        if let bad = entries.firstIndex(where: { $0.rowDigest.count != 32 }) {
            return .failure(.invalidRowDigest(entry: bad))
        }
        let order = entries.indices.sorted {
            entries[$0].identity.bytes.lexicographicallyPrecedes(entries[$1].identity.bytes)
        }
        for (previous, current) in zip(order, order.dropFirst())
        where entries[previous].identity.bytes == entries[current].identity.bytes {
            return .failure(.duplicateIdentity(entry: max(previous, current)))
        }
        func u64(_ v: Int) -> [UInt8] {
            (0..<8).map { UInt8(truncatingIfNeeded: UInt64(v) >> (56 - 8 * UInt64($0))) }
        }
        var preimage = Array("synchro:v3:scope-digest:v1".utf8) + [0] + schemaHash
        preimage += u64(scopeID.utf8.count) + Array(scopeID.utf8) + u64(entries.count)
        for i in order {
            preimage += u64(entries[i].identity.bytes.count) + entries[i].identity.bytes + entries[i].rowDigest
        }
        return .success(SHA256.hash(preimage))
    }

    private static func result(_ body: () throws(ScopeDigestError) -> [UInt8]) -> Result<[UInt8], ScopeDigestError> {
        do throws(ScopeDigestError) {
            return .success(try body())
        } catch {
            return .failure(error)
        }
    }

    /// Identities of every key type, with keys that are equal, prefixes of each other, extreme or non-ASCII.
    private static func randomIdentity(_ manifest: SchemaManifest, _ random: inout SeededRandom) throws -> RowIdentity {
        let strings = ["", "a", "ab", "abc", "é", "e\u{0301}", "😀", "Ωmega", "row-α", "\u{10FFFD}", "z"]
        switch random.below(5) {
        case 0:
            let int32s: [Int32] = [.min, -1, 0, 1, .max, 255, 256]
            let key = random.below(3) == 0 ? int32s[random.below(int32s.count)]
                : Int32(truncatingIfNeeded: random.next())
            return try RowIdentity(
                manifest: manifest, tableID: "tbl_numbers", primaryKey: .number(JSONNumber(Int64(key))))
        case 1:
            let int64s: [Int64] = [.min, -1, 0, 1, .max, 1 << 32]
            let key = random.below(3) == 0 ? int64s[random.below(int64s.count)]
                : Int64(bitPattern: random.next() >> UInt64(random.below(64)))
            return try RowIdentity(manifest: manifest, tableID: "tbl_longs", primaryKey: .string(String(key)))
        default:
            var key = ""
            for _ in 0..<random.below(random.below(16) == 0 ? 400 : 4) { key += strings[random.below(strings.count)] }
            if key.isEmpty { key = "k" }
            let table = ["tbl_records", "tbl_a", "tbl_af"][random.below(3)]
            return try RowIdentity(manifest: manifest, tableID: table, primaryKey: .string(key))
        }
    }

    @Test("the scope digest (and its preimage-free form) equals the plain §4.6 computation, errors included")
    func scopeDigestsAgainstReference() throws {
        let manifest = try IntegrityFixtures.manifest(IntegrityFixtures.sortedHashManifest)
        let hash = manifest.schemaHashOctets
        var random = SeededRandom(seed: 0x5C0E_0002)
        var failures = 0
        // Sizes up to a few thousand entries with long keys, so the chunked hashing crosses several chunk bounds.
        let sizes = [0, 1, 2, 3, 17, 250, 4_000] + (0..<120).map { _ in random.below(90) }
        for size in sizes {
            var entries: [Entry] = []
            for _ in 0..<size {
                // Repeat an earlier identity now and then: a duplicate is an error that names the later entry.
                let repeated = !entries.isEmpty && random.below(400) == 0
                let identity = repeated ? entries[random.below(entries.count)].identity
                    : try Self.randomIdentity(manifest, &random)
                var digest = (0..<32).map { _ in UInt8(truncatingIfNeeded: random.next()) }
                if random.below(2_000) == 0 { digest.removeLast() }
                entries.append((identity, digest))
            }
            // Entries already in identity order (as a table scan yields them) are hashed as one run of the
            // sorted buffer; mostly ordered ones as a few runs.
            switch random.below(3) {
            case 0: entries.sort { $0.identity < $1.identity }
            case 1:
                entries.sort { $0.identity < $1.identity }
                for _ in 0..<random.below(4) where entries.count > 1 {
                    entries.swapAt(random.below(entries.count), random.below(entries.count))
                }
            default: break
            }
            let scopeID = random.below(2) == 0 ? "catalog" : "user:é😀"
            let expected = Self.referenceScopeDigest(schemaHash: hash, scopeID: scopeID, entries)
            let computed = Self.result { () throws(ScopeDigestError) in
                try ScopeDigest.compute(schemaHash: hash, scopeID: scopeID, entries: entries).digest
            }
            let streamed = Self.result { () throws(ScopeDigestError) in
                try ScopeDigest.digest(schemaHash: hash, scopeID: scopeID, entries: entries)
            }
            #expect(computed == expected, "size \(size)")
            #expect(streamed == expected, "size \(size)")
            if case .failure = expected { failures += 1 }
        }
        #expect(failures > 0, "some random scopes exercise the error paths")
    }

    @Test("the preimage-free scope digest checks the header like compute")
    func scopeDigestHeader() throws {
        let identity = try RowIdentity(
            manifest: IntegrityFixtures.manifest(IntegrityFixtures.sortedHashManifest), tableID: "tbl_numbers",
            primaryKey: .number(JSONNumber(7)))
        let entries: [Entry] = [(identity, Array(repeating: 1, count: 32))]
        #expect(throws: ScopeDigestError.invalidSchemaHash) {
            try ScopeDigest.digest(schemaHash: [0], scopeID: "s", entries: entries)
        }
        #expect(throws: ScopeDigestError.emptyScopeID) {
            try ScopeDigest.digest(schemaHash: Array(repeating: 0, count: 32), scopeID: "", entries: entries)
        }
    }

    // MARK: Row digests from stored values

    /// One random row of `tbl_records` in both forms: stored values in `StoredRowDigesterTests.fullRowColumns`
    /// order and the wire row.
    private static func randomRow(
        _ random: inout SeededRandom
    ) -> (stored: [StoredRowDigesterTests.Stored], wire: [JSONMember], key: String, negativeZero: Bool) {
        typealias Stored = StoredRowDigesterTests.Stored
        let scalars = [
            "a", "Z", " ", "\"", "\\", "\n", "é", "e\u{0301}", "ß", "Ω", "中", "😀", "\u{10FFFD}", "\u{0}",
        ]
        func text(_ limit: Int) -> String {
            (0..<random.below(limit)).map { _ in scalars[random.below(scalars.count)] }.joined()
        }
        func digits(_ value: Int, _ width: Int) -> String {
            let text = String(value)
            return String(repeating: "0", count: max(0, width - text.count)) + text
        }
        var stored: [Stored] = []
        var wire: [JSONMember] = []
        func add(_ id: String, _ value: Stored, _ json: JSONValue) {
            stored.append(value)
            wire.append(JSONMember(id, json))
        }
        let time = "\(digits(random.below(24), 2)):\(digits(random.below(60), 2)):\(digits(random.below(60), 2))."
            + digits(random.below(1_000_000), 6)
        add("fld_time", .text(time), .string(time))
        if random.below(4) == 0 {
            add("fld_text", .null, .null)
        } else {
            let value = text(random.below(10) == 0 ? 300 : 12)
            add("fld_text", .text(value), .string(value))
        }
        // RFC 8785 string escapes of the scalars above: quote, backslash and control characters only.
        let escaped = text(6).unicodeScalars.map { scalar in
            switch scalar {
            case "\"": #"\""#
            case "\\": #"\\"#
            case "\n": #"\n"#
            case "\u{0}": #"\u0000"#
            default: String(scalar)
            }
        }.joined()
        let jsons = [
            #"{"a":1,"z":[true,null]}"#, "null", "[]", "{}", #""é""#, "1.5", "-2", "1e-7",
            #"{"n":\#(Int64(bitPattern: random.next()) >> 15),"s":"\#(escaped)"}"#,
        ]
        let json = jsons[random.below(jsons.count)]
        add("fld_json", .text(json), .string(json))
        let int32s: [Int32] = [.min, -1, 0, 1, .max]
        let int = random.below(3) == 0 ? int32s[random.below(int32s.count)] : Int32(truncatingIfNeeded: random.next())
        add("fld_int", .integer(Int64(int)), .number(JSONNumber(Int64(int))))
        let key = "row-" + text(8)
        add("fld_id", .text(key), .string(key))
        let int64s: [Int64] = [.min, -1, 0, 1, .max, 9_007_199_254_740_993]
        let long = random.below(3) == 0 ? int64s[random.below(int64s.count)] : Int64(bitPattern: random.next())
        add("fld_i64", .integer(long), .string(String(long)))
        var negativeZero = false
        switch random.below(6) {
        case 0:
            let small = Int64(bitPattern: random.next()) >> 20
            add("fld_float", .integer(small), .number(JSONNumber(Double(small))!))
        case 1:
            let special: [Double] = [
                0, -0.0, 0.1, .leastNonzeroMagnitude, -.leastNonzeroMagnitude, .greatestFiniteMagnitude, 1e21, 1e-7,
                123_456_789.125, -1.5,
            ]
            let value = special[random.below(special.count)]
            negativeZero = value == 0 && value.sign == .minus
            add("fld_float", .real(value), .number(JSONNumber(value == 0 ? 0 : value)!))
        default:
            var value = Double(bitPattern: random.next())
            while !value.isFinite { value = Double(bitPattern: random.next()) }
            add("fld_float", .real(value), .number(JSONNumber(value)!))
        }
        let whole = random.below(10_000)
        let cents = random.below(100)
        var decimal = cents == 0 ? String(whole) : "\(whole).\(digits(cents, 2))"
        if decimal.hasSuffix("0") && decimal.contains(".") { decimal.removeLast() }
        if decimal != "0" && random.below(3) == 0 { decimal = "-" + decimal }
        add("fld_dec", .text(decimal), .string(decimal))
        let year = digits(1 + random.below(9_999), 4)
        let date = "\(year)-\(digits(1 + random.below(12), 2))-\(digits(1 + random.below(28), 2))"
        let datetime = "\(date)T\(time)Z"
        add("fld_dt", .text(datetime), .string(datetime))
        let day = random.below(20) == 0 ? "2024-02-29" : date
        add("fld_date", .text(day), .string(day))
        let bytes = (0..<random.below(random.below(10) == 0 ? 600 : 40)).map { _ in
            UInt8(truncatingIfNeeded: random.next())
        }
        add("fld_bytes", .blob(bytes), .string(Base64URL.encode(bytes)))
        let flag = random.below(2) == 1
        add("fld_bool", .integer(flag ? 1 : 0), .bool(flag))
        return (stored, wire, key, negativeZero)
    }

    @Test("rows digested from random stored values of every type equal their wire-path digests")
    func storedRowsAgainstWirePath() throws {
        let manifest = try IntegrityFixtures.manifest(IntegrityFixtures.sortedHashManifest)
        var stored = StoredRowDigester(manifest: manifest)
        var wire = RowDigester(manifest: manifest)
        let layout = try stored.layout(
            tableID: "tbl_records", columnFieldIDs: StoredRowDigesterTests.fullRowColumns)
        var random = SeededRandom(seed: 0x5707_0003)
        var digested = 0
        for index in 0..<5_000 {
            let row = Self.randomRow(&random)
            var version = index % 50 == 0 ? "v-é😀-\(index)" : "server-version-\(random.next())"
            let expected = try wire.digest(
                tableID: "tbl_records", primaryKey: .string(row.key), row: .object(JSONObject(row.wire)),
                serverVersion: version)
            let computed = version.withUTF8 { serverVersion in
                stored.digest(layout, serverVersion: serverVersion) { column, value in
                    row.stored[column].write(into: &value)
                }
            }
            if row.negativeZero {
                #expect(computed == nil, "-0.0 is left to the wire path")
                continue
            }
            // Declining is always allowed (the caller then takes the wire path); a digest must be the wire one.
            guard let got = computed else { continue }
            #expect(got.identity == expected.identity, "row \(index)")
            #expect(got.digest == expected.digest, "row \(index): \(row.stored)")
            digested += 1
        }
        #expect(digested > 4_000, "most rows are in the forms the stored path vouches for")
    }
}
