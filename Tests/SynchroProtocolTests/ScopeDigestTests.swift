import SynchroProtocol
import Testing

@Suite("Scope digest (integrity §4.6, §8.4; wire §2.10.3–§2.10.4)")
struct ScopeDigestTests {
    private static let domainHex = "73796e6368726f3a76333a726f772d6964656e746974793a763100"
    private static let r1Identity = domainHex + "000000000000000974626c5f7461736b73"
        + "000000000000000b666c645f7461736b5f6964" + "010100000000000000087461736b2d303031"
    private static let r1Digest = "315e138202f6817530f9dc40f210d57c506910712442777515a88178729fb090"
    private static let r2Identity = domainHex + "000000000000000c74626c5f636f756e74657273000000000000000e666c645f636f75"
        + "6e7465725f696402010000002a"
    private static let r2Digest = "15b705dd42a6471a35fd138d1d673be9004d38f751df1cd12b818e5cca1f4314"
    private static let r3Identity = domainHex + "000000000000000974626c5f626c6f6273"
        + "000000000000000b666c645f626c6f625f6964" + "0301fffff4c58c31d00e"
    private static let r3Digest = "ccce5ff7df0235cdcec3874b4073ed2a874e9a38a1df52f0fda19e1f6c3d74c3"
    private static let s1Digest = "4ad6bb6c9eae29d6c5fe33f48b42ed50e3c9fe3fecb0510a7beb57a4105822c0"
    /// A structurally valid `tbl_numbers` identity for key -1 (wire §2.10.4 scope vectors).
    private static let numbersMinusOne = domainHex + "000000000000000b74626c5f6e756d62657273"
        + "000000000000000d666c645f6e756d6265725f6964" + "0201ffffffff"
    private static let zeroDigest = String(repeating: "0", count: 64)

    private func s1(_ entries: [(identity: String, rowDigest: String)]) throws -> ScopeDigest {
        try ScopeDigest.compute(
            schemaHashHex: IntegrityFixtures.manifestV3Hash, scopeID: "catalog:eu", hexEntries: entries)
    }

    private func rejection(
        scopeID: String = "scope-invalid", hash: String = IntegrityFixtures.sortedHashManifestHash,
        _ entries: [(identity: String, rowDigest: String)]
    ) -> ScopeDigestError? {
        do throws(ScopeDigestError) {
            _ = try ScopeDigest.compute(schemaHashHex: hash, scopeID: scopeID, hexEntries: entries)
            return nil
        } catch {
            return error
        }
    }

    // MARK: Worked examples

    @Test("S1 sorts R3, R1, R2 by whole identity octets and hashes a 434-octet preimage to 4ad6bb6c…")
    func s1Digest() throws {
        let result = try s1([
            (Self.r1Identity, Self.r1Digest), (Self.r2Identity, Self.r2Digest), (Self.r3Identity, Self.r3Digest),
        ])
        #expect(result.hex == Self.s1Digest)
        #expect(result.preimage.count == 434)
        let header = IntegrityFixtures.octets("73796e6368726f3a76333a73636f70652d6469676573743a763100"
            + IntegrityFixtures.manifestV3Hash + "000000000000000a636174616c6f673a6575" + "0000000000000003")
        #expect(result.preimage.starts(with: header))
        let firstEntry = IntegrityFixtures.octets("0000000000000049" + Self.r3Identity + Self.r3Digest)
        #expect(Array(result.preimage.dropFirst(header.count).prefix(firstEntry.count)) == firstEntry)
        #expect(result.preimage.suffix(32) == IntegrityFixtures.octets(Self.r2Digest)[...])
    }

    @Test("S2: an empty scope hashes its 85-octet header with cardinality 0 to c7ca7fe8…")
    func s2EmptyScope() throws {
        let result = try ScopeDigest.compute(
            schemaHashHex: IntegrityFixtures.manifestV3Hash, scopeID: "user:alice", hexEntries: [])
        #expect(result.preimage == IntegrityFixtures.octets("""
            73796e6368726f3a76333a73636f70652d6469676573743a763100
            a55546d50fe3a4562d9a9e78b0325a3e58f2861697451484dd5af72c53c4f729
            000000000000000a757365723a616c696365 0000000000000000
            """))
        #expect(result.hex == "c7ca7fe813badec44cb6188e7a9a4c8821c340bd387459247a4fc26a2db3fcba")
    }

    @Test("S3: swapping the digests of R1 and R3 gives 884167a9…, not S1")
    func s3SwappedDigests() throws {
        let result = try s1([
            (Self.r1Identity, Self.r3Digest), (Self.r2Identity, Self.r2Digest), (Self.r3Identity, Self.r1Digest),
        ])
        #expect(result.hex == "884167a9ac1ebe07813af4ce6c8ec9ba5babb43e0be13026b8589e1dd73ba260")
        #expect(result.hex != Self.s1Digest)
    }

    @Test("VEC-SCOPE-EMPTY-001 hashes to 7dc16862…")
    func emptyScopeVector() throws {
        let result = try ScopeDigest.compute(
            schemaHashHex: IntegrityFixtures.sortedHashManifestHash, scopeID: "scope-empty", hexEntries: [])
        #expect(result.hex == "7dc168624d03a031b0254550c9e724987bdebd7c3e62a412c6a11b422ab158eb")
        #expect(result.checksum.hex == result.hex)
    }

    @Test("VEC-SCOPE-ALTERED-PAIRING-001 hashes key 1 before key -1 and gives cd234473…")
    func alteredPairingVector() throws {
        let manifest = try IntegrityFixtures.manifest(IntegrityFixtures.sortedHashManifest)
        let minusOne = try RowIdentity(manifest: manifest, tableID: "tbl_numbers", primaryKey: .number(JSONNumber(-1)))
        let one = try RowIdentity(manifest: manifest, tableID: "tbl_numbers", primaryKey: .number(JSONNumber(1)))
        #expect(minusOne.hex == Self.numbersMinusOne)
        #expect(one < minusOne)
        let minusOneDigest = "c5aa7e2c10dc1f363b6961161bdf720ef2823e0a021fedb2d410f59851b8b0b8"
        let oneDigest = "8724af2bb5f9cfaf6cd90123d8de3bdfc1b38dcc576f9d758216d2368b8b72bf"
        let result = try ScopeDigest.compute(
            schemaHash: manifest.schemaHashOctets, scopeID: "scope-numbers",
            entries: [(minusOne, IntegrityFixtures.octets(minusOneDigest)), (one, IntegrityFixtures.octets(oneDigest))])
        #expect(result.hex == "cd2344733c0c214ff93543d436227c6df770934b165fcdbe8e8c0a673fd91f34")
        let afterHeader = result.preimage.dropFirst(27 + 32 + 8 + 13 + 8)
        let firstBlob: [UInt8] = [0, 0, 0, 0, 0, 0, 0, UInt8(one.bytes.count)] + one.bytes
        #expect(Array(afterHeader.prefix(firstBlob.count)) == firstBlob)
    }

    @Test("the streaming accumulator equals the one-shot digest for rows fed in order")
    func accumulatorMatchesOneShot() throws {
        var accumulator = try ScopeDigestAccumulator(
            schemaHash: IntegrityFixtures.octets(IntegrityFixtures.manifestV3Hash), scopeID: "catalog:eu",
            cardinality: 3)
        for (identity, digest) in [
            (Self.r3Identity, Self.r3Digest), (Self.r1Identity, Self.r1Digest), (Self.r2Identity, Self.r2Digest),
        ] {
            try accumulator.add(
                identity: RowIdentity(validating: IntegrityFixtures.octets(identity)),
                rowDigest: IntegrityFixtures.octets(digest))
        }
        #expect(accumulator.rowCount == 3)
        #expect(Hex.encode(try accumulator.finalize()) == Self.s1Digest)

        let empty = try ScopeDigestAccumulator(
            schemaHash: IntegrityFixtures.octets(IntegrityFixtures.manifestV3Hash), scopeID: "user:alice",
            cardinality: 0)
        #expect(Hex.encode(try empty.finalize()) == "c7ca7fe813badec44cb6188e7a9a4c8821c340bd387459247a4fc26a2db3fcba")
    }

    @Test("the streaming accumulator equals the one-shot digest across many staged buffers")
    func accumulatorMatchesOneShotAcrossBuffers() throws {
        let schemaHash = IntegrityFixtures.octets(IntegrityFixtures.manifestV3Hash)
        let manifest = try IntegrityFixtures.manifest(IntegrityFixtures.manifestV3)
        let table = try #require(manifest.tables.first { $0.primaryKeyFieldID == "fld_task_id" })
        // 1,500 identities of varying length (about 200 KB of preimage: the 16 KiB staging buffer fills many times).
        var entries: [(identity: RowIdentity, rowDigest: [UInt8])] = []
        for i in 0..<1500 {
            let key = "k\(i)" + String(repeating: "x", count: i % 97)
            entries.append((try RowIdentity(table: table, primaryKey: .string(key)), SHA256.hash(Array(key.utf8))))
        }
        entries.sort { $0.identity < $1.identity }
        var accumulator = try ScopeDigestAccumulator(
            schemaHash: schemaHash, scopeID: "many", cardinality: UInt64(entries.count))
        for entry in entries { try accumulator.add(identity: entry.identity, rowDigest: entry.rowDigest) }
        let oneShot = try ScopeDigest.compute(schemaHash: schemaHash, scopeID: "many", entries: entries)
        #expect(Hex.encode(try accumulator.finalize()) == oneShot.hex)
    }

    // MARK: Rejections

    @Test("malformed scope inputs are rejected for the rule they break", arguments: [
        ([(numbersMinusOne, zeroDigest), (numbersMinusOne, zeroDigest)], ScopeDigestError.duplicateIdentity(entry: 1)),
        ([(domainHex + "000000000000000b74626c5f7265636f7264730000000000000006666c64", zeroDigest)],
         .invalidIdentity(entry: 0, .truncated)),
        ([(numbersMinusOne + "00", zeroDigest)], .invalidIdentity(entry: 0, .trailingOctets)),
        ([(domainHex + "000000000000000b74626c5f7265636f7264730000000000000006666c645f6964060101", zeroDigest)],
         .invalidIdentity(entry: 0, .invalidTag)),
        ([(numbersMinusOne.replacing("0201ffffffff", with: "0200ffffffff"), zeroDigest)],
         .invalidIdentity(entry: 0, .invalidPresence)),
        ([(numbersMinusOne.replacing("0201ffffffff", with: "0201ffffff"), zeroDigest)],
         .invalidIdentity(entry: 0, .truncated)),
        ([(numbersMinusOne.replacing("0201ffffffff", with: "0301ffffffff"), zeroDigest)],
         .invalidIdentity(entry: 0, .truncated)),
        ([(numbersMinusOne.replacing("0201ffffffff", with: "0101ffffffff"), zeroDigest)],
         .invalidIdentity(entry: 0, .truncated)),
        ([(numbersMinusOne.replacing("0201ffffffff", with: "01010000000000000001ffff"), zeroDigest)],
         .invalidIdentity(entry: 0, .trailingOctets)),
        ([(numbersMinusOne.replacing("0201ffffffff", with: "01010000000000000001ff"), zeroDigest)],
         .invalidIdentity(entry: 0, .invalidUTF8)),
        ([(numbersMinusOne.replacing("74626c5f6e756d62657273", with: "74626c5f6e756d626572ff"), zeroDigest)],
         .invalidIdentity(entry: 0, .invalidUTF8)),
        ([(domainHex + "0000000000000000000000000000000d666c645f6e756d6265725f69640201ffffffff", zeroDigest)],
         .invalidIdentity(entry: 0, .emptyTableID)),
        ([(domainHex + "000000000000000b74626c5f6e756d626572730000000000000000" + "0201ffffffff", zeroDigest)],
         .invalidIdentity(entry: 0, .emptyFieldID)),
        ([(numbersMinusOne.replacing("726f772d6964656e74697479", with: "726f772d6469676573740000"), zeroDigest)],
         .invalidIdentity(entry: 0, .wrongDomain)),
        ([("", zeroDigest)], .invalidIdentity(entry: 0, .truncated)),
        ([(numbersMinusOne, "00")], .invalidRowDigest(entry: 0)),
        ([(numbersMinusOne, String(zeroDigest.dropLast(2)))], .invalidRowDigest(entry: 0)),
        ([(numbersMinusOne, zeroDigest + "00")], .invalidRowDigest(entry: 0)),
        ([(numbersMinusOne, zeroDigest.uppercased().replacing("0", with: "A"))], .invalidRowDigest(entry: 0)),
        ([(numbersMinusOne.uppercased(), zeroDigest)], .malformedHex(entry: 0)),
        ([(numbersMinusOne + "0", zeroDigest)], .malformedHex(entry: 0)),
    ] as [([(String, String)], ScopeDigestError)])
    func entryRules(entries: [(String, String)], expected: ScopeDigestError) {
        #expect(rejection(entries.map { (identity: $0.0, rowDigest: $0.1) }) == expected)
    }

    @Test("an empty scope ID or a schema hash that is not 32 octets is rejected")
    func headerRules() {
        #expect(rejection(scopeID: "", []) == .emptyScopeID)
        #expect(rejection(hash: String(IntegrityFixtures.sortedHashManifestHash.dropLast(2)), []) == .invalidSchemaHash)
        #expect(rejection(hash: IntegrityFixtures.sortedHashManifestHash.uppercased(), []) == .invalidSchemaHash)
        #expect(throws: ScopeDigestError.invalidSchemaHash) {
            try ScopeDigest.compute(schemaHash: [0, 1], scopeID: "s", rawEntries: [])
        }
        #expect(throws: ScopeDigestError.emptyScopeID) {
            _ = try ScopeDigestAccumulator(schemaHash: [UInt8](repeating: 0, count: 32), scopeID: "", cardinality: 0)
        }
    }

    @Test("the accumulator rejects out-of-order, repeated, surplus and missing rows")
    func accumulatorRules() throws {
        let hash = IntegrityFixtures.octets(IntegrityFixtures.manifestV3Hash)
        let r1 = try RowIdentity(validating: IntegrityFixtures.octets(Self.r1Identity))
        let r3 = try RowIdentity(validating: IntegrityFixtures.octets(Self.r3Identity))
        let digest = IntegrityFixtures.octets(Self.r1Digest)

        var outOfOrder = try ScopeDigestAccumulator(schemaHash: hash, scopeID: "s", cardinality: 2)
        try outOfOrder.add(identity: r1, rowDigest: digest)
        #expect(throws: ScopeDigestError.outOfOrder(entry: 1)) { try outOfOrder.add(identity: r3, rowDigest: digest) }

        var repeated = try ScopeDigestAccumulator(schemaHash: hash, scopeID: "s", cardinality: 2)
        try repeated.add(identity: r3, rowDigest: digest)
        #expect(throws: ScopeDigestError.duplicateIdentity(entry: 1)) {
            try repeated.add(identity: r3, rowDigest: digest)
        }

        var surplus = try ScopeDigestAccumulator(schemaHash: hash, scopeID: "s", cardinality: 1)
        try surplus.add(identity: r3, rowDigest: digest)
        #expect(throws: ScopeDigestError.cardinalityMismatch(declared: 1, actual: 2)) {
            try surplus.add(identity: r1, rowDigest: digest)
        }

        var short = try ScopeDigestAccumulator(schemaHash: hash, scopeID: "s", cardinality: 2)
        try short.add(identity: r3, rowDigest: digest)
        #expect(throws: ScopeDigestError.invalidRowDigest(entry: 1)) { try short.add(identity: r1, rowDigest: [1]) }
        do throws(ScopeDigestError) {
            _ = try short.finalize()
            Issue.record("a scope with fewer rows than declared was digested")
        } catch {
            #expect(error == .cardinalityMismatch(declared: 2, actual: 1))
        }
    }

    @Test("structural validity of received identities is checked octet by octet")
    func structuralValidity() throws {
        #expect(RowIdentity.isStructurallyValid(IntegrityFixtures.octets(Self.numbersMinusOne)))
        #expect(RowIdentity.isStructurallyValid(IntegrityFixtures.octets(Self.r1Identity)))
        #expect(!RowIdentity.isStructurallyValid(IntegrityFixtures.octets(Self.numbersMinusOne + "00")))
        #expect(!RowIdentity.isStructurallyValid([]))
        #expect(throws: RowIdentityFormatError.trailingOctets) {
            try RowIdentity(validating: IntegrityFixtures.octets(Self.r1Identity + "00"))
        }
    }
}

@Suite("Scope and row digest checksum objects (integrity §4.7, wire §2.9)")
struct ScopeDigestChecksumTests {
    private static let digest = "7dc168624d03a031b0254550c9e724987bdebd7c3e62a412c6a11b422ab158eb"

    @Test("the exact checksum object parses and is rebuilt member for member")
    func roundTrip() throws {
        let text = #"{"algorithm":"sha256","version":1,"encoding":"hex","digest":"\#(Self.digest)"}"#
        let checksum = try Checksum(json: IntegrityFixtures.json(text))
        #expect(checksum.hex == Self.digest)
        #expect(try CanonicalJSON.string(checksum.json)
            == #"{"algorithm":"sha256","digest":"\#(Self.digest)","encoding":"hex","version":1}"#)
        #expect(checksum.json == (try IntegrityFixtures.json(text)))
        #expect(try Checksum(digest: IntegrityFixtures.octets(Self.digest)) == checksum)
        #expect(throws: ChecksumError.invalidDigest) { try Checksum(digest: [1, 2, 3]) }
    }

    @Test("every deviation from the exact checksum object is rejected", arguments: [
        (#"{"algorithm":"sha256","version":1,"encoding":"hex"}"#, ChecksumError.missingMember("digest")),
        (#"{"algorithm":"sha256","version":1,"encoding":"hex","digest":"D","crc":1}"#, .unknownMember("crc")),
        (#"{"algorithm":"SHA256","version":1,"encoding":"hex","digest":"D"}"#, .wrongAlgorithm),
        (#"{"algorithm":"sha512","version":1,"encoding":"hex","digest":"D"}"#, .wrongAlgorithm),
        (#"{"algorithm":"sha256","version":"1","encoding":"hex","digest":"D"}"#, .wrongVersion),
        (#"{"algorithm":"sha256","version":1.0,"encoding":"hex","digest":"D"}"#, .wrongVersion),
        (#"{"algorithm":"sha256","version":2,"encoding":"hex","digest":"D"}"#, .wrongVersion),
        (#"{"algorithm":"sha256","version":1,"encoding":"base64","digest":"D"}"#, .wrongEncoding),
        (#"{"algorithm":"sha256","version":1,"encoding":"hex","digest":"7DC1"}"#, .invalidDigest),
        (#"{"algorithm":"sha256","version":1,"encoding":"hex","digest":12345}"#, .invalidDigest),
        (#"[]"#, .notAnObject),
    ] as [(String, ChecksumError)])
    func rejections(text: String, expected: ChecksumError) throws {
        let json = try IntegrityFixtures.json(text.replacing(#""D""#, with: "\"\(Self.digest)\""))
        #expect(throws: expected) { try Checksum(json: json) }
    }

    @Test("an uppercase or short digest is rejected")
    func digestAlphabet() throws {
        for digest in [Self.digest.uppercased(), String(Self.digest.dropLast()), Self.digest + "0"] {
            let text = #"{"algorithm":"sha256","version":1,"encoding":"hex","digest":"\#(digest)"}"#
            #expect(throws: ChecksumError.invalidDigest) { try Checksum(json: IntegrityFixtures.json(text)) }
        }
    }
}

/// ``ScopeDigestAccumulator/add(packed:)``, the chunked pass's fast path, against row-by-row adds.
@Suite("Scope digest from packed runs")
struct PackedScopeDigestTests {
    static let schemaHash = [UInt8](repeating: 7, count: 32)

    /// Entries in identity order (arbitrary octets: the accumulator checks order, not structure).
    static func entries(_ count: Int) -> [(identity: [UInt8], digest: [UInt8])] {
        (0..<count).map { i in
            ([1, 2, 3] + withUnsafeBytes(of: UInt32(i * 3 + 1).bigEndian) { Array($0) } + Array(repeating: 9, count: i % 5),
             (0..<32).map { UInt8(truncatingIfNeeded: i &* 31 &+ $0) })
        }
    }

    static func pack(_ entries: some Collection<(identity: [UInt8], digest: [UInt8])>) -> [UInt8] {
        var packed: [UInt8] = []
        for entry in entries {
            withUnsafeBytes(of: UInt64(entry.identity.count).bigEndian) { packed.append(contentsOf: $0) }
            packed += entry.identity + entry.digest
        }
        return packed
    }

    @Test("runs of any split give the row-by-row digest", arguments: [[0, 1000], [0, 1, 999, 1000], [0, 500, 500, 1000]])
    func packedEqualsRows(cuts: [Int]) throws {
        let all = Self.entries(1000)
        var rows = try ScopeDigestAccumulator(schemaHash: Self.schemaHash, scopeID: "s", cardinality: 1000)
        let empty = UnsafeBufferPointer<UInt8>(start: nil, count: 0)
        for entry in all {
            try entry.identity.withUnsafeBufferPointer { identity in
                try entry.digest.withUnsafeBufferPointer {
                    try rows.add(identityHead: identity, identityTail: empty, rowDigest: $0)
                }
            }
        }
        var packed = try ScopeDigestAccumulator(schemaHash: Self.schemaHash, scopeID: "s", cardinality: 1000)
        for (from, to) in zip(cuts, cuts.dropFirst()) {
            let run = Self.pack(all[from..<to])
            let added = try run.withUnsafeBufferPointer { try packed.add(packed: $0) }
            #expect(added.rows == to - from)
        }
        #expect(try packed.finalize() == (try rows.finalize()))
    }

    @Test("a truncated run, a repeat or a step back across runs, or a row beyond the count is refused")
    func packedChecks() throws {
        let all = Self.entries(10)
        func attempt(_ runs: [[UInt8]], cardinality: UInt64 = 10) -> ScopeDigestError? {
            do throws(ScopeDigestError) {
                var accumulator = try ScopeDigestAccumulator(
                    schemaHash: Self.schemaHash, scopeID: "s", cardinality: cardinality)
                for run in runs {
                    let result: Result<Void, ScopeDigestError> = run.withUnsafeBufferPointer { buffer in
                        do throws(ScopeDigestError) {
                            _ = try accumulator.add(packed: buffer)
                            return .success(())
                        } catch {
                            return .failure(error)
                        }
                    }
                    try result.get()
                }
                _ = try accumulator.finalize()
                return nil
            } catch {
                return error
            }
        }
        #expect(attempt([Self.pack(all[0..<5]), Self.pack(all[5..<10])]) == nil)
        #expect(attempt([Array(Self.pack(all).dropLast())]) == .invalidRowDigest(entry: 9))
        #expect(attempt([Self.pack(all[0..<5]), Self.pack(all[4..<9])]) == .duplicateIdentity(entry: 5))
        #expect(attempt([Self.pack(all[5..<10]), Self.pack(all[0..<5])]) == .outOfOrder(entry: 5))
        #expect(attempt([Self.pack(all)], cardinality: 9) == .cardinalityMismatch(declared: 9, actual: 10))
    }
}
