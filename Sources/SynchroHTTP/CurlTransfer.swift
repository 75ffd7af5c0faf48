import CCurl
import Synchronization
import SynchroProtocol

/// A cancellation signal that libcurl's progress callback reads on the transferring thread.
final class CancellationFlag: Sendable {
    private let raised = Atomic<Bool>(false)

    var isRaised: Bool { raised.load(ordering: .acquiring) }

    func raise() { raised.store(true, ordering: .releasing) }

    func lower() { raised.store(false, ordering: .releasing) }
}

/// What one `curl_easy_perform` collects. Only the transferring thread touches it; libcurl's callbacks
/// reach it through `Unmanaged`.
final class CurlTransfer {
    let limit: Int
    private let cancellations: [CancellationFlag]
    private(set) var status = 0
    private(set) var headers: [HTTPHeader] = []
    private(set) var body: [UInt8] = []
    private(set) var exceededLimit = false

    init(limit: Int, cancellations: [CancellationFlag]) {
        self.limit = limit
        self.cancellations = cancellations
    }

    var isCancelled: Bool { cancellations.contains { $0.isRaised } }

    /// Takes the count of octets received on the wire so far (before content decoding); `false` once it passes
    /// the limit.
    func receivedOnWire(_ octets: Int64) -> Bool {
        guard octets <= Int64(limit) else {
            exceededLimit = true
            return false
        }
        return true
    }

    /// Takes one header line as libcurl delivers it, CRLF included. A status line starts a new header
    /// block, so fields of an interim `100 Continue` never reach the response.
    func receiveHeaderLine(_ raw: UnsafeRawBufferPointer) {
        var line = Array(raw)[...]
        while let last = line.last, last == 0x0A || last == 0x0D { line = line.dropLast() }
        if line.starts(with: Array("HTTP/".utf8)) {
            headers = []
            status = statusCode(line) ?? 0
        } else if let first = line.first, first == 0x20 || first == 0x09, !headers.isEmpty {
            // An obsolete folded line continues the previous field's value.
            headers[headers.count - 1].value += " " + trimmed(line)
        } else if let colon = line.firstIndex(of: UInt8(ascii: ":")), colon > line.startIndex {
            let name = String(decoding: line[..<colon], as: UTF8.self)
            headers.append(HTTPHeader(name: name, value: trimmed(line[(colon + 1)...])))
        }
    }

    /// Takes decoded body octets; `false` once the body would pass the limit.
    func receiveBody(_ chunk: UnsafeRawBufferPointer) -> Bool {
        guard body.count + chunk.count <= limit else {
            exceededLimit = true
            return false
        }
        body.append(contentsOf: chunk)
        return true
    }

    /// The response, or the error that `code` stands for.
    func outcome(of code: CURLcode) throws(TransportError) -> TransportResponse {
        guard code == CURLE_OK else { throw error(for: code) }
        guard (100...999).contains(status) else { throw .other(code: Int32(CURLE_WEIRD_SERVER_REPLY.rawValue)) }
        return TransportResponse(status: status, headers: HTTPHeaders(headers), body: body)
    }

    private func error(for code: CURLcode) -> TransportError {
        switch code {
        case CURLE_WRITE_ERROR where exceededLimit, CURLE_ABORTED_BY_CALLBACK where exceededLimit,
            CURLE_FILESIZE_EXCEEDED:
            return .tooLarge(limit: limit)
        case CURLE_ABORTED_BY_CALLBACK:
            return .cancelled
        case CURLE_OPERATION_TIMEDOUT:
            return .timedOut
        case CURLE_COULDNT_CONNECT:
            return .connectionRefused
        case CURLE_COULDNT_RESOLVE_HOST, CURLE_COULDNT_RESOLVE_PROXY:
            return .dnsFailure
        case CURLE_RECV_ERROR, CURLE_SEND_ERROR, CURLE_GOT_NOTHING:
            return .connectionReset
        case CURLE_SSL_CONNECT_ERROR, CURLE_SSL_ENGINE_NOTFOUND, CURLE_SSL_ENGINE_SETFAILED,
            CURLE_SSL_CERTPROBLEM, CURLE_SSL_CIPHER, CURLE_PEER_FAILED_VERIFICATION,
            CURLE_SSL_ENGINE_INITFAILED, CURLE_SSL_CACERT_BADFILE, CURLE_SSL_SHUTDOWN_FAILED,
            CURLE_SSL_CRL_BADFILE, CURLE_SSL_ISSUER_ERROR, CURLE_SSL_PINNEDPUBKEYNOTMATCH,
            CURLE_SSL_INVALIDCERTSTATUS, CURLE_SSL_CLIENTCERT:
            return .tls
        default:
            return .other(code: Int32(bitPattern: code.rawValue))
        }
    }

    private func statusCode(_ line: ArraySlice<UInt8>) -> Int? {
        guard let space = line.firstIndex(of: 0x20) else { return nil }
        let digits = line[(space + 1)...].prefix(3)
        guard digits.count == 3, digits.allSatisfy({ (0x30...0x39).contains($0) }) else { return nil }
        return digits.reduce(0) { $0 * 10 + Int($1 - 0x30) }
    }

    private func trimmed(_ bytes: ArraySlice<UInt8>) -> String {
        let isSpace: (UInt8) -> Bool = { $0 == 0x20 || $0 == 0x09 }
        guard let first = bytes.firstIndex(where: { !isSpace($0) }),
            let last = bytes.lastIndex(where: { !isSpace($0) })
        else { return "" }
        return String(decoding: bytes[first...last], as: UTF8.self)
    }
}

// MARK: - libcurl callbacks (the transfer travels through `Unmanaged`; nothing global)

extension CurlTransfer {
    static let writeBody: curl_write_callback = { data, size, count, closure in
        guard let closure else { return 0 }
        let transfer = Unmanaged<CurlTransfer>.fromOpaque(closure).takeUnretainedValue()
        let length = size * count
        // Returning fewer octets than offered makes libcurl fail the transfer with CURLE_WRITE_ERROR.
        return transfer.receiveBody(UnsafeRawBufferPointer(start: data, count: length)) ? length : 0
    }

    static let writeHeader: curl_write_callback = { data, size, count, closure in
        guard let closure else { return 0 }
        let length = size * count
        Unmanaged<CurlTransfer>.fromOpaque(closure).takeUnretainedValue()
            .receiveHeaderLine(UnsafeRawBufferPointer(start: data, count: length))
        return length
    }

    /// libcurl calls this many times a second while sending or receiving and at least once a second
    /// while waiting, so cancellation takes effect within about a second.
    static let progress: curl_xferinfo_callback = { closure, _, received, _, _ in
        guard let closure else { return 0 }
        let transfer = Unmanaged<CurlTransfer>.fromOpaque(closure).takeUnretainedValue()
        return transfer.isCancelled || !transfer.receivedOnWire(Int64(received)) ? 1 : 0
    }
}
