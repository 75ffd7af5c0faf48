import Foundation
import SynchroProtocol

/// A complete response: status, header fields of the final response in wire order (duplicates kept)
/// and the body octets after content decoding.
public struct TransportResponse: Sendable, Hashable {
    /// The HTTP status code.
    public var status: Int
    /// Header fields of the final response (interim `100 Continue` fields are dropped).
    public var headers: HTTPHeaders
    /// The body, gzip/deflate already decoded.
    public var body: [UInt8]

    /// A response with the given parts.
    public init(status: Int, headers: HTTPHeaders = [], body: [UInt8] = []) {
        self.status = status
        self.headers = headers
        self.body = body
    }

    /// The minimum delay before a retry from the single `Retry-After` field (wire-protocol §8.3), or
    /// `nil` when the field is missing, repeated or malformed.
    public func retryAfter(now: Date) -> Duration? {
        let milliseconds = Int64((now.timeIntervalSince1970 * 1000).rounded(.down))
        return headers.single("Retry-After").flatMap { RetryAfter.delay(parsing: $0, nowMilliseconds: milliseconds) }
    }
}

extension TransportResponse: CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    public var description: String { "\(status) (\(body.count)-octet body)" }
    public var debugDescription: String { "TransportResponse(\(description), headers: \(headers))" }
    public var customMirror: Mirror {
        Mirror(self, children: ["status": status, "headers": headers, "bodyCount": body.count])
    }
}
