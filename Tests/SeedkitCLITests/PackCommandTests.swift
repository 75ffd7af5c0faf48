import Foundation
import SynchroProtocol
import Testing
import _SeedkitTestSupport

/// `seedkit pack` and `seedkit unpack` run as a user runs them.
@Suite("seedkit pack and unpack")
struct PackCommandTests {
    /// A directory holding `seed.db`: bytes that compress (the CLI does not care that they are not SQLite).
    final class Workspace {
        let directory: TemporaryDirectory
        let database: String
        let content: [UInt8]

        init() throws {
            directory = try TemporaryDirectory(prefix: "seedkit-pack-cli")
            content = (0..<200_000).flatMap { Array("row \($0 % 5_000) of the catalog\n".utf8) }
            database = try directory.write("seed.db", content)
        }

        func read(_ name: String) throws -> [UInt8] {
            Array(try Data(contentsOf: URL(fileURLWithPath: directory.path(name))))
        }

        var names: Set<String> {
            Set((try? FileManager.default.contentsOfDirectory(atPath: directory.url.path)) ?? [])
        }
    }

    static func object(_ run: SeedkitProcess.Outcome) throws -> JSONObject {
        try #require(try StrictJSONParser().parse(Array(run.stdout.dropLast())).objectValue)
    }

    @Test("pack then unpack restores the file, printing sizes and sha256sum-style digests")
    func roundTrip() throws {
        let workspace = try Workspace()
        let pack = try SeedkitProcess.run(["pack", workspace.database, "--level", "3"])
        #expect(pack.status == 0, "\(pack.stderrText)")
        let lines = pack.stdoutText.split(separator: "\n")
        #expect(lines.count == 3)
        #expect(lines.first?.hasPrefix("packed \(workspace.database) into \(workspace.database).zst: ") == true)
        #expect(lines.first?.contains("level 3") == true)
        #expect(lines.dropFirst().first?.hasSuffix("  \(workspace.database)") == true)
        #expect(lines.last?.hasSuffix("  \(workspace.database).zst") == true)

        let unpack = try SeedkitProcess.run(
            ["unpack", workspace.database + ".zst", "--out", workspace.directory.path("copy.db")])
        #expect(unpack.status == 0, "\(unpack.stderrText)")
        #expect(try workspace.read("copy.db") == workspace.content)
        // The database digest line is the same whichever direction printed it.
        #expect(unpack.stdoutText.split(separator: "\n").dropFirst().first?.prefix(64) == lines[1].prefix(64))
    }

    @Test("--json prints one canonical object with both sides' sizes and digests")
    func json() throws {
        let workspace = try Workspace()
        let pack = try SeedkitProcess.run(["pack", workspace.database, "--level", "5", "--json"])
        #expect(pack.status == 0, "\(pack.stderrText)")
        let packed = try Self.object(pack)
        #expect(packed["command"] == .string("pack"))
        #expect(packed["level"] == .number(JSONNumber(5)))
        #expect(packed["output"] == .string(workspace.database + ".zst"))
        let uncompressed = try #require(packed["uncompressed"]?.objectValue)
        #expect(uncompressed["bytes"] == .number(JSONNumber(Int64(workspace.content.count))))
        #expect(uncompressed["sha256"] == .string(Hex.encode(SHA256.hash(workspace.content))))
        let compressed = try #require(packed["compressed"]?.objectValue)
        #expect(compressed["sha256"] == .string(Hex.encode(SHA256.hash(try workspace.read("seed.db.zst")))))
        let ratio = try #require(packed["ratio"]?.numberValue?.doubleValue)
        #expect(ratio > 10)
        #expect(pack.stdoutText == (try CanonicalJSON.string(.object(packed))) + "\n")

        let unpack = try SeedkitProcess.run(
            ["unpack", workspace.database + ".zst", "--out", workspace.directory.path("copy.db"), "--json"])
        #expect(unpack.status == 0, "\(unpack.stderrText)")
        let unpacked = try Self.object(unpack)
        #expect(unpacked["command"] == .string("unpack"))
        #expect(unpacked["level"] == .null)
        #expect(unpacked["uncompressed"]?.objectValue?["sha256"] == uncompressed["sha256"])
        #expect(unpacked["compressed"]?.objectValue?["sha256"] == compressed["sha256"])
    }

    @Test("a damaged frame exits 2 naming the rule and leaves no output")
    func damagedFrame() throws {
        let workspace = try Workspace()
        #expect(try SeedkitProcess.run(["pack", workspace.database, "--level", "1"]).status == 0)
        var bytes = try workspace.read("seed.db.zst")
        bytes[bytes.count - 1] ^= 0xFF
        try workspace.directory.write("damaged.db.zst", bytes)
        let before = workspace.names

        let run = try SeedkitProcess.run(["unpack", workspace.directory.path("damaged.db.zst"), "--json"])
        #expect(run.status == 2)
        #expect(try Self.object(run)["error"]?.objectValue?["rule"] == .string("checksum_mismatch"))
        #expect(run.stderrText.contains("(checksum_mismatch)"))
        #expect(workspace.names == before)

        let truncated = try workspace.directory.write("cut.db.zst", Array(bytes.prefix(bytes.count / 2)))
        let cut = try SeedkitProcess.run(["unpack", truncated])
        #expect(cut.status == 2)
        #expect(cut.stderrText.contains("(truncated_frame)"))
        #expect(!workspace.names.contains("cut.db"))
    }

    @Test("--max-output-bytes refuses a frame declaring more, before writing")
    func outputLimit() throws {
        let workspace = try Workspace()
        #expect(try SeedkitProcess.run(["pack", workspace.database, "--level", "1"]).status == 0)
        try FileManager.default.removeItem(atPath: workspace.database)
        let run = try SeedkitProcess.run(["unpack", workspace.database + ".zst", "--max-output-bytes", "1K"])
        #expect(run.status == 2)
        #expect(run.stderrText.contains("(declared_size_exceeds_limit)"))
        #expect(workspace.names == ["seed.db.zst"])
    }

    @Test("an existing output is refused with status 2 unless --force")
    func existingOutput() throws {
        let workspace = try Workspace()
        try workspace.directory.write("seed.db.zst", Array("keep".utf8))
        let refused = try SeedkitProcess.run(["pack", workspace.database])
        #expect(refused.status == 2)
        #expect(refused.stderrText.contains("(output_exists)"))
        #expect(try workspace.read("seed.db.zst") == Array("keep".utf8))

        let forced = try SeedkitProcess.run(["pack", workspace.database, "--level", "1", "--force"])
        #expect(forced.status == 0, "\(forced.stderrText)")
        #expect(try workspace.read("seed.db.zst").starts(with: [0x28, 0xB5, 0x2F, 0xFD]))
    }

    @Test("usage errors and refused options exit 2", arguments: [
        (["pack"], "missing argument"),
        (["pack", "seed.db", "--level", "high"], "--level needs an integer"),
        (["pack", "seed.db", "--max-output-bytes", "0"], "--max-output-bytes needs a positive byte count"),
        (["unpack", "seed.db"], "does not end in .zst"),
        (["unpack", "a.zst", "b.zst"], "unexpected argument b.zst"),
    ])
    func usageErrors(arguments: [String], message: String) throws {
        let run = try SeedkitProcess.run(arguments)
        #expect(run.status == 2)
        #expect(run.stderrText.contains(message), "\(run.stderrText)")
    }

    @Test("a level outside 1...22 is refused with its rule")
    func invalidLevel() throws {
        let workspace = try Workspace()
        let run = try SeedkitProcess.run(["pack", workspace.database, "--level", "23", "--json"])
        #expect(run.status == 2)
        #expect(try Self.object(run)["error"]?.objectValue?["rule"] == .string("invalid_level"))
        #expect(workspace.names == ["seed.db"])
    }

    @Test("a missing input exits 2 with not_found, as for every command (issue #18)")
    func missingInput() throws {
        let workspace = try Workspace()
        let run = try SeedkitProcess.run(["pack", workspace.directory.path("absent.db")])
        #expect(run.status == 2)
        #expect(run.stderrText.contains("absent.db: No such file or directory (not_found)"))
    }
}
