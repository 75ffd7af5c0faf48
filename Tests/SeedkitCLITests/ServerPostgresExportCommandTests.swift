import Foundation
import SynchroProtocol
import Testing
import _SeedkitTestSupport

/// Issue #17 end to end with the built binary: the reference server serves the demo dataset from PostgreSQL, and
/// `seedkit export --source postgresql://…` (a login in `synchro_seed`, the password from `PGPASSWORD`) exports
/// through the server's own `synchro` functions; `seedkit verify` and `seedkit rehearse` against that server pass.
@Suite(.serialized) struct ServerPostgresExportCommandTests {
    @Test func exportsFromTheServersOwnFunctionsAndRehearses() throws {
        let cluster = try PostgresCluster.shared()
        let server = try RunningServer(rows: 150, store: .postgres)
        let database = try #require(server.postgresDatabase)
        let suffix = UUID().uuidString.lowercased().prefix(8)
        let exporter = "cli_seed_exporter_\(suffix)"
        let password = "cli-seed-\(suffix)"
        try cluster.createLogin(exporter, password: password, memberOf: "synchro_seed")
        let directory = try TemporaryDirectory(prefix: "seedkit-server-pg-export-cli")
        let seed = directory.path("seed.db")

        let export = try SeedkitProcess.run(
            ["export", "--source", cluster.tcpURI(database: database, user: exporter), "--out", seed,
             "--page-limit", "40", "--json"],
            environment: ["PGPASSWORD": password, "SEEDKIT_OPERATOR_TOKEN": ""])
        #expect(export.status == 0, "\(export.stderrText)")
        #expect(!(export.stdoutText + export.stderrText).contains(password))
        let report = try StrictJSONParser().parse(export.stdout).objectValue
        #expect((report?["rows"]?.numberValue?.exactInt64 ?? 0) > 150)

        let verified = try SeedkitProcess.run(["verify", seed, "--json"])
        #expect(verified.status == 0, "\(verified.stdoutText)")
        let rehearsal = try SeedkitProcess.run(
            ["rehearse", seed, "--server", server.baseURL, "--token-env", "SEEDKIT_REHEARSE_TOKEN", "--json"],
            environment: ["SEEDKIT_REHEARSE_TOKEN": "secret-alice"])
        #expect(rehearsal.status == 0, "\(rehearsal.stdoutText) \(rehearsal.stderrText)")
    }
}
