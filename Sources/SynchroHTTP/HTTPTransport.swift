/// Sends one request and returns the complete response. Synchronous: the sync engine runs on its
/// own thread and a transport is its only I/O seam, so tests substitute a scripted transport.
///
/// Any HTTP status is a response, not an error: error dispatch (wire-protocol §8) belongs to the
/// engine. Only a missing response throws. Transports are `Sendable` so an engine may hold one while
/// being shared; fakes with scripted state guard it with a `Mutex`.
public protocol HTTPTransport: Sendable {
    /// Sends `request` and blocks until the response is complete or the request failed.
    func send(_ request: TransportRequest) throws(TransportError) -> TransportResponse
}
