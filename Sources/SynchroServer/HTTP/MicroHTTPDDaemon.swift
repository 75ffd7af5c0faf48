import CMicroHTTPD
import Dispatch
import Foundation
import Glibc
import Synchronization
import SynchroProtocol

/// What every libmicrohttpd callback of one running server needs. Retained for the daemon's lifetime
/// and passed to C as the callbacks' closure pointer.
final class DaemonContext: Sendable {
    let handler: any HTTPHandler
    let configuration: HTTPServer.Configuration
    let wakeup: LoopWakeup
    /// One entry per request between its request line and its completion, so `stop()` can wait.
    let inFlight = DispatchGroup()
    /// The threads handlers run on, reused from request to request.
    let threads = HandlerThreads()
    /// The clock of every connection's request (``HTTPServer/Configuration/requestDeadline``).
    let deadlines: RequestDeadlines
    /// One entry per running handler, left after its connection is resumed.
    let handlers = DispatchGroup()
    /// Set on the event-loop thread when `stop()`'s grace period is over: from then on no handler
    /// starts, and a handler that returns later is answered by closing its connection.
    let closing = Atomic<Bool>(false)

    init(handler: any HTTPHandler, configuration: HTTPServer.Configuration, wakeup: LoopWakeup) {
        self.handler = handler
        self.configuration = configuration
        self.wakeup = wakeup
        self.deadlines = RequestDeadlines(limit: configuration.requestDeadline)
    }
}

/// A running libmicrohttpd daemon and the event-loop thread that drives it.
///
/// Threading: libmicrohttpd runs without threads of its own; one ``DaemonEventLoop`` thread reads and
/// writes every connection, and each complete request is handed to a thread of its own while its
/// connection is suspended, so handlers may block (database work) without stalling other connections.
/// libmicrohttpd 0.9.75's thread-per-connection mode is not used: `MHD_stop_daemon` races its
/// connection threads and crashes when one of them answers a malformed request during the stop
/// (docs/decisions.md, "libmicrohttpd connection-thread crash").
struct MicroHTTPDDaemon: Sendable {
    private let daemon: DaemonPointer
    private let loop: DaemonEventLoop
    /// The reference the C callbacks use; released once the daemon is stopped.
    private let context: Unmanaged<DaemonContext>

    /// Starts serving `handler` on `socket`, which the daemon then owns; when starting fails the
    /// socket is closed.
    static func start(
        on socket: ListeningSocket, handler: any HTTPHandler, configuration: HTTPServer.Configuration
    ) throws(HTTPServerError) -> MicroHTTPDDaemon {
        let wakeup: LoopWakeup
        do {
            wakeup = try LoopWakeup()
        } catch {
            _ = close(socket.descriptor)
            throw error
        }
        let context = DaemonContext(handler: handler, configuration: configuration, wakeup: wakeup)
        let retained = Unmanaged.passRetained(context)
        guard let daemon = startDaemon(on: socket, closure: retained.toOpaque()) else {
            // libmicrohttpd leaves a socket it was given open when it fails to start.
            _ = close(socket.descriptor)
            retained.release()
            wakeup.close()
            throw .daemonFailed
        }
        let loop: DaemonEventLoop
        do {
            loop = try DaemonEventLoop(daemon: daemon, wakeup: wakeup, deadlines: context.deadlines)
        } catch {
            // Not quiesced: stopping the daemon closes the listening socket.
            MHD_stop_daemon(daemon.pointer)
            retained.release()
            wakeup.close()
            throw error
        }
        loop.start()
        return MicroHTTPDDaemon(daemon: daemon, loop: loop, context: retained)
    }

    private static func startDaemon(on socket: ListeningSocket, closure: UnsafeMutableRawPointer) -> DaemonPointer? {
        let configuration = Unmanaged<DaemonContext>.fromOpaque(closure).takeUnretainedValue().configuration
        // No internal thread: the event loop calls `MHD_run`. Epoll gives that loop one descriptor to
        // wait on, whatever the number of connections.
        var flags = MHD_USE_EPOLL.rawValue | MHD_ALLOW_SUSPEND_RESUME.rawValue
        if socket.isIPv6 { flags |= MHD_USE_IPv6.rawValue }
        let timeout = configuration.connectionTimeout.components
        let timeoutSeconds = max(1, timeout.seconds + (timeout.attoseconds > 0 ? 1 : 0))
        var options: [MHD_OptionItem] = [
            MHD_OptionItem(option: .LISTEN_SOCKET, value: Int(socket.descriptor), ptr_value: nil),
            MHD_OptionItem(option: .CONNECTION_TIMEOUT, value: Int(timeoutSeconds), ptr_value: nil),
            MHD_OptionItem(option: .CONNECTION_LIMIT, value: configuration.maximumConnections, ptr_value: nil),
            MHD_OptionItem(
                option: .PER_IP_CONNECTION_LIMIT, value: max(0, configuration.maximumConnectionsPerAddress),
                ptr_value: nil),
            MHD_OptionItem(
                option: .CONNECTION_MEMORY_LIMIT, value: configuration.connectionMemoryBytes, ptr_value: nil),
            MHD_OptionItem(option: .URI_LOG_CALLBACK, value: beginRequestAddress, ptr_value: closure),
            MHD_OptionItem(option: .NOTIFY_COMPLETED, value: completeRequestAddress, ptr_value: closure),
            MHD_OptionItem(option: .NOTIFY_CONNECTION, value: notifyConnectionAddress, ptr_value: closure),
            MHD_OptionItem(option: .END, value: 0, ptr_value: nil),
        ]
        let daemon = options.withUnsafeMutableBufferPointer { items in
            withVaList([MHD_OPTION.ARRAY.rawValue, items.baseAddress!, MHD_OPTION.END.rawValue]) { arguments in
                MHD_start_daemon_va(flags, 0, nil, nil, accessRequest, closure, arguments)
            }
        }
        return daemon.map(DaemonPointer.init)
    }

    /// Stops accepting, lets requests in flight finish for up to `grace`, then waits for every handler
    /// to return, ends the event loop, and closes every connection and frees the daemon. A quiesced
    /// daemon hands the listening socket back instead of closing it.
    func stop(grace: Duration) {
        let context = self.context.takeUnretainedValue()
        let listening = loop.perform { MHD_quiesce_daemon($0) }
        _ = context.inFlight.wait(timeout: .now() + grace.dispatchInterval)
        loop.perform { _ in context.closing.store(true, ordering: .relaxed) }
        // The daemon must not stop while a connection is suspended; each handler resumes its own.
        context.handlers.wait()
        context.threads.close()
        loop.finish()
        // Only this thread uses the daemon now: nothing parses a request while it shuts down.
        MHD_stop_daemon(daemon.pointer)
        if listening >= 0 { _ = close(listening) }
        context.wakeup.close()
        self.context.release()
    }
}

/// A suspended connection as a handler thread sees it: the only thing that thread does with it is
/// resume it, which libmicrohttpd allows from any thread of a daemon with an inter-thread channel.
private struct SuspendedConnection: @unchecked Sendable {
    let connection: OpaquePointer

    func resume() {
        MHD_resume_connection(connection)
    }
}

extension DaemonContext {
    /// Runs the handler for `request` on a handler thread, leaves the response in `answer` and resumes
    /// the suspended connection, whose next access callback then queues it.
    fileprivate func runHandler(
        _ request: HTTPRequest, answer: HandlerAnswer, resuming connection: SuspendedConnection
    ) {
        handlers.enter()
        threads.run { [self] in
            answer.deliver(handler.handle(request))
            connection.resume()
            wakeup.signal()
            handlers.leave()
        }
    }
}

extension Duration {
    fileprivate var dispatchInterval: DispatchTimeInterval {
        let (seconds, attoseconds) = components
        let capped = min(seconds, Int64(Int.max / 1_000_000_000) - 1)
        return .nanoseconds(Int(capped) * 1_000_000_000 + Int(attoseconds / 1_000_000_000))
    }
}

// MARK: - C callbacks (context travels through `Unmanaged`; nothing global)

/// Creates the per-request intake from the raw request target, before libmicrohttpd splits off and
/// decodes the query.
private let beginRequest:
    @convention(c) (UnsafeMutableRawPointer?, UnsafePointer<CChar>?, OpaquePointer?) -> UnsafeMutableRawPointer? = {
        closure, target, _ in
        guard let closure else { return nil }
        let context = Unmanaged<DaemonContext>.fromOpaque(closure).takeUnretainedValue()
        context.inFlight.enter()
        let intake = RequestIntake(target: target.map { String(cString: $0) } ?? "")
        return Unmanaged.passRetained(intake).toOpaque()
    }

/// Frees the intake; called for every request that reached `beginRequest`, answered or aborted. The clock of
/// the connection's next request starts.
private let completeRequest: MHD_RequestCompletedCallback = { closure, connection, requestSlot, _ in
    guard let closure, let requestSlot, let raw = requestSlot.pointee else { return }
    requestSlot.pointee = nil
    Unmanaged<RequestIntake>.fromOpaque(raw).release()
    let context = Unmanaged<DaemonContext>.fromOpaque(closure).takeUnretainedValue()
    if let connection { context.deadlines.answered(connection) }
    context.inFlight.leave()
}

/// Starts and ends the request clock of each connection (``RequestDeadlines``).
private let notifyConnection: MHD_NotifyConnectionCallback = { closure, connection, _, event in
    guard let closure, let connection else { return }
    let deadlines = Unmanaged<DaemonContext>.fromOpaque(closure).takeUnretainedValue().deadlines
    if event == .CONNECTION_NOTIFY_STARTED {
        deadlines.opened(connection, descriptor: seedkit_mhd_connection_fd(connection))
    } else {
        deadlines.closed(connection)
    }
}

private let beginRequestAddress = unsafeBitCast(beginRequest, to: Int.self)
private let completeRequestAddress = unsafeBitCast(completeRequest, to: Int.self)
private let notifyConnectionAddress = unsafeBitCast(notifyConnection, to: Int.self)

/// libmicrohttpd calls this on the event-loop thread once when the header fields are in, once per body
/// chunk, once when the body is complete, and once more when the handler's thread resumes the
/// connection.
private let accessRequest: MHD_AccessHandlerCallback = {
    closure, connection, _, method, _, uploadData, uploadSize, requestSlot in
    guard let closure, let connection, let uploadSize, let raw = requestSlot?.pointee else { return .NO }
    let context = Unmanaged<DaemonContext>.fromOpaque(closure).takeUnretainedValue()
    let intake = Unmanaged<RequestIntake>.fromOpaque(raw).takeUnretainedValue()
    let configuration = context.configuration
    switch intake.phase {
    case .awaitingHead:
        intake.clientAddress = clientAddress(connection)
        let decision = intake.receiveHead(
            method: method.map { String(cString: $0) } ?? "", headers: collectHeaders(connection),
            maximumBodyBytes: configuration.maximumBodyBytes, drainBytes: configuration.oversizeDrainBytes)
        guard case .rejectNow = decision, let head = intake.head else { return .YES }
        context.deadlines.received(connection)
        return queue(configuration.oversizeResponse(head), on: connection)
    case .receiving, .discarding:
        guard uploadSize.pointee == 0 else {
            let chunk = UnsafeRawBufferPointer(start: uploadData, count: uploadSize.pointee)
            uploadSize.pointee = 0
            let keep = intake.receive(
                chunk, maximumBodyBytes: configuration.maximumBodyBytes, drainBytes: configuration.oversizeDrainBytes)
            return keep ? .YES : .NO
        }
        return dispatch(intake, context: context, connection: connection)
    case .handling:
        // Called again once the handler's thread has resumed the connection.
        uploadSize.pointee = 0
        guard let response = intake.takeAnswer() else { return .YES }
        return context.closing.load(ordering: .relaxed) ? .NO : queue(response, on: connection)
    case .answered:
        uploadSize.pointee = 0
        return .YES
    }
}

/// The body is complete: an oversize request is answered at once, any other goes to a handler thread
/// while its connection is suspended.
private func dispatch(_ intake: RequestIntake, context: DaemonContext, connection: OpaquePointer) -> MHD_Result {
    guard let head = intake.head else { return .NO }
    context.deadlines.received(connection)
    guard let request = intake.finish() else {
        return queue(context.configuration.oversizeResponse(head), on: connection)
    }
    // A handler started after the grace period would keep its connection suspended during the stop.
    guard !context.closing.load(ordering: .relaxed) else { return .NO }
    let answer = intake.handOff()
    MHD_suspend_connection(connection)
    context.runHandler(request, answer: answer, resuming: SuspendedConnection(connection: connection))
    return .YES
}

/// The peer's numeric address, or nil when the socket has none libmicrohttpd reports.
private func clientAddress(_ connection: OpaquePointer) -> String? {
    var buffer = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN) + 1)
    let read = buffer.withUnsafeMutableBufferPointer { text in
        seedkit_mhd_client_address(connection, text.baseAddress, socklen_t(text.count))
    }
    guard read == 0 else { return nil }
    return buffer.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
}

private func collectHeaders(_ connection: OpaquePointer) -> HTTPHeaders {
    var fields: [HTTPHeader] = []
    withUnsafeMutablePointer(to: &fields) { pointer in
        _ = MHD_get_connection_values(
            connection, .HEADER_KIND,
            { slot, _, name, value in
                guard let slot, let name else { return .YES }
                let fields = slot.assumingMemoryBound(to: [HTTPHeader].self)
                fields.pointee.append(
                    HTTPHeader(name: String(cString: name), value: value.map { String(cString: $0) } ?? ""))
                return .YES
            }, pointer)
    }
    return HTTPHeaders(fields)
}

private func queue(_ response: HTTPResponse, on connection: OpaquePointer) -> MHD_Result {
    // Refusing the request makes libmicrohttpd close the connection with nothing sent.
    if response.dropsConnection { return .NO }
    guard let prepared = prepare(response) ?? prepare(.unsendable) else { return .NO }
    defer { MHD_destroy_response(prepared.response) }
    return MHD_queue_response(connection, prepared.status, prepared.response)
}

private func prepare(_ response: HTTPResponse) -> (status: UInt32, response: OpaquePointer)? {
    guard (100...599).contains(response.status) else { return nil }
    let created: OpaquePointer?
    if response.abortsBody {
        // The announced length makes libmicrohttpd send a `Content-Length` header; the reader fails at once,
        // after the header fields went out, and libmicrohttpd closes the connection without the body.
        created = MHD_create_response_from_callback(
            UInt64(max(1, response.body.count)), 4096, abortBody, nil, nil)
    } else {
        created = response.body.withUnsafeBytes { bytes in
            // MUST_COPY: libmicrohttpd keeps its own copy, so the Swift array may go away at once.
            MHD_create_response_from_buffer(
                bytes.count, UnsafeMutableRawPointer(mutating: bytes.baseAddress), .RESPMEM_MUST_COPY)
        }
    }
    guard let created else { return nil }
    for field in response.headers
    where !field.name.equalsIgnoringASCIICase("Content-Length")
        && !field.name.equalsIgnoringASCIICase("Transfer-Encoding")
    {
        guard MHD_add_response_header(created, field.name, field.value) == .YES else {
            MHD_destroy_response(created)
            return nil
        }
    }
    return (UInt32(response.status), created)
}

/// The body reader of a response lost after its header fields (``HTTPResponse/losingBody()``): it reports an
/// error before producing any octet (`MHD_CONTENT_READER_END_WITH_ERROR`, a macro Swift does not import).
private let abortBody: MHD_ContentReaderCallback = { _, _, _, _ in -2 }
