import CMicroHTTPD
import Dispatch
import Glibc

/// What every libmicrohttpd callback of one running server needs. Retained for the daemon's lifetime
/// and passed to C as the callbacks' closure pointer.
final class DaemonContext: Sendable {
    let handler: any HTTPHandler
    let configuration: HTTPServer.Configuration
    /// One entry per request between its request line and its completion, so `stop()` can wait.
    let inFlight = DispatchGroup()

    init(handler: any HTTPHandler, configuration: HTTPServer.Configuration) {
        self.handler = handler
        self.configuration = configuration
    }
}

/// A running libmicrohttpd daemon. The pointer is used only under the server's lifecycle mutex and
/// libmicrohttpd allows quiescing and stopping it from any thread.
struct MicroHTTPDDaemon: @unchecked Sendable {
    private let daemon: OpaquePointer
    private let context: Unmanaged<DaemonContext>

    /// Starts serving on `socket`, which the daemon then owns; when starting fails the socket is closed
    /// (libmicrohttpd leaves a socket it was given open).
    ///
    /// Thread per connection: handlers are synchronous and may block on database work, and with a
    /// polling thread pool one blocked handler would stall every connection sharing its thread.
    static func start(
        on socket: ListeningSocket, context: DaemonContext
    ) throws(HTTPServerError) -> MicroHTTPDDaemon {
        let configuration = context.configuration
        let retained = Unmanaged.passRetained(context)
        var flags = MHD_USE_INTERNAL_POLLING_THREAD.rawValue | MHD_USE_THREAD_PER_CONNECTION.rawValue
        flags |= MHD_USE_POLL.rawValue | MHD_USE_ITC.rawValue
        if socket.isIPv6 { flags |= MHD_USE_IPv6.rawValue }
        let timeout = configuration.connectionTimeout.components
        let timeoutSeconds = max(1, timeout.seconds + (timeout.attoseconds > 0 ? 1 : 0))
        let closure = retained.toOpaque()
        var options: [MHD_OptionItem] = [
            MHD_OptionItem(option: .LISTEN_SOCKET, value: Int(socket.descriptor), ptr_value: nil),
            MHD_OptionItem(option: .CONNECTION_TIMEOUT, value: Int(timeoutSeconds), ptr_value: nil),
            MHD_OptionItem(option: .CONNECTION_LIMIT, value: configuration.maximumConnections, ptr_value: nil),
            MHD_OptionItem(
                option: .CONNECTION_MEMORY_LIMIT, value: configuration.connectionMemoryBytes, ptr_value: nil),
            MHD_OptionItem(option: .URI_LOG_CALLBACK, value: beginRequestAddress, ptr_value: closure),
            MHD_OptionItem(option: .NOTIFY_COMPLETED, value: completeRequestAddress, ptr_value: closure),
            MHD_OptionItem(option: .END, value: 0, ptr_value: nil),
        ]
        let daemon = options.withUnsafeMutableBufferPointer { items in
            withVaList([MHD_OPTION.ARRAY.rawValue, items.baseAddress!, MHD_OPTION.END.rawValue]) { arguments in
                MHD_start_daemon_va(flags, 0, nil, nil, accessRequest, closure, arguments)
            }
        }
        guard let daemon else {
            retained.release()
            _ = close(socket.descriptor)
            throw .daemonFailed
        }
        return MicroHTTPDDaemon(daemon: daemon, context: retained)
    }

    /// Stops accepting, lets requests in flight finish for up to `grace`, then closes every connection,
    /// joins every connection thread and frees the daemon. A quiesced daemon hands the listening socket
    /// back instead of closing it.
    func stop(grace: Duration) {
        let listening = MHD_quiesce_daemon(daemon)
        _ = context.takeUnretainedValue().inFlight.wait(timeout: .now() + grace.dispatchInterval)
        MHD_stop_daemon(daemon)
        if listening >= 0 { _ = close(listening) }
        context.release()
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

/// Frees the intake; called for every request that reached `beginRequest`, answered or aborted.
private let completeRequest: MHD_RequestCompletedCallback = { closure, _, requestSlot, _ in
    guard let closure, let requestSlot, let raw = requestSlot.pointee else { return }
    requestSlot.pointee = nil
    Unmanaged<RequestIntake>.fromOpaque(raw).release()
    Unmanaged<DaemonContext>.fromOpaque(closure).takeUnretainedValue().inFlight.leave()
}

private let beginRequestAddress = unsafeBitCast(beginRequest, to: Int.self)
private let completeRequestAddress = unsafeBitCast(completeRequest, to: Int.self)

/// libmicrohttpd calls this once when the header fields are in, once per body chunk, and once when
/// the body is complete.
private let accessRequest: MHD_AccessHandlerCallback = {
    closure, connection, _, method, _, uploadData, uploadSize, requestSlot in
    guard let closure, let connection, let uploadSize, let raw = requestSlot?.pointee else { return .NO }
    let context = Unmanaged<DaemonContext>.fromOpaque(closure).takeUnretainedValue()
    let intake = Unmanaged<RequestIntake>.fromOpaque(raw).takeUnretainedValue()
    let configuration = context.configuration
    switch intake.phase {
    case .awaitingHead:
        let decision = intake.receiveHead(
            method: method.map { String(cString: $0) } ?? "", headers: collectHeaders(connection),
            maximumBodyBytes: configuration.maximumBodyBytes, drainBytes: configuration.oversizeDrainBytes)
        guard case .rejectNow = decision, let head = intake.head else { return .YES }
        return queue(configuration.oversizeResponse(head), on: connection)
    case .receiving, .discarding:
        guard uploadSize.pointee == 0 else {
            let chunk = UnsafeRawBufferPointer(start: uploadData, count: uploadSize.pointee)
            uploadSize.pointee = 0
            let keep = intake.receive(
                chunk, maximumBodyBytes: configuration.maximumBodyBytes, drainBytes: configuration.oversizeDrainBytes)
            return keep ? .YES : .NO
        }
        guard let head = intake.head else { return .NO }
        let response = intake.finish().map(context.handler.handle) ?? configuration.oversizeResponse(head)
        return queue(response, on: connection)
    case .answered:
        uploadSize.pointee = 0
        return .YES
    }
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
    let created = response.body.withUnsafeBytes { bytes in
        // MUST_COPY: libmicrohttpd keeps its own copy, so the Swift array may go away at once.
        MHD_create_response_from_buffer(
            bytes.count, UnsafeMutableRawPointer(mutating: bytes.baseAddress), .RESPMEM_MUST_COPY)
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
