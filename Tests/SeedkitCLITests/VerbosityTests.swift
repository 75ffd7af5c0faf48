import Foundation
import SynchroHTTP
import SynchroProtocol
import Testing
import _SeedkitTestSupport

/// `--quiet` and `--verbose` on every command, run as a user runs them (docs/cli.md, "Quiet and verbose"):
/// quiet drops the informational lines and keeps the requested data, verbose adds `COMMAND: …` detail on standard
/// error and never changes standard output, both at once is a usage error, and every command's help lists them.
@Suite("--quiet and --verbose", .serialized)
struct VerbosityTests {
    static let tokenVariable = "SEEDKIT_TEST_VERBOSITY_TOKEN"
    static let operatorVariable = "SEEDKIT_TEST_VERBOSITY_OPERATOR"
    static let environment = [
        tokenVariable: "secret-alice", operatorVariable: RunningServer.operatorToken,
    ]

    /// Every command, with arguments that reach its parser.
    static let commands: [[String]] = [
        ["conformance", "vectors", "v.json"], ["digest", "manifest"], ["serve"], ["sync"], ["validate"],
        ["rebuild"], ["sql"], ["inspect"], ["pack", "x"], ["unpack", "x.zst"], ["export"], ["verify", "x"],
        ["install", "x"], ["pipeline", "run", "x.json"], ["rehearse", "x"],
    ]

    let server: RunningServer
    let directory: TemporaryDirectory

    init() throws {
        server = try RunningServer(rows: 60)
        directory = try TemporaryDirectory(prefix: "seedkit-verbosity")
    }

    /// One command run normally, with `--quiet` and with `--verbose`.
    struct Runs {
        let normal: SeedkitProcess.Outcome
        let quiet: SeedkitProcess.Outcome
        let verbose: SeedkitProcess.Outcome
    }

    /// Runs `arguments(mode)` three times; `mode` is `normal`, `quiet` or `verbose`, for per-run output names.
    func runAll(_ arguments: (String) throws -> [String]) throws -> Runs {
        func run(_ mode: String, _ flags: [String]) throws -> SeedkitProcess.Outcome {
            try SeedkitProcess.run(try arguments(mode) + flags, environment: Self.environment)
        }
        return Runs(normal: try run("normal", []), quiet: try run("quiet", ["--quiet"]),
                    verbose: try run("verbose", ["--verbose"]))
    }

    /// The shared expectations: every run succeeds; `informational` is in the normal output and nowhere in the
    /// quiet one, whose standard error is empty; verbose standard error has `COMMAND: <detail>` for each detail
    /// and normal standard error has no such line; no secret is printed.
    func expect(
        _ runs: Runs, command: String, informational: String, details: [String],
        sourceLocation: SourceLocation = #_sourceLocation
    ) {
        for (name, run) in [("normal", runs.normal), ("quiet", runs.quiet), ("verbose", runs.verbose)] {
            #expect(run.status == 0, "\(command) \(name): \(run.stderrText)", sourceLocation: sourceLocation)
            for secret in Self.environment.values {
                #expect(!(run.stdoutText + run.stderrText).contains(secret), sourceLocation: sourceLocation)
            }
        }
        #expect((runs.normal.stdoutText + runs.normal.stderrText).contains(informational),
                "\(command): \(runs.normal.stdoutText)", sourceLocation: sourceLocation)
        #expect(!runs.quiet.stdoutText.contains(informational), "\(command): \(runs.quiet.stdoutText)",
                sourceLocation: sourceLocation)
        #expect(runs.quiet.stderrText.isEmpty, "\(command): \(runs.quiet.stderrText)", sourceLocation: sourceLocation)
        #expect(!runs.normal.stderrText.contains("\(command): "), "\(command): \(runs.normal.stderrText)",
                sourceLocation: sourceLocation)
        for detail in details {
            #expect(runs.verbose.stderrText.contains("\(command): \(detail)"),
                    "\(command): no '\(detail)' in \(runs.verbose.stderrText)", sourceLocation: sourceLocation)
        }
    }

    // MARK: - Fixtures

    /// A seed exported from the server.
    func seed() throws -> String {
        let path = directory.path("seed.db")
        guard !FileManager.default.fileExists(atPath: path) else { return path }
        let export = try SeedkitProcess.run(
            ["export", "--source", server.baseURL, "--out", path, "--token-env", Self.operatorVariable, "--quiet"],
            environment: Self.environment)
        try #require(export.status == 0, "\(export.stderrText)")
        return path
    }

    /// A client store synced once from the server, as alice.
    func store() throws -> String {
        let path = directory.path("app.db")
        let sync = try SeedkitProcess.run(syncArguments(path), environment: Self.environment)
        try #require(sync.status == 0, "\(sync.stderrText)")
        return path
    }

    func syncArguments(_ path: String) -> [String] {
        ["sync", "--server", server.baseURL, "--db", path, "--token-env", Self.tokenVariable]
    }

    // MARK: - Every command

    @Test("both flags at once are a usage error (exit 2) for every command", arguments: commands)
    func bothFlagsAreAUsageError(_ command: [String]) throws {
        let run = try SeedkitProcess.run(command + ["--quiet", "--verbose"])
        #expect(run.status == 2)
        #expect(run.stderrText.hasPrefix("seedkit: --quiet and --verbose exclude each other (usage)\n"), "\(run.stderrText)")
        #expect(run.stdoutText.isEmpty)
    }

    @Test("every command's help lists --quiet and --verbose, and seedkit help explains them")
    func helpListsTheFlags() throws {
        for command in Self.commands.map(\.[0]) {
            let help = try SeedkitProcess.run(["help", command])
            #expect(help.status == 0)
            #expect(help.stdoutText.contains("\n  --quiet ") && help.stdoutText.contains("\n  --verbose "),
                    "help \(command): \(help.stdoutText)")
        }
        let usage = try SeedkitProcess.run(["help"]).stdoutText
        #expect(usage.contains("Every command also takes --quiet"))
        #expect(usage.contains("--verbose (add detail on\nstandard error"))
    }

    @Test("conformance: quiet keeps only failing vectors; verbose lists each vector",
          .enabled(if: RepositoryLayout.canonicalVectors != nil))
    func conformance() throws {
        let path = try #require(RepositoryLayout.canonicalVectors).path
        let runs = try runAll { _ in ["conformance", "vectors", path] }
        expect(runs, command: "conformance", informational: " passed, 0 failed",
               details: ["vector set ", "pass VEC-", "aggregate matches", "ran "])
        #expect(runs.quiet.stdoutText.isEmpty)
        #expect(runs.verbose.stdoutText == runs.normal.stdoutText)
    }

    @Test("digest: the digest is the result, so quiet changes nothing; verbose says what was read")
    func digest() throws {
        let path = RepositoryLayout.root.appendingPathComponent("docs/examples/manifest.json").path
        let runs = try runAll { _ in ["digest", "manifest", path] }
        #expect(runs.normal.stdoutText.contains(#""schema_hash":"#))
        #expect(runs.quiet.stdoutText == runs.normal.stdoutText)
        #expect(runs.verbose.stdoutText == runs.normal.stdoutText)
        #expect(runs.quiet.stderrText.isEmpty && runs.normal.stderrText.isEmpty)
        #expect(runs.verbose.stderrText.contains("digest: manifest: "))
        #expect(runs.verbose.stderrText.contains(" octets from \(path)\n"))
        #expect(runs.verbose.stderrText.contains("digest: manifest computed in "))
    }

    @Test("sync: quiet prints nothing on success; verbose names the store, server and credential source, and events")
    func sync() throws {
        let store = try store()
        let runs = try runAll { _ in syncArguments(store) }
        expect(runs, command: "sync", informational: "synced: 0 rows, 2 scopes verified, 0 mutations pushed\n",
               details: ["store \(store)\n", "server \(server.baseURL), credential from the variable "
                         + "\(Self.tokenVariable), app version 1.0.0, page limit 100\n",
                         "connect started\n", "pull finished\n", "cycle: 1 connect, 1 pull, 0 push, 0 rebuild",
                         "finished in "])
        #expect(runs.quiet.stdoutText.isEmpty)
        #expect(runs.verbose.stdoutText == runs.normal.stdoutText)
    }

    @Test("sync --json: the JSON Lines are the same with --quiet and --verbose")
    func syncJSON() throws {
        let store = try store()
        let runs = try runAll { _ in syncArguments(store) + ["--json"] }
        #expect(runs.normal.status == 0 && runs.quiet.status == 0 && runs.verbose.status == 0)
        #expect(runs.normal.lines.last?.hasPrefix(#"{"event":"summary""#) == true)
        #expect(runs.quiet.stdoutText == runs.normal.stdoutText)
        #expect(runs.verbose.stdoutText == runs.normal.stdoutText)
        #expect(runs.quiet.stderrText.isEmpty)
        #expect(runs.verbose.stderrText.contains("sync: connect started\n"))
    }

    @Test("rebuild: quiet prints nothing; verbose names the scopes rebuilt")
    func rebuild() throws {
        let store = try store()
        let runs = try runAll { _ in
            ["rebuild", "--db", store, "--scope", "catalog", "--server", server.baseURL, "--token-env",
             Self.tokenVariable]
        }
        expect(runs, command: "rebuild", informational: "synced: ",
               details: ["rebuilding scope(s) catalog\n", "rebuild of catalog requested\n",
                         "rebuild of catalog completed\n", "catalog verified\n"])
        #expect(runs.quiet.stdoutText.isEmpty)
    }

    @Test("validate: quiet keeps findings only (none here); verbose says the store is opened read-only")
    func validate() throws {
        let store = try store()
        let runs = try runAll { _ in ["validate", "--db", store] }
        expect(runs, command: "validate", informational: "ok: the client store is consistent\n",
               details: ["store \(store), opened read-only\n", "2 scope(s) checked in "])
        #expect(runs.normal.stdoutText.contains("scope catalog: "))
        #expect(runs.quiet.stdoutText.isEmpty)
        #expect(runs.verbose.stdoutText == runs.normal.stdoutText)

        let compared = try runAll { _ in
            ["validate", "--db", store, "--server", server.baseURL, "--token-env", Self.tokenVariable]
        }
        expect(compared, command: "validate", informational: "server: matches",
               details: ["comparing with \(server.baseURL), credential from the variable \(Self.tokenVariable)\n"])
    }

    @Test("sql: rows read are the result and stay; a write's status line goes with --quiet")
    func sql() throws {
        let store = try store()
        let read = try runAll { _ in ["sql", "--db", store, "SELECT count(*) AS n FROM notes"] }
        #expect(read.normal.status == 0 && read.quiet.status == 0 && read.verbose.status == 0)
        #expect(read.normal.stdoutText.hasSuffix("(1 row)\n"))
        #expect(read.quiet.stdoutText == read.normal.stdoutText)
        #expect(read.verbose.stdoutText == read.normal.stdoutText)
        #expect(read.quiet.stderrText.isEmpty && read.normal.stderrText.isEmpty)
        #expect(read.verbose.stderrText.contains("sql: a read: 1 row(s) in "))

        let write = try runAll { mode in
            ["sql", "--db", store, SqlInspectCommandTests.noteInsert, "n-\(mode)", "alice", "a title", "0",
             "2026-01-01T00:00:00.000Z"]
        }
        expect(write, command: "sql", informational: "1 row changed\n",
               details: ["store \(store), 5 bound parameter(s)\n", "a write: runs through execute", "1 row(s) changed"])
        #expect(write.quiet.stdoutText.isEmpty)
        #expect(!write.verbose.stderrText.contains("a title"), "row values are never printed")
    }

    @Test("inspect: the inspection is the result, so quiet changes nothing; verbose names the store")
    func inspect() throws {
        let store = try store()
        for json in [false, true] {
            let runs = try runAll { _ in ["inspect", "--db", store] + (json ? ["--json"] : []) }
            #expect(runs.normal.status == 0 && runs.quiet.status == 0 && runs.verbose.status == 0)
            #expect(runs.normal.stdoutText.contains(json ? #""scope_id":"catalog""# : "scopes:"))
            #expect(runs.quiet.stdoutText == runs.normal.stdoutText)
            #expect(runs.verbose.stdoutText == runs.normal.stdoutText)
            #expect(runs.quiet.stderrText.isEmpty && runs.normal.stderrText.isEmpty)
            #expect(runs.verbose.stderrText.contains("inspect: store \(store): 2 scope(s) read in one snapshot in "))
        }
    }

    @Test("export: quiet prints nothing; verbose shows the source, each scope, and the evidence published first")
    func export() throws {
        let runs = try runAll { mode in
            ["export", "--source", server.baseURL, "--out", directory.path("\(mode)/seed.db"), "--token-env",
             Self.operatorVariable, "--page-limit", "20"]
        }
        expect(runs, command: "export", informational: "exported ",
               details: ["source \(server.baseURL), operator credential from the variable "
                         + "\(Self.operatorVariable), page limit 20\n", "export manifest: 1 portable scope(s), ",
                         "scope catalog: ", "verifying the finished file", "evidence published: ", "seed published: "])
        #expect(runs.quiet.stdoutText.isEmpty)
        let log = runs.verbose.stderrText
        let evidence = try #require(log.range(of: "export: evidence published: "))
        let seed = try #require(log.range(of: "export: seed published: "))
        #expect(evidence.lowerBound < seed.lowerBound)
        for mode in ["normal", "quiet", "verbose"] {
            #expect(FileManager.default.fileExists(atPath: directory.path("\(mode)/seed.db.evidence.json")))
        }
    }

    @Test("export --json: the evidence document is printed whatever the verbosity")
    func exportJSON() throws {
        let runs = try runAll { mode in
            ["export", "--source", server.baseURL, "--out", directory.path("json-\(mode)/seed.db"), "--token-env",
             Self.operatorVariable, "--json"]
        }
        for run in [runs.normal, runs.quiet, runs.verbose] {
            #expect(run.status == 0)
            let object = try #require(try StrictJSONParser().parse(run.stdout).objectValue)
            #expect(object["artifacts"] != nil && object["path"] != nil)
        }
        #expect(runs.quiet.stderrText.isEmpty)
        #expect(runs.verbose.stderrText.contains("export: seed published: "))
    }

    @Test("pack and unpack: quiet prints nothing; verbose shows the options; --json is unchanged")
    func packAndUnpack() throws {
        let seed = try seed()
        let pack = try runAll { mode in ["pack", seed, "--out", directory.path("\(mode).db.zst"), "--level", "3"] }
        expect(pack, command: "pack", informational: "packed \(seed) into ",
               details: ["\(seed) → \(directory.path("verbose.db.zst")): level 3, ", "published "])
        #expect(pack.quiet.stdoutText.isEmpty)

        let unpack = try runAll { mode in ["unpack", directory.path("\(mode).db.zst"), "--out", directory.path("u-\(mode).db")] }
        expect(unpack, command: "unpack", informational: "unpacked ",
               details: ["\(directory.path("verbose.db.zst")) → \(directory.path("u-verbose.db")): output limit "])
        #expect(unpack.quiet.stdoutText.isEmpty)

        let json = try runAll { _ in ["pack", seed, "--out", directory.path("same.db.zst"), "--level", "3", "--force", "--json"] }
        #expect(json.normal.status == 0 && json.normal.stdoutText.hasPrefix(#"{"command":"pack""#))
        #expect(json.quiet.stdoutText == json.normal.stdoutText)
        #expect(json.verbose.stdoutText == json.normal.stdoutText)
    }

    @Test("verify and install: quiet prints nothing for a good seed; verbose names the input and destination")
    func verifyAndInstall() throws {
        let seed = try seed()
        let verify = try runAll { _ in ["verify", seed] }
        expect(verify, command: "verify", informational: "ok: seed verified (",
               details: ["\(seed): a database; temporary files in "])
        #expect(verify.verbose.stderrText.contains(" checks, ")
            && verify.verbose.stderrText.contains(" rows re-digested in "))
        #expect(verify.quiet.stdoutText.isEmpty)
        #expect(verify.verbose.stdoutText == verify.normal.stdoutText)

        let json = try runAll { _ in ["verify", seed, "--json"] }
        #expect(json.normal.stdoutText.hasPrefix(#"{"checks":"#))
        #expect(json.quiet.stdoutText == json.normal.stdoutText)
        #expect(json.verbose.stdoutText == json.normal.stdoutText)

        let install = try runAll { mode in ["install", seed, "--to", directory.path("device-\(mode).db")] }
        expect(install, command: "install", informational: "ok: installed ",
               details: ["destination \(directory.path("device-verbose.db")), published by link()", "installed in "])
        #expect(install.quiet.stdoutText.isEmpty)
    }

    @Test("verify: a failed check's findings are the result and print even when quiet")
    func quietKeepsFindings() throws {
        let store = try store()
        // A client store that has synced is not a seed: the verifier reports findings (exit 1).
        let runs = try runAll { _ in ["verify", store] }
        for run in [runs.normal, runs.quiet, runs.verbose] {
            #expect(run.status == 1, "\(run.stdoutText)\(run.stderrText)")
        }
        let findings = runs.normal.lines.filter { $0.hasPrefix("FAIL ") }
        #expect(!findings.isEmpty)
        #expect(runs.quiet.lines == findings)
        #expect(runs.normal.lines.last?.hasSuffix(" rows re-digested)") == true)
    }

    @Test("rehearse: quiet prints nothing when it passes; verbose names the server and credential source")
    func rehearse() throws {
        let seed = try seed()
        let runs = try runAll { _ in ["rehearse", seed, "--server", server.baseURL, "--token-env", Self.tokenVariable] }
        expect(runs, command: "rehearse", informational: "rehearsal passed: ",
               details: ["seed \(seed), installed in a new directory under ", "server \(server.baseURL), credential "
                         + "from the variable \(Self.tokenVariable)", "rehearsed in "])
        #expect(runs.quiet.stdoutText.isEmpty)
    }

    @Test("pipeline run: quiet prints nothing; verbose shows the source and a line per step on standard error")
    func pipeline() throws {
        let dataset = RepositoryLayout.root.appendingPathComponent("seeds/demo").path
        let file = try directory.write("pipeline.json", Array("""
            {"name": "tiny", "source": {"embedded": {"dataset": "\(dataset)", "rows": 20}}, "page_limit": 50,
             "pack": {"level": 1}, "rehearsal": {"user": "alice"}, "publish": {"directory": "out/tiny"}}
            """.utf8))
        let dryRun = try runAll { _ in ["pipeline", "run", file, "--dry-run"] }
        expect(dryRun, command: "pipeline", informational: "pipeline tiny is valid; steps: ",
               details: ["tiny: source the embedded reference server on \(dataset) (20 rows); publish directory ",
                         "steps: export, verify, pack, install, rehearse, publish\n"])
        #expect(dryRun.quiet.stdoutText.isEmpty)
        #expect(dryRun.verbose.stdoutText == dryRun.normal.stdoutText)

        let run = try SeedkitProcess.run(["pipeline", "run", file, "--verbose"])
        #expect(run.status == 0, "\(run.stderrText)")
        for step in ["export", "verify", "pack", "install", "rehearse", "publish"] {
            #expect(run.stderrText.contains("pipeline: \(step) started\n"), "\(step)")
            #expect(run.stderrText.contains("pipeline: \(step): passed"), "\(step)")
        }
        #expect(run.stderrText.contains("pipeline: verification: "))
        #expect(!run.stdoutText.contains("pipeline: "))
        #expect(run.lines.last?.hasPrefix("published tiny to ") == true)
    }

    @Test("serve: the address prints even when quiet; verbose logs each request without its secrets")
    func serve() throws {
        let dataset = RepositoryLayout.root.appendingPathComponent("seeds/demo").path
        func serve(_ mode: String, _ flags: [String]) throws -> (stdout: String, stderr: String, status: Int32) {
            let process = Process()
            process.executableURL = SeedkitProcess.executable
            process.arguments = [
                "serve", "--dataset", dataset, "--rows", "20", "--db", directory.path("serve-\(mode).db"),
                "--listen", "127.0.0.1:0", "--token-file", try directory.secretFile("alice=serve-secret-41"),
            ] + flags
            let output = Pipe(), errors = Pipe()
            process.standardOutput = output
            process.standardError = errors
            try process.run()
            let line = ServeCommandTests.firstLine(of: output)
            #expect(line.hasPrefix("listening on http://127.0.0.1:"), "\(line)")
            let transport = try CurlTransport(configuration: .init(baseURL: String(line.dropFirst(13))))
            var headers = HTTPHeaders()
            headers.append(name: "Authorization", value: "Bearer not-the-secret-93")
            headers.append(name: "Content-Type", value: "application/json")
            let reply = try transport.send(TransportRequest(
                method: .post, path: "/sync/connect", headers: headers, body: Array("{}".utf8)))
            #expect(reply.status == 401)
            process.terminate()
            let stderr = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            process.waitUntilExit()
            return (line, stderr, process.terminationStatus)
        }
        let normal = try serve("normal", [])
        let quiet = try serve("quiet", ["--quiet"])
        let verbose = try serve("verbose", ["--verbose"])
        for run in [normal, quiet, verbose] {
            #expect(run.status == 0)
            #expect(!run.stderr.contains("serve-secret-41") && !run.stderr.contains("not-the-secret-93"))
        }
        #expect(normal.stderr == "seedkit: server stopped\n")
        #expect(quiet.stderr.isEmpty)
        #expect(verbose.stderr.contains("serve: dataset \(dataset), 20 rows\n"))
        #expect(verbose.stderr.contains("serve: 1 user credential(s), operator routes disabled\n"))
        #expect(verbose.stderr.contains("serve: POST /sync/connect 401 in "))
        #expect(verbose.stderr.hasSuffix("seedkit: server stopped\n"))
    }
}
