import Foundation
import SQLiteKit
import SynchroProtocol
import Testing
import _SeedkitTestSupport
@testable import SeedArtifacts

/// Issue #20, "nothing secret left in the file": a credential written into a real exported seed and deleted again
/// without `secure_delete` survives in a free page, a freeblock, a page's unallocated space or a freed overflow
/// page; `verify` (and so `install`) must find each by its page, without printing it, and every seed the exporter
/// writes must scan clean.
@Suite("Residue corpus: deleted credentials left in the file's bytes")
struct ResidueCorpusTests {
    static let jwt = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJhbGljZSIsImV4cCI6MTl9.c2lnbmF0dXJlLW9mLXRoZS10b2tlbg"
    static let bearer = "Bearer s3cr3t-0123456789abcdefghijKLMN"
    static let pem = "-----BEGIN PRIVATE KEY-----MC4CAQAwBQYDK2VwBCIEIHh5eHl4eXh5eHl4eXh5eHl4eXh5"
    static let aws = "AKIAIOSFODNN7EXAMPL3"
    /// The first category, by key.
    static let firstCategory = "id = (SELECT min(id) FROM categories)"
    static let firstProduct = "id = (SELECT min(id) FROM products)"

    static let corpus: [Tamper] = [
        Tamper("a JWT left in a free page", .credentialResidue, installer: nil, sql: """
            PRAGMA secure_delete = OFF;
            CREATE TABLE residue (x TEXT);
            INSERT INTO residue VALUES ('\(jwt)');
            DROP TABLE residue;
            """),
        Tamper("a Bearer credential left in a freeblock", .credentialResidue, installer: nil, sql: """
            PRAGMA secure_delete = OFF;
            INSERT INTO categories (id, name) VALUES (9001, '\(bearer)');
            INSERT INTO categories (id, name) VALUES (9002, 'below the freed cell');
            DELETE FROM categories WHERE id = 9001;
            """),
        Tamper("a PEM private key left in a page's unallocated space", .credentialResidue, installer: nil, sql: """
            PRAGMA secure_delete = OFF;
            UPDATE categories SET name = '\(pem)' || name WHERE \(firstCategory);
            UPDATE categories SET name = substr(name, \(pem.utf8.count + 1)) WHERE \(firstCategory);
            """),
        Tamper("an AWS access key left in a freed overflow page", .credentialResidue, installer: nil, sql: """
            PRAGMA secure_delete = OFF;
            UPDATE products SET title = title || char(1) || replace(hex(zeroblob(20000)), '00', 'xx') || '\(aws)'
            WHERE \(firstProduct);
            UPDATE products SET title = substr(title, 1, instr(title, char(1)) - 1) WHERE \(firstProduct);
            """),
    ]

    @Test("each planted credential is found by its page, never printed, and the seed is not installed",
          .timeLimit(.minutes(2)), arguments: corpus)
    func residueIsFound(_ tamper: Tamper) throws {
        let directory = try TemporaryDirectory(prefix: "seedkit-residue")
        let seed = try VerifyFixtures.cleanCopy(in: directory)
        try tamper.apply(seed)
        let report = try SeedVerifier.verify(path: seed)
        let residue = report.findings.filter { $0.check == .credentialResidue }
        #expect(residue.count == 1, "findings: \(report.findings)")
        let pageCount = try #require(VerifyFixtures.scalar(seed, "PRAGMA page_count")?.integerValue)
        #expect(residue.allSatisfy { ($0.page ?? 0) >= 2 && ($0.page ?? 0) <= pageCount })
        if !tamper.name.contains("freeblock") {
            #expect(report.findings.map(\.check) == [.credentialResidue], "only the residue: \(report.findings)")
        }
        let printed = report.findings.map(\.description).joined() + String(
            decoding: try CanonicalJSON.encode(report.json), as: UTF8.self)
        for secret in [Self.jwt, Self.bearer, Self.pem, Self.aws] {
            #expect(!printed.contains(secret.suffix(16)))
        }
        #expect(throws: SeedInstallError.self) {
            try SeedInstaller.install(seed: seed, to: directory.path("app.db"))
        }
        #expect(!FileManager.default.fileExists(atPath: directory.path("app.db")))
    }

    @Test("every seed the exporter writes scans clean")
    func exportedSeedsScanClean() throws {
        let exports = try VerifyFixtures.exports.get()
        for seed in [exports.first, exports.second] {
            #expect(CredentialResidueScan.scan(path: seed) == [])
        }
    }

    @Test("each shape is found on its page; near misses are not")
    func shapes() {
        let pageSize = 512
        func page(_ text: String) -> [UInt8] {
            var bytes = Array(text.utf8)
            bytes += Array(repeating: 0, count: pageSize - bytes.count % pageSize)
            return bytes
        }
        let file = page("nothing here") + page("x" + Self.jwt) + page("token: " + Self.bearer.lowercased())
            + page(Self.pem) + page(Self.aws) + page("AIza" + String(repeating: "Q", count: 35))
            + page(#"{"type": "service_account", "private_key_id": "abc"}"#)
            + page("eyJhbGciOiJIUzI1NiJ9.notjwt Bearer short AKIAIOSFODNN7EXAM -----BEGIN PUBLIC KEY-----")
        let hits = file.withUnsafeBytes { CredentialResidueScan.scan($0, pageSize: Int64(pageSize)) }
        #expect(hits == [
            .init(page: 2, shape: .jwt), .init(page: 3, shape: .bearer), .init(page: 4, shape: .pemPrivateKey),
            .init(page: 5, shape: .awsAccessKey), .init(page: 6, shape: .googleAPIKey),
            .init(page: 7, shape: .gcpServiceAccountKey),
        ])
    }
}

/// The scan releases the mapped pages it has passed (issue #21): it must never read below the index it reported.
@Suite("Credential residue scan: passed pages are never read again")
struct ResidueScanReleaseTests {
    @Test("a key straddling each release point is found although everything reported passed is wiped")
    func keysAcrossReleasePointsAreFound() throws {
        let lag = CredentialResidueScan.releaseLag
        var bytes = [UInt8](repeating: 0, count: 2 * lag + 4096)
        let key = Array("-----BEGIN RSA PRIVATE KEY-----".utf8)
        for boundary in [lag, 2 * lag] {
            bytes.replaceSubrange((boundary - 10)..<(boundary - 10 + key.count), with: key)
        }
        var reported: [Int] = []
        let hits = bytes.withUnsafeMutableBytes { buffer in
            CredentialResidueScan.scan(UnsafeRawBufferPointer(buffer), pageSize: 4096) { index in
                reported.append(index)
                // What the real scan releases: everything more than the lag behind the index.
                if index > lag, let base = buffer.baseAddress { memset(base, 0xAA, index - lag) }
            }
        }
        #expect(reported == [lag, 2 * lag])
        #expect(hits.map(\.page) == [Int64((lag - 10) / 4096 + 1), Int64((2 * lag - 10) / 4096 + 1)])
        #expect(hits.allSatisfy { $0.shape == .pemPrivateKey })
    }
}
