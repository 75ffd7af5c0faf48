import Synchronization
import SynchroProtocol

/// The reading state of one request, owned by the daemon's event-loop thread from the moment
/// libmicrohttpd sees the request line until it reports the request complete.
final class RequestIntake {
    enum Phase {
        /// The request line is known; header fields are not collected yet.
        case awaitingHead
        /// Collecting the body within the limit.
        case receiving
        /// The body passed the limit: its octets are counted and dropped.
        case discarding
        /// The handler runs on a thread of its own while the connection is suspended.
        case handling
        /// A response is queued; nothing more is read.
        case answered
    }

    /// The request target as sent: path and query, not percent-decoded.
    let target: String
    /// The client's numeric address, read from the connection with the header fields.
    var clientAddress: String?
    private(set) var phase: Phase = .awaitingHead
    private(set) var head: HTTPRequestHead?
    private var body: [UInt8] = []
    /// Body octets seen so far, kept or not.
    private var received = 0
    /// Where the handler's thread leaves the response, while ``phase`` is `.handling`.
    private var answer: HandlerAnswer?

    init(target: String) {
        self.target = target
    }

    /// What to do once the header fields are known.
    enum HeadDecision {
        /// Read the body.
        case readBody
        /// Answer with the oversize response now, without reading the body.
        case rejectNow
    }

    /// Records the head and decides from the declared length whether the body can be accepted.
    func receiveHead(
        method: String, headers: HTTPHeaders, maximumBodyBytes: Int, drainBytes: Int
    ) -> HeadDecision {
        head = HTTPRequestHead(method: method, target: target, headers: headers)
        let declared = declaredLength(headers)
        guard let declared, declared > maximumBodyBytes else {
            phase = .receiving
            if let declared { body.reserveCapacity(declared) }
            return .readBody
        }
        // A client waiting for `100 Continue` has sent nothing yet: answering now spares the upload.
        // A declared length too large to drain is refused at once for the same reason.
        if expectsContinue(headers) || declared - maximumBodyBytes > drainBytes {
            phase = .answered
            return .rejectNow
        }
        phase = .discarding
        return .readBody
    }

    /// Takes one chunk of the body. Returns `false` when the client sent more than can be drained and
    /// the connection must be closed.
    func receive(_ chunk: UnsafeRawBufferPointer, maximumBodyBytes: Int, drainBytes: Int) -> Bool {
        received += chunk.count
        switch phase {
        case .receiving where received <= maximumBodyBytes:
            body.append(contentsOf: chunk)
        case .receiving:
            body = []
            phase = .discarding
        case .discarding, .awaitingHead, .handling, .answered:
            break
        }
        return phase != .discarding || received - maximumBodyBytes <= drainBytes
    }

    /// Ends reading: the complete request, or `nil` when the body was over the limit.
    func finish() -> HTTPRequest? {
        defer { phase = .answered }
        guard phase == .receiving, let head else { return nil }
        let request = HTTPRequest(head: head, body: body, clientAddress: clientAddress)
        body = []
        return request
    }

    /// Hands the request to a handler thread: returns the slot that thread fills.
    func handOff() -> HandlerAnswer {
        let answer = HandlerAnswer()
        self.answer = answer
        phase = .handling
        return answer
    }

    /// The handler's response once its thread has delivered it; the request is then answered.
    func takeAnswer() -> HTTPResponse? {
        guard let response = answer?.take() else { return nil }
        answer = nil
        phase = .answered
        return response
    }

    private func declaredLength(_ headers: HTTPHeaders) -> Int? {
        // libmicrohttpd itself rejects malformed or conflicting lengths before the handler runs.
        guard let text = headers.first("Content-Length") else { return nil }
        return Int(text.trimmingASCIIWhitespace()) ?? Int.max
    }

    private func expectsContinue(_ headers: HTTPHeaders) -> Bool {
        headers.values(for: "Expect").contains { $0.trimmingASCIIWhitespace().equalsIgnoringASCIICase("100-continue") }
    }
}

/// The response a handler thread hands back to the event loop.
final class HandlerAnswer: Sendable {
    private let response = Mutex<HTTPResponse?>(nil)

    func deliver(_ response: HTTPResponse) {
        self.response.withLock { $0 = response }
    }

    func take() -> HTTPResponse? {
        response.withLock { response in
            defer { response = nil }
            return response
        }
    }
}

extension String {
    func trimmingASCIIWhitespace() -> String {
        let isSpace: (UInt8) -> Bool = { $0 == 0x20 || $0 == 0x09 }
        let bytes = Array(utf8)
        guard let first = bytes.firstIndex(where: { !isSpace($0) }),
            let last = bytes.lastIndex(where: { !isSpace($0) })
        else { return "" }
        return String(decoding: bytes[first...last], as: UTF8.self)
    }
}
