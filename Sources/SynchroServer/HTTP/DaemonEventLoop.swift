import CMicroHTTPD
import Dispatch
import Foundation
import Glibc
import Synchronization

/// The one thread that drives a libmicrohttpd daemon started without internal threads: it sleeps in
/// `poll` on the daemon's epoll descriptor and a ``LoopWakeup``, then lets libmicrohttpd do all pending
/// work (`MHD_run`). Every call on the daemon except `MHD_resume_connection` (allowed from any thread)
/// happens on this thread until ``finish()`` returns, so `MHD_stop_daemon` — called afterwards — never
/// runs while libmicrohttpd is still parsing a request (docs/decisions.md, "libmicrohttpd
/// connection-thread crash").
final class DaemonEventLoop: Sendable {
    private let daemon: DaemonPointer
    /// libmicrohttpd's epoll descriptor, owned by the daemon.
    private let events: Int32
    private let wakeup: LoopWakeup
    private let deadlines: RequestDeadlines
    private let requests = Mutex(Requests())
    private let ended = DispatchSemaphore(value: 0)

    private struct Requests {
        var work: [@Sendable (OpaquePointer) -> Void] = []
        var finish = false
    }

    /// A loop for `daemon`, which must have been started with `MHD_USE_EPOLL` and no internal thread.
    /// Fails when the daemon's epoll descriptor does not fit an `fd_set` (the only way libmicrohttpd
    /// 0.9.75 reports it to a caller that cannot use variadic functions).
    init(daemon: DaemonPointer, wakeup: LoopWakeup, deadlines: RequestDeadlines) throws(HTTPServerError) {
        var readable = fd_set()
        var writable = fd_set()
        var exceptional = fd_set()
        var highest: MHD_socket = -1
        // In epoll mode libmicrohttpd adds exactly one descriptor to the sets: its epoll descriptor.
        let reported = MHD_get_fdset2(
            daemon.pointer, &readable, &writable, &exceptional, &highest, UInt32(MemoryLayout<fd_set>.size * 8))
        guard reported == .YES, highest >= 0 else { throw .daemonFailed }
        self.daemon = daemon
        self.events = highest
        self.wakeup = wakeup
        self.deadlines = deadlines
    }

    /// Starts the loop thread.
    func start() {
        let thread = Thread { [self] in run() }
        thread.name = "seedkit-http-loop"
        thread.start()
    }

    /// Runs `work` on the loop thread between two `MHD_run` calls and returns its result: no callback
    /// of the daemon runs at the same time.
    func perform<Result: Sendable>(_ work: @escaping @Sendable (OpaquePointer) -> Result) -> Result {
        let outcome = LoopWork<Result>()
        requests.withLock { $0.work.append { outcome.finish(work($0)) } }
        wakeup.signal()
        return outcome.wait()
    }

    /// Lets libmicrohttpd take in every resumption requested so far, then ends the loop and waits until
    /// its thread no longer touches the daemon.
    func finish() {
        requests.withLock { $0.finish = true }
        wakeup.signal()
        ended.wait()
    }

    private func run() {
        while true {
            let (work, finish) = requests.withLock { requests in
                defer { requests.work = [] }
                return (requests.work, requests.finish)
            }
            for item in work { item(daemon.pointer) }
            if finish { break }
            // Connections past their request deadline are shut down here; libmicrohttpd closes them in `MHD_run`.
            waitForEvents(nextDeadline: deadlines.expire())
            _ = MHD_run(daemon.pointer)
        }
        // `MHD_stop_daemon` refuses to stop while a connection is suspended, and a resumption only
        // takes effect in `MHD_run`.
        _ = MHD_run(daemon.pointer)
        ended.signal()
    }

    private func waitForEvents(nextDeadline: Duration?) {
        var next: CUnsignedLongLong = 0
        // libmicrohttpd answers 0 while it still has buffered work; no answer means no deadline.
        var timeout = MHD_get_timeout(daemon.pointer, &next) == .YES ? Int32(clamping: next) : -1
        if let nextDeadline {
            // Rounded up, so the loop wakes once the deadline has passed rather than just before it.
            let (seconds, attoseconds) = nextDeadline.components
            let milliseconds = Int32(clamping: seconds * 1000 + (attoseconds + 999_999_999_999_999) / 1_000_000_000_000_000)
            timeout = timeout < 0 ? milliseconds : min(timeout, milliseconds)
        }
        var descriptors = [
            pollfd(fd: events, events: Int16(POLLIN), revents: 0),
            pollfd(fd: wakeup.descriptor, events: Int16(POLLIN), revents: 0),
        ]
        _ = poll(&descriptors, nfds_t(descriptors.count), timeout)
        if descriptors[1].revents != 0 { wakeup.drain() }
    }
}

/// The result of one ``DaemonEventLoop/perform(_:)`` call, handed from the loop thread to the caller.
private final class LoopWork<Result: Sendable>: Sendable {
    private let result = Mutex<Result?>(nil)
    private let done = DispatchSemaphore(value: 0)

    func finish(_ value: Result) {
        result.withLock { $0 = value }
        done.signal()
    }

    func wait() -> Result {
        done.wait()
        return result.withLock { $0! }
    }
}

/// A daemon pointer that crosses threads: only the event loop and, after the loop has ended,
/// `MicroHTTPDDaemon.stop` use it.
struct DaemonPointer: @unchecked Sendable {
    let pointer: OpaquePointer
}

/// A socket pair that wakes the event loop out of `poll`: signalled by handler threads after resuming a
/// connection (libmicrohttpd 0.9.75 does not wake an external loop itself) and by `quiesce`/`finish`.
final class LoopWakeup: Sendable {
    /// The write end, -1 once closed, so a late signal can never write to a reused descriptor number.
    private let writeEnd: Mutex<Int32>
    /// The read end to poll; valid until ``close()``, which happens after the loop has ended.
    let descriptor: Int32

    init() throws(HTTPServerError) {
        var ends: [Int32] = [-1, -1]
        let kind = Int32(Glibc.SOCK_STREAM.rawValue) | Int32(Glibc.SOCK_CLOEXEC.rawValue) | Int32(Glibc.SOCK_NONBLOCK.rawValue)
        guard socketpair(AF_UNIX, kind, 0, &ends) == 0 else { throw .daemonFailed }
        descriptor = ends[0]
        writeEnd = Mutex(ends[1])
    }

    func signal() {
        writeEnd.withLock { descriptor in
            guard descriptor >= 0 else { return }
            var octet: UInt8 = 1
            // A full buffer already wakes the loop: a failed send loses nothing.
            _ = send(descriptor, &octet, 1, Int32(MSG_NOSIGNAL))
        }
    }

    /// Empties the socket so the next `poll` sleeps again; only the loop thread reads it.
    func drain() {
        var octets = [UInt8](repeating: 0, count: 64)
        while octets.withUnsafeMutableBytes({ recv(descriptor, $0.baseAddress, $0.count, 0) }) > 0 {}
    }

    func close() {
        writeEnd.withLock { descriptor in
            guard descriptor >= 0 else { return }
            _ = Glibc.close(descriptor)
            _ = Glibc.close(self.descriptor)
            descriptor = -1
        }
    }
}
