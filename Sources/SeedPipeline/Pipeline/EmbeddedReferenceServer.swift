import Foundation
import SynchroProtocol
import SynchroServer

/// The reference server a pipeline with an embedded source starts for the length of one run: the dataset in a
/// fresh database inside the run's scratch directory, on a free loopback port, with an operator credential and
/// the rehearsal user's credential made up for the run (random, never printed, gone with the process).
final class EmbeddedReferenceServer: Sendable {
    let baseURL: String
    let operatorToken: String
    let userToken: String
    private let engine: SyncEngine
    private let server: HTTPServer

    /// Loads `dataset` (with `rows` rows in its large table, when given) into `databasePath` and starts listening.
    init(dataset: Dataset, rows: Int?, databasePath: String, user: String) throws(PipelineError) {
        operatorToken = Self.randomSecret()
        userToken = Self.randomSecret()
        let configuration = ServerConfiguration(
            dataset: dataset, rowsOverride: rows, databasePath: databasePath, credentials: [userToken: user],
            operatorToken: operatorToken)
        do {
            engine = try SyncEngine(configuration: configuration)
        } catch {
            throw .embeddedServer("cannot load the dataset into the server database: \(error)")
        }
        server = HTTPServer(handler: engine)
        let port: UInt16
        do {
            port = try server.start(host: "127.0.0.1", port: 0)
        } catch {
            engine.shutdown()
            throw .embeddedServer("cannot listen on loopback: \(error)")
        }
        baseURL = "http://127.0.0.1:\(port)"
    }

    /// Stops listening; the database stays in the scratch directory until it is removed.
    func stop() {
        server.stop()
        engine.shutdown()
    }

    /// 32 random bytes as hex.
    private static func randomSecret() -> String {
        var generator = SystemRandomNumberGenerator()
        return Hex.encode((0..<32).map { _ in UInt8.random(in: 0...255, using: &generator) })
    }
}
