import Dispatch
import Foundation
import SynchroHTTP
import SynchroProtocol
import SynchroServer
import Synchronization

/// Runs `body` against a server started on an ephemeral loopback port, with a transport aimed at it,
/// and stops the server afterwards.
func withLoopbackServer<Result>(
    _ configuration: HTTPServer.Configuration = HTTPServer.Configuration(),
    transport adjust: (inout CurlTransport.Configuration) -> Void = { _ in },
    handler: some HTTPHandler,
    _ body: (HTTPServer, CurlTransport) throws -> Result
) throws -> Result {
    let server = HTTPServer(configuration: configuration, handler: handler)
    let port = try server.start()
    defer { server.stop() }
    let transport = try makeTransport(port: port, adjust)
    return try body(server, transport)
}

/// A transport for the loopback server on `port`.
func makeTransport(
    port: UInt16, _ adjust: (inout CurlTransport.Configuration) -> Void = { _ in }
) throws -> CurlTransport {
    var configuration = CurlTransport.Configuration(baseURL: "http://127.0.0.1:\(port)")
    adjust(&configuration)
    return try CurlTransport(configuration: configuration)
}

/// Echoes the request body with status 200 and reports the method, path and query in headers.
struct EchoHandler: HTTPHandler {
    func handle(_ request: HTTPRequest) -> HTTPResponse {
        HTTPResponse(
            status: 200,
            headers: [
                ("X-Method", request.method), ("X-Path", request.path), ("X-Query", request.query ?? "<none>"),
            ],
            body: request.body)
    }
}

/// Counts how often a handler ran.
final class CallCounter: Sendable {
    private let calls = Atomic<Int>(0)

    var count: Int { calls.load(ordering: .acquiring) }

    func record() { calls.add(1, ordering: .acquiringAndReleasing) }
}

/// A handshake with a handler: the handler announces its arrival and then waits for the test to let
/// it go. Waits are bounded so that a broken server fails the test instead of hanging it.
final class Gate: Sendable {
    private let arrivals = DispatchSemaphore(value: 0)
    private let releases = DispatchSemaphore(value: 0)

    /// Called by the handler.
    func pass() {
        arrivals.signal()
        _ = releases.wait(timeout: .now() + 30)
    }

    /// Waits until a handler has arrived; `false` when none did within `seconds`.
    func awaitArrival(seconds: Int = 10) -> Bool {
        arrivals.wait(timeout: .now() + .seconds(seconds)) == .success
    }

    /// Waits for an arrival without blocking a cooperative thread.
    func awaitArrival(seconds: Int = 10) async -> Bool {
        await withCheckedContinuation { continuation in
            Thread { continuation.resume(returning: self.awaitArrival(seconds: seconds)) }.start()
        }
    }

    /// Lets `count` handlers continue.
    func release(_ count: Int = 1) {
        for _ in 0..<count { releases.signal() }
    }
}

/// Runs `work` on a thread of its own (dispatch's pool grows slowly when its threads block in
/// syscalls); the returned closure waits for its value.
func inBackground<Value: Sendable>(_ work: @escaping @Sendable () -> Value) -> () -> Value {
    let done = DispatchSemaphore(value: 0)
    let slot = Mutex<Value?>(nil)
    Thread {
        let value = work()
        slot.withLock { $0 = value }
        done.signal()
    }.start()
    return {
        done.wait()
        return slot.withLock { $0! }
    }
}

/// The outcome of a send as a value, so tests can compare errors.
func outcome(
    _ transport: CurlTransport, _ request: TransportRequest
) -> Result<TransportResponse, TransportError> {
    Result { () throws(TransportError) in try transport.send(request) }
}

extension TransportRequest {
    /// A POST with `body` and a JSON content type.
    static func post(
        _ path: String, _ body: [UInt8], headers: HTTPHeaders = [("Content-Type", "application/json")]
    ) -> TransportRequest {
        TransportRequest(method: .post, path: path, headers: headers, body: body)
    }

    /// A GET without headers.
    static func get(_ path: String) -> TransportRequest {
        TransportRequest(method: .get, path: path)
    }
}

/// `count` octets covering every byte value in an order without short repeats (a multiplicative hash
/// of the index), so misplaced chunks show up; deterministic, unlike a random generator.
func scrambledOctets(count: Int) -> [UInt8] {
    (0..<count).map { UInt8(truncatingIfNeeded: (UInt64($0) &* 0x9E37_79B9_7F4A_7C15) >> 56) }
}

/// Runs the jobs of tasks that prefer it on a serial queue of its own. A task a test starts then runs even while
/// every thread of the cooperative pool is held by other tests that block (the whole suite runs in parallel on a
/// pool as wide as the machine has cores), instead of waiting for one of them to finish.
final class OwnQueueExecutor: TaskExecutor {
    private let queue = DispatchQueue(label: "synchro-http-tests.task-executor")

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        let executor = asUnownedTaskExecutor()
        queue.async { job.runSynchronously(on: executor) }
    }
}

