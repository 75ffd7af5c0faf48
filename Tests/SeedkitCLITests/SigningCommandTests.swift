import Foundation
import Testing
import _SeedkitTestSupport

/// `seedkit keygen`, `seedkit sign`, and `--trusted-key` on `verify` and `unpack` (with `--patch-from`), run as a
/// release process runs them: the private key never printed, refusals with exit status 6 before anything else.
@Suite("seedkit keygen, sign and --trusted-key")
struct SigningCommandTests {
    let directory: TemporaryDirectory

    init() throws {
        directory = try TemporaryDirectory(prefix: "seedkit-signing-cli")
    }

    func path(_ name: String) -> String { directory.path(name) }

    func keygen(_ name: String) throws -> String {
        let run = try SeedkitProcess.run(["keygen", "--out", path(name)])
        #expect(run.status == 0, "\(run.stderrText)")
        return String(run.stdoutText.split(separator: "\n").first ?? "")
    }

    @Test func keygenWritesAPrivateFileOnlyItsOwnerReadsAndPrintsOnlyTheKeyID() throws {
        let run = try SeedkitProcess.run(["keygen", "--out", path("release.key")])
        #expect(run.status == 0, "\(run.stderrText)")
        let keyID = String(run.stdoutText.split(separator: "\n").first ?? "")
        #expect(keyID.count == 64 && keyID.allSatisfy(\.isHexDigit))
        #expect(!(run.stdoutText + run.stderrText).contains("PRIVATE KEY"))
        let attributes = try FileManager.default.attributesOfItem(atPath: path("release.key"))
        #expect((attributes[.posixPermissions] as? Int) == 0o600)
        let key = String(decoding: try Data(contentsOf: URL(fileURLWithPath: path("release.key"))), as: UTF8.self)
        #expect(key.hasPrefix("-----BEGIN PRIVATE KEY-----"))

        let again = try SeedkitProcess.run(["keygen", "--out", path("release.key")])
        #expect(again.status == 2 && again.stderrText.contains("key_exists"))
        #expect(String(decoding: try Data(contentsOf: URL(fileURLWithPath: path("release.key"))), as: UTF8.self) == key)
    }

    @Test func verifyAndUnpackCheckTheSignatureFirstAndRefuseWithStatus6() throws {
        _ = try keygen("release.key")
        _ = try keygen("other.key")
        let previous = (0..<100_000).flatMap { Array("row \($0 % 5_000) of the catalog\n".utf8) }
        var next = previous
        for index in stride(from: 1_000, to: next.count, by: 50_000) { next[index] = UInt8(ascii: "#") }
        let old = try directory.write("previous.db", previous)
        let seed = try directory.write("seed.db", next)
        #expect(try SeedkitProcess.run(["pack", seed, "--level", "3"]).status == 0)
        #expect(try SeedkitProcess.run(["pack", seed, "--level", "3", "--patch-from", old]).status == 0)
        let files = [seed, seed + ".zst", seed + ".patch.zst"]

        let unsigned = try SeedkitProcess.run(["verify", seed + ".zst", "--trusted-key", path("release.key.pub")])
        #expect(unsigned.status == 6 && unsigned.stdoutText.contains("signature_missing"))

        let sign = try SeedkitProcess.run(["sign"] + files + ["--key-file", path("release.key")])
        #expect(sign.status == 0, "\(sign.stderrText)")
        #expect(!(sign.stdoutText + sign.stderrText).contains("PRIVATE KEY"))

        // The signature holds, so verify goes on to the seed checks: these bytes are not a database (2, not 6).
        let trusted = try SeedkitProcess.run(["verify", seed + ".zst", "--trusted-key", path("release.key.pub")])
        #expect(trusted.status == 2, "\(trusted.stdoutText)\(trusted.stderrText)")
        let untrusted = try SeedkitProcess.run(["verify", seed + ".zst", "--trusted-key", path("other.key.pub")])
        #expect(untrusted.status == 6 && untrusted.stdoutText.contains("signature_untrusted"))
        let rotated = try SeedkitProcess.run(
            ["verify", seed + ".zst", "--trusted-key", path("other.key.pub"), "--trusted-key", path("release.key.pub")])
        #expect(rotated.status == 2)

        // unpack --patch-from rebuilds the signed seed and checks its signed digest before publishing.
        let out = path("rebuilt.db")
        let apply = try SeedkitProcess.run([
            "unpack", seed + ".patch.zst", "--patch-from", old, "--out", out, "--trusted-key", path("release.key.pub"),
        ])
        #expect(apply.status == 0, "\(apply.stderrText)")
        #expect(Array(try Data(contentsOf: URL(fileURLWithPath: out))) == next)

        // A seed.db that is not the signed one: the patch rebuilds it, the digest differs, nothing is published.
        try Data(next + [0x0A]).write(to: URL(fileURLWithPath: seed))
        #expect(try SeedkitProcess.run(["sign", seed, seed + ".zst", seed + ".patch.zst", "--key-file", path("other.key"),
                                       "--force"]).status == 0)
        let mismatch = try SeedkitProcess.run([
            "unpack", seed + ".patch.zst", "--patch-from", old, "--out", path("second.db"),
            "--trusted-key", path("other.key.pub"),
        ])
        #expect(mismatch.status == 6, "\(mismatch.stdoutText)\(mismatch.stderrText)")
        #expect(!FileManager.default.fileExists(atPath: path("second.db")))
    }
}
