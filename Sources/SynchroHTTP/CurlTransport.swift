import CCurl
import Foundation
import Synchronization

/// The libcurl implementation of ``HTTPTransport``.
///
/// One easy handle per transport keeps the connection alive between requests. The handle is guarded
/// by a mutex, so a transport may be shared between threads, but its requests then run one at a time;
/// give each thread its own transport for parallel requests. Responses are decoded from gzip or
/// deflate, TLS peers are always verified, and nothing is ever logged.
public final class CurlTransport: HTTPTransport, Sendable {
    private typealias Outcome = Result<TransportResponse, TransportError>

    /// The configuration this transport was created with.
    public let configuration: Configuration
    /// The base URL requests are sent below, without a trailing `/`.
    public let baseURL: String
    private let easy: Mutex<UnsafeMutableRawPointer>
    /// Raised by `cancel()`; stays raised until `resetCancellation()`.
    private let cancellation = CancellationFlag()

    /// A transport for `configuration`. Throws ``TransportError/invalidRequest`` for a base URL that is
    /// not `http(s)://` or carries credentials, and ``TransportError/other(code:)`` when libcurl cannot
    /// be initialized.
    public init(configuration: Configuration) throws(TransportError) {
        guard let baseURL = Self.validatedBaseURL(configuration.baseURL) else { throw .invalidRequest }
        guard CurlGlobal.isInitialized, let handle = curl_easy_init() else {
            throw .other(code: Int32(CURLE_FAILED_INIT.rawValue))
        }
        self.configuration = configuration
        self.baseURL = baseURL
        easy = Mutex(handle)
    }

    deinit {
        easy.withLock { curl_easy_cleanup($0) }
    }

    /// Sends `request` on the calling thread; see ``HTTPTransport/send(_:)``.
    public func send(_ request: TransportRequest) throws(TransportError) -> TransportResponse {
        try perform(request, callCancellation: nil)
    }

    /// Sends `request` on a thread of its own so the caller's task does not block the cooperative pool
    /// (dispatch's pool would grow only slowly while its threads wait in `poll`). Cancelling the task
    /// stops this request only, within about a second.
    public func send(_ request: TransportRequest) async throws(TransportError) -> TransportResponse {
        let call = CancellationFlag()
        let result = await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Outcome, Never>) in
                Thread {
                    continuation.resume(
                        returning: Result { () throws(TransportError) in
                            try self.perform(request, callCancellation: call)
                        })
                }.start()
            }
        } onCancel: {
            call.raise()
        }
        return try result.get()
    }

    /// Stops the request in progress within about a second and makes every later request fail with
    /// ``TransportError/cancelled`` until ``resetCancellation()``. Callable from any thread.
    public func cancel() {
        cancellation.raise()
    }

    /// Lets requests run again after ``cancel()``.
    public func resetCancellation() {
        cancellation.lower()
    }

    /// Whether ``cancel()`` was called since the last ``resetCancellation()``.
    public var isCancelled: Bool { cancellation.isRaised }

    private func perform(
        _ request: TransportRequest, callCancellation: CancellationFlag?
    ) throws(TransportError) -> TransportResponse {
        guard request.path.first == "/", !request.path.utf8.contains(where: isControlOrSpace) else {
            throw .invalidRequest
        }
        let url = baseURL + request.path
        let lines = try headerLines(for: request)
        let flags = [cancellation] + (callCancellation.map { [$0] } ?? [])
        return try easy.withLock { handle throws(TransportError) -> TransportResponse in
            guard !flags.contains(where: \.isRaised) else { throw .cancelled }
            var list: UnsafeMutablePointer<curl_slist>?
            defer { curl_slist_free_all(list) }
            for line in lines {
                guard let extended = curl_slist_append(list, line) else {
                    throw .other(code: Int32(CURLE_OUT_OF_MEMORY.rawValue))
                }
                list = extended
            }
            let limit = min(request.maximumResponseBytes ?? .max, configuration.maximumResponseBytes)
            let transfer = CurlTransfer(limit: limit, cancellations: flags)
            let code = request.body.withUnsafeBytes { body in
                withExtendedLifetime(transfer) {
                    // A reset keeps the connection cache but clears every option of the previous request.
                    curl_easy_reset(handle)
                    var options = CurlOptions(handle: handle)
                    configure(&options, url: url, headers: list, transfer: transfer)
                    if request.method == .post {
                        options.setBody(body)
                    } else {
                        options.set(CURLOPT_HTTPGET, 1)
                    }
                    return options.failure ?? curl_easy_perform(handle)
                }
            }
            return try transfer.outcome(of: code)
        }
    }

    private func configure(
        _ options: inout CurlOptions, url: String, headers: UnsafeMutablePointer<curl_slist>?, transfer: CurlTransfer
    ) {
        let closure = UnsafeRawPointer(Unmanaged.passUnretained(transfer).toOpaque())
        options.set(CURLOPT_URL, url)
        options.set(CURLOPT_PROTOCOLS_STR, "http,https")
        // Timeouts must not raise signals in a multi-threaded process.
        options.set(CURLOPT_NOSIGNAL, 1)
        options.set(CURLOPT_CONNECTTIMEOUT_MS, configuration.connectTimeout.roundedUpMilliseconds)
        options.set(CURLOPT_TIMEOUT_MS, configuration.totalTimeout.roundedUpMilliseconds)
        // The empty string offers every encoding this libcurl can decode and turns decoding on.
        options.set(CURLOPT_ACCEPT_ENCODING, "")
        // A declared Content-Length over the limit fails before the body; the octets received on the wire (before
        // decoding) are counted by the progress callback and the decoded ones by the write callback.
        options.set(CURLOPT_MAXFILESIZE_LARGE, offset: transfer.limit)
        options.set(CURLOPT_SSL_VERIFYPEER, 1)
        options.set(CURLOPT_SSL_VERIFYHOST, 2)
        if let caFile = configuration.caFile { options.set(CURLOPT_CAINFO, caFile) }
        if let userAgent = configuration.userAgent { options.set(CURLOPT_USERAGENT, userAgent) }
        options.set(CURLOPT_HTTPHEADER, UnsafeRawPointer(headers))
        options.set(CURLOPT_WRITEFUNCTION, CurlTransfer.writeBody)
        options.set(CURLOPT_WRITEDATA, closure)
        options.set(CURLOPT_HEADERFUNCTION, CurlTransfer.writeHeader)
        options.set(CURLOPT_HEADERDATA, closure)
        options.set(CURLOPT_XFERINFOFUNCTION, CurlTransfer.progress)
        options.set(CURLOPT_XFERINFODATA, closure)
        options.set(CURLOPT_NOPROGRESS, 0)
    }

    /// The `curl_slist` lines for the request's fields, in order. libcurl's own `Content-Type` default
    /// for POST (`application/x-www-form-urlencoded`) is suppressed so that only fields the caller set
    /// are sent.
    private func headerLines(for request: TransportRequest) throws(TransportError) -> [String] {
        var lines: [String] = []
        for field in request.headers {
            guard isToken(field.name), !field.value.utf8.contains(where: isForbiddenInValue) else {
                throw .invalidRequest
            }
            // libcurl reads `Name:` as "remove this field"; `Name;` is its spelling of an empty value.
            lines.append(field.value.isEmpty ? field.name + ";" : field.name + ": " + field.value)
        }
        if request.method == .post, request.headers.first("Content-Type") == nil {
            lines.append("Content-Type:")
        }
        return lines
    }

    private static func validatedBaseURL(_ text: String) -> String? {
        let lowered = text.lowercased()
        guard let schemeEnd = ["http://", "https://"].first(where: lowered.hasPrefix)?.count,
            !text.utf8.contains(where: isControlOrSpace)
        else { return nil }
        let afterScheme = text.dropFirst(schemeEnd)
        let authority = afterScheme.prefix { $0 != "/" }
        guard !authority.isEmpty, !authority.contains("@") else { return nil }
        var result = text
        while result.hasSuffix("/"), result.count > schemeEnd + authority.count { result.removeLast() }
        return result
    }
}

/// Collects the first failure of a series of `curl_easy_setopt` calls.
private struct CurlOptions {
    let handle: UnsafeMutableRawPointer
    private(set) var failure: CURLcode?

    init(handle: UnsafeMutableRawPointer) {
        self.handle = handle
    }

    mutating func set(_ option: CURLoption, _ value: Int) {
        record(CurlOptionSetter.set(handle, option, value))
    }

    /// `_LARGE` options, which take a `curl_off_t`.
    mutating func set(_ option: CURLoption, offset value: Int) {
        record(CurlOptionSetter.set(handle, option, offset: Int64(value)))
    }

    mutating func set(_ option: CURLoption, _ value: String) {
        record(CurlOptionSetter.set(handle, option, value))
    }

    mutating func set(_ option: CURLoption, _ value: UnsafeRawPointer?) {
        record(CurlOptionSetter.set(handle, option, value))
    }

    mutating func set(_ option: CURLoption, _ value: curl_write_callback) {
        record(CurlOptionSetter.set(handle, option, value))
    }

    mutating func set(_ option: CURLoption, _ value: curl_xferinfo_callback) {
        record(CurlOptionSetter.set(handle, option, value))
    }

    /// A POST of exactly `body`; the octets stay in the caller's buffer for the whole transfer.
    mutating func setBody(_ body: UnsafeRawBufferPointer) {
        set(CURLOPT_POST, 1)
        set(CURLOPT_POSTFIELDSIZE_LARGE, offset: body.count)
        // A null POSTFIELDS would make libcurl read the body from stdin; an empty body points at "".
        let empty: StaticString = ""
        set(CURLOPT_POSTFIELDS, body.baseAddress.map(UnsafeRawPointer.init) ?? UnsafeRawPointer(empty.utf8Start))
    }

    private mutating func record(_ code: CURLcode) {
        if failure == nil, code != CURLE_OK { failure = code }
    }
}

extension Duration {
    /// Milliseconds for libcurl's `_MS` options, at least 1 because 0 means "no timeout".
    fileprivate var roundedUpMilliseconds: Int {
        let (seconds, attoseconds) = components
        let fraction = (attoseconds + 999_999_999_999_999) / 1_000_000_000_000_000
        let (scaled, overflow) = seconds.multipliedReportingOverflow(by: 1000)
        guard !overflow else { return Int.max }
        return max(1, Int(clamping: scaled + fraction))
    }
}

/// RFC 9110 `tchar`.
private func isToken(_ name: String) -> Bool {
    !name.isEmpty
        && name.utf8.allSatisfy { byte in
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "a")...UInt8(ascii: "z"),
                UInt8(ascii: "A")...UInt8(ascii: "Z"):
                true
            default:
                Array("!#$%&'*+-.^_`|~".utf8).contains(byte)
            }
        }
}

/// Control characters other than horizontal tab would split or corrupt the header block.
private func isForbiddenInValue(_ byte: UInt8) -> Bool {
    (byte < 0x20 && byte != 0x09) || byte == 0x7F
}

private func isControlOrSpace(_ byte: UInt8) -> Bool {
    byte <= 0x20 || byte == 0x7F
}
