import Dispatch
import Foundation
import SynchroProtocol
import SynchroServer
import SystemKit

/// `seedkit serve --protocol delta --entities A,B [--store FILE] [--listen HOST:PORT] [--token-env VAR] [--rows N]`:
/// the reference delta-sync server (docs/delta-server.md) until SIGINT or SIGTERM. A flag of `serve` rather than a
/// command of its own: it is the same job (a reference server on loopback for tests and demos) with the same
/// `--listen` and first output line, only another protocol; the Synchro-only options are refused with it.
enum DeltaServeCommand {
    /// `--protocol delta`, listed with `serve`'s own options (it selects this mode).
    static let protocolOption = OptionSpec.value(
        "protocol", "NAME", .choice(["delta"]),
        "serve another protocol: delta, the seed 003/004 delta-sync API (docs/delta-server.md; its options there)")
    /// `--entities A,B`, listed with `serve`'s options as it is the one the delta mode cannot do without.
    static let entitiesOption = OptionSpec.value(
        "entities", "A,B", .text, "with --protocol delta: the entity types served")

    /// The delta mode's own options: the Synchro-only ones are refused with it.
    static let spec = CommandSpec(
        "serve", "run the reference delta-sync server (seeds 003 and 004) until SIGINT or SIGTERM",
        options: [
            protocolOption.asRequired(), entitiesOption.asRequired(),
            .value("store", "FILE", .path, "the server's SQLite store, kept; default a private temporary one"),
            .value("listen", "HOST:PORT", .text, "the address to listen on; port 0 picks a free port",
                   default: "127.0.0.1:0"),
            .secretVariable("token", "the variable holding the one bearer token clients must send"),
            .value("rows", "N", .integer(0...100_000_000), "rows to generate in the first entity type", default: "0"),
        ])

    static func run(_ words: [String]) throws(Arguments.UsageError) -> ExitStatus {
        let arguments = try Arguments(words, spec: spec)
        try arguments.requirePositionals(atMost: 0)
        let entities = (arguments.values["entities"] ?? "").split(separator: ",").map(String.init)
        guard !entities.isEmpty, entities.allSatisfy({ name in
            !name.isEmpty && name.allSatisfy { $0.isLetter || $0.isNumber || $0 == "_" || $0 == "-" }
        }) else {
            throw Arguments.UsageError(message: "serve --protocol delta needs --entities NAME[,NAME…] (letters, digits, _ -)")
        }
        let (host, port) = try ServeCommand.listenAddress(arguments.values["listen"] ?? "127.0.0.1:0")
        let rows = Int(arguments.integer("rows") ?? 0)
        var token: String?
        if let variable = arguments.values["token-env"] {
            guard let value = ProcessInfo.processInfo.environment[variable], !value.isEmpty else {
                throw Arguments.UsageError(
                    message: "the environment variable \(variable) (--token-env) is not set", rule: "credential_missing")
            }
            token = value
        }
        guard let scratch = ServeCommand.privateScratch(
            needed: arguments.values["store"] == nil, prefix: "seedkit-serve-delta") else { return .checkFailed }
        defer { if let scratch { FileSystem.removeTree(scratch) } }
        let storePath = arguments.values["store"] ?? scratch.map { $0 + "/delta.db" } ?? ""
        let console = arguments.console("serve")
        let server: DeltaReferenceServer
        do {
            server = try DeltaReferenceServer(storePath: storePath, entities: entities, token: token)
            if rows > 0 { try populate(server.store, entity: entities[0], rows: rows) }
        } catch {
            Terminal.err("seedkit: cannot open the delta store: \(error)\n")
            return .checkFailed
        }
        console.detail("entities \(entities.joined(separator: ", ")), store \(storePath), "
            + (token == nil ? "no credential required" : "bearer credential from the variable"))
        let stop = DispatchSemaphore(value: 0)
        var sources: [any DispatchSourceSignal] = []
        for signalNumber in [SIGINT, SIGTERM] {
            signal(signalNumber, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: signalNumber, queue: .global())
            source.setEventHandler { stop.signal() }
            source.resume()
            sources.append(source)
        }
        let bound: UInt16
        do {
            bound = try server.start(host: host, port: port)
        } catch {
            return FailureReport(rule: "listen_failed", message: "cannot listen on \(host):\(port): \(error)",
                                 status: .checkFailed).print(command: "serve", json: false)
        }
        console.result("listening on http://\(host):\(bound)\n")
        stop.wait()
        server.stop()
        server.store.close()
        sources.forEach { $0.cancel() }
        console.notice("seedkit: server stopped\n")
        return .success
    }

    /// `--rows N`: N generated rows `{"id": "r<n>", "title": "Row <n>", "words": n}` in the first entity type, in
    /// transactions of 10,000.
    static func populate(_ store: DeltaStore, entity: String, rows: Int) throws {
        var next = 1
        while next <= rows {
            let last = min(rows, next + 9_999)
            try store.write(entity: entity, (next...last).map { index in
                ("r\(index)", JSONObject([
                    JSONMember("id", .string("r\(index)")), JSONMember("title", .string("Row \(index)")),
                    JSONMember("words", .number(JSONNumber(Int64(index)))),
                ]))
            })
            next = last + 1
        }
    }
}
