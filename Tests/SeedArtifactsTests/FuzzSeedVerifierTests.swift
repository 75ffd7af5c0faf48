import Foundation
import SQLiteKit
import SeedArtifacts
import SeedSources
import Testing
import _SeedkitTestSupport

/// Seeded mutation fuzzing of `SeedVerifier.verify` (docs/reliability.md): a real small exported seed (demo
/// dataset, 20 catalog products, 60 rows) is damaged byte by byte (bit flips, page copies, zeroed pages, insertion,
/// deletion, truncation), value by value through SQL (a random cell of a random table set to another storage class
/// or an extreme value, rows deleted or duplicated, schema objects dropped, the header's version fields changed),
/// and as a zstd frame. Every verification must end with a report or a ``SeedInputError`` — never a crash or a
/// hang — and leave no temporary file behind.
@Suite("Fuzz: seed verifier", .serialized)
struct FuzzSeedVerifierTests {
    /// The clean seed's bytes and its packed frame, exported once per test process.
    static let seed: Result<(database: [UInt8], packed: [UInt8]), FuzzSeedFailure> = {
        do {
            let server = try RunningServer(rows: 20)
            let directory = try TemporaryDirectory(prefix: "seedkit-fuzz-seed")
            let path = directory.path("seed.db")
            let source = try HTTPExportSource(baseURL: server.baseURL, operatorToken: RunningServer.operatorToken)
            _ = try SeedExporter.export(from: source, to: path, options: SeedExportOptions(pageLimit: 10))
            _ = try SeedPacker.pack(path, to: path + ".zst", options: PackOptions(level: 3, workers: 1))
            return .success((
                Array(try Data(contentsOf: URL(fileURLWithPath: path))),
                Array(try Data(contentsOf: URL(fileURLWithPath: path + ".zst")))))
        } catch {
            return .failure(FuzzSeedFailure(description: "\(error)"))
        }
    }()

    struct FuzzSeedFailure: Error, CustomStringConvertible {
        let description: String
    }

    @Test("a damaged seed yields findings or a typed input error, never a crash, a hang or a leftover file")
    func verifierOnDamagedSeeds() throws {
        let (database, packed) = try Self.seed.get()
        let work = try TemporaryDirectory(prefix: "seedkit-fuzz-verify")
        let clean = try SeedVerifier.verify(path: try work.write("clean.db", database))
        #expect(clean.ok, "the unmutated seed verifies: \(clean.findings.prefix(3))")
        let mutator = FuzzMutator(corpus: [database], structureAware: false)
        var unnoticed: [String] = []
        // A step's input is the kind of damage, a description of it (SQL damage only) and the damaged file.
        let report = FuzzCampaign(target: "seed_verifier", hangBound: .seconds(10)).run { random in
            switch random.below(10) {
            case 0..<4: return Self.framed(.pages, "", Self.damagePages(database, using: &random))
            case 4..<8:
                let (bytes, description) = Self.damageValues(database, in: work, using: &random)
                return Self.framed(.values, description, bytes)
            case 8: return Self.framed(.bytes, "", mutator.mutate(database, using: &random).bytes)
            default:
                let frame = FuzzMutator(corpus: [packed], structureAware: false).mutate(packed, using: &random).bytes
                return Self.framed(.packed, "", frame)
            }
        } execute: { input throws(FuzzCampaign.Violation) in
            let (kind, description, bytes) = Self.unframed(input)
            let outcome = try Self.verify(bytes, in: work)
            if kind == .values && outcome == "ok" && !description.isEmpty { unnoticed.append(description) }
            return "\(kind.rawValue):\(outcome)"
        }
        let distinct = Array(Set(unnoticed)).sorted()
        print("fuzz seed_verifier: SQL damage that verified ok (\(unnoticed.count)): \(distinct.prefix(20))")
        #expect(report.executions > 0)
        #expect(report.outcomes.keys.contains { $0.contains(":findings.") }, "some damage is found by the checks")
        #expect(report.findings.isEmpty, "\(report.findings.prefix(3))")
    }

    enum Damage: UInt8 {
        case pages, values, bytes, packed
    }

    static func framed(_ kind: Damage, _ description: String, _ bytes: [UInt8]) -> [UInt8] {
        let text = Array(description.utf8.prefix(255))
        return [kind.rawValue, UInt8(text.count)] + text + bytes
    }

    static func unframed(_ input: [UInt8]) -> (Damage, String, [UInt8]) {
        guard input.count >= 2, let kind = Damage(rawValue: input[0]), input.count >= 2 + Int(input[1]) else {
            return (.bytes, "", input)
        }
        let length = Int(input[1])
        return (kind, String(decoding: input[2..<(2 + length)], as: UTF8.self), Array(input[(2 + length)...]))
    }

    /// Verifies `input` written to a fresh file; the outcome class is `ok`, `findings.<first check>` or
    /// `input.<rule>`. The verifier's temporary directory must be empty afterwards.
    static func verify(_ input: [UInt8], in work: TemporaryDirectory) throws(FuzzCampaign.Violation) -> String {
        let path = work.path("candidate.db")
        let scratch = work.path("scratch")
        do {
            try? FileManager.default.removeItem(atPath: path)
            try FileManager.default.createDirectory(atPath: scratch, withIntermediateDirectories: true)
            try Data(input).write(to: URL(fileURLWithPath: path))
        } catch {
            throw FuzzCampaign.Violation("cannot write the candidate: \(error)")
        }
        let outcome: String
        do throws(SeedInputError) {
            let report = try SeedVerifier.verify(
                path: path, options: SeedVerificationOptions(temporaryDirectory: scratch))
            outcome = report.findings.first.map { "findings.\($0.check.rawValue)" } ?? "ok"
        } catch {
            outcome = "input.\(error.rule)"
        }
        let left = (try? FileManager.default.contentsOfDirectory(atPath: scratch)) ?? []
        guard left.isEmpty else {
            throw FuzzCampaign.Violation("verification left \(left.count) temporary files (\(outcome))")
        }
        return outcome
    }

    /// Overwrite-style damage that keeps the file's length: bit flips and interesting bytes (half of them in the
    /// first page, which holds the header and the schema), a page copied over another, a page zeroed.
    static func damagePages(_ database: [UInt8], using random: inout SeededRandom) -> [UInt8] {
        var bytes = database
        // The header's page size (octets 16–17, 1 meaning 65,536), so that page damage covers whole pages.
        let field = bytes.count > 17 ? Int(bytes[16]) << 8 | Int(bytes[17]) : 4096
        let pageSize = field == 1 ? 65_536 : max(512, field)
        let pages = max(1, bytes.count / pageSize)
        for _ in 0..<random.inRange(1...3) {
            switch random.below(5) {
            case 0, 1:
                let limit = random.chance(0.5) ? min(pageSize, bytes.count) : bytes.count
                bytes[random.below(limit)] ^= 1 << UInt8(random.below(8))
            case 2:
                let offset = random.below(min(100, bytes.count))
                bytes[offset] = random.pick([0x00, 0x01, 0x02, 0x7F, 0x80, 0xFF]) ?? 0
            case 3:
                let from = random.below(pages) * pageSize, to = random.below(pages) * pageSize
                guard from + pageSize <= bytes.count, to + pageSize <= bytes.count else { break }
                bytes.replaceSubrange(to..<(to + pageSize), with: bytes[from..<(from + pageSize)])
            default:
                let page = random.below(pages) * pageSize
                guard page + pageSize <= bytes.count else { break }
                bytes.replaceSubrange(page..<(page + pageSize), with: repeatElement(0, count: pageSize))
            }
        }
        return bytes
    }

    /// Damage made through SQL on a copy: well-formed SQLite holding values and objects the seed format forbids.
    static func damageValues(_ database: [UInt8], in work: TemporaryDirectory, using random: inout SeededRandom)
        -> ([UInt8], String)
    {
        var applied: [String] = []
        let path = work.path("mutating.db")
        for suffix in ["", "-journal", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: path + suffix) }
        guard (try? Data(database).write(to: URL(fileURLWithPath: path))) != nil,
              let connection = try? Connection(path: path, mode: .readWrite)
        else { return (database, "") }
        let tables = (try? connection.query(
            "SELECT name FROM sqlite_schema WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name"
        ) { try $0.text(at: 0) }) ?? []
        for _ in 0..<random.inRange(1...3) {
            guard let table = random.pick(tables) else { break }
            let quoted = "\"\(table)\""
            let count = (try? connection.scalar("SELECT count(*) FROM \(quoted)"))?.integerValue ?? 0
            let row = "(SELECT rowid FROM \(quoted) ORDER BY rowid LIMIT 1 OFFSET \(random.below(Int(max(count, 1)))))"
            switch random.below(8) {
            case 0..<4:
                let columns = (try? connection.query("SELECT name FROM pragma_table_info(?)", [.text(table)]) {
                    try $0.text(at: 0)
                }) ?? []
                guard let column = random.pick(columns) else { break }
                let value = extremeValue(using: &random)
                if (try? connection.run(
                    "UPDATE \(quoted) SET \"\(column)\" = ? WHERE rowid = \(row)", [value])) != nil,
                    connection.changes > 0
                {
                    applied.append("set \(table).\(column) = \(describe(value))")
                }
            case 4:
                if (try? connection.run("DELETE FROM \(quoted) WHERE rowid = \(row)")) != nil, connection.changes > 0 {
                    applied.append("delete a row of \(table)")
                }
            case 5:
                if (try? connection.run("INSERT INTO \(quoted) SELECT * FROM \(quoted) WHERE rowid = \(row)")) != nil,
                   connection.changes > 0
                {
                    applied.append("duplicate a row of \(table)")
                }
            case 6:
                let objects = (try? connection.query(
                    "SELECT type, name FROM sqlite_schema WHERE name NOT LIKE 'sqlite_%' ORDER BY name"
                ) { (try $0.text(at: 0), try $0.text(at: 1)) }) ?? []
                if let (type, name) = random.pick(objects),
                   (try? connection.execute("DROP \(type) \"\(name)\"")) != nil
                {
                    applied.append("drop \(type) \(name)")
                }
            default:
                let pragma = random.chance(0.5) ? "user_version" : "application_id"
                let value = random.pick([-1, 0, 1, 2, 99, Int(Int32.max)]) ?? 0
                if (try? connection.execute("PRAGMA \(pragma) = \(value)")) != nil {
                    applied.append("pragma \(pragma) = \(value)")
                }
            }
        }
        connection.close()
        let bytes = (try? Array(Data(contentsOf: URL(fileURLWithPath: path)))) ?? database
        return (bytes, applied.joined(separator: "; "))
    }

    /// The storage class and size of a value, for the report of damage the checks did not notice.
    static func describe(_ value: SQLiteValue) -> String {
        switch value {
        case .null: "NULL"
        case .integer(let number): "integer \(number)"
        case .real(let number): "real \(number)"
        case .text(let text): "text(\(text.utf8.count) bytes\(text.utf8.count <= 24 ? ": \(text)" : ""))"
        case .blob(let bytes): "blob(\(bytes.count) bytes)"
        }
    }

    /// A value of a random storage class, often on an edge of what a column may hold.
    static func extremeValue(using random: inout SeededRandom) -> SQLiteValue {
        switch random.below(9) {
        case 0: return .null
        case 1: return .integer(random.pick([Int64.min, Int64.max, -1, 0, 1, 1 << 53]) ?? 0)
        case 2: return .real(random.pick([Double.infinity, -Double.infinity, 1e308, -0.0, 0.5]) ?? 0)
        case 3: return .text("")
        case 4: return .text(String(repeating: "x", count: random.inRange(1...70_000)))
        case 5: return .text(random.pick(["{", "[]", "{\"algorithm\":\"sha256\"}", "sc1.e30.AA", "not-a-uuid", "-1"])
            ?? "")
        case 6: return .blob((0..<random.inRange(0...64)).map { _ in UInt8(truncatingIfNeeded: random.next()) })
        case 7: return .text("é\u{0}\u{1F600}")
        default: return .integer(Int64(truncatingIfNeeded: random.next()))
        }
    }
}
