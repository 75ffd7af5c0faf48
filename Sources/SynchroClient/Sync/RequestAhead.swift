import Dispatch
import SynchroStore
import Synchronization

/// At most one request sent ahead of its turn, on a worker thread: while the engine applies a rebuild page in its
/// transaction, the next page is requested, received, parsed and verified (`spec/wire-protocol.md` §6.4 pages are
/// reads of the server's staged snapshot, so asking early changes nothing on either side). Nothing durable depends
/// on it: the engine still reads its stored attempt, encodes the exact request and, only when that is byte for
/// byte the body sent ahead, takes the reply instead of sending the body again. Any other turn discards the reply.
///
/// Nothing is sent ahead once `isCancelled` says the cycle is stopping: a stop is honoured at the next step, as
/// without this. A request already in flight when the stop comes is waited for and discarded.
///
/// Never two requests in flight: ``send(_:_:)`` and ``take(_:)`` first wait for the one in flight, so the transport
/// serves one exchange at a time, as it does without this, and the transport's per-exchange record (the last
/// request body, `Retry-After`) describes the exchange whose result the engine acts on.
final class RequestAhead<Reply: Sendable>: Sendable {
    private struct Pending: Sendable {
        let body: [UInt8]
        let reply: PendingReply
    }

    private final class PendingReply: Sendable {
        private let result = Mutex<Result<Reply, SyncError>?>(nil)
        private let arrived = DispatchSemaphore(value: 0)

        func fulfil(_ value: Result<Reply, SyncError>) {
            result.withLock { $0 = value }
            arrived.signal()
        }

        func wait() -> Result<Reply, SyncError> {
            arrived.wait()
            arrived.signal()
            // Set before the signal.
            return result.withLock { $0 } ?? .failure(.invalidState(reason: "a request sent ahead left no reply"))
        }
    }

    private let pending = Mutex<Pending?>(nil)
    private let isCancelled: @Sendable () -> Bool

    init(isCancelled: @escaping @Sendable () -> Bool = { false }) {
        self.isCancelled = isCancelled
    }

    /// Sends `body` ahead: `exchange` runs on a worker thread and its outcome waits for ``take(_:)``. Does
    /// nothing once the cycle is stopping.
    func send(_ body: [UInt8], _ exchange: @escaping @Sendable () throws(SyncError) -> Reply) {
        drain()
        guard !isCancelled() else { return }
        let reply = PendingReply()
        pending.withLock { $0 = Pending(body: body, reply: reply) }
        DispatchQueue.global(qos: .userInitiated).async {
            do throws(SyncError) {
                reply.fulfil(.success(try exchange()))
            } catch {
                reply.fulfil(.failure(error))
            }
        }
    }

    /// The outcome of the request sent ahead when it was exactly `body` (waiting for it if needed); nil when
    /// none was sent or another body was (that one is waited for and discarded).
    func take(_ body: [UInt8]) -> Result<Reply, SyncError>? {
        guard let taken = pending.withLock({ slot -> Pending? in
            defer { slot = nil }
            return slot
        }) else { return nil }
        let outcome = taken.reply.wait()
        return taken.body == body ? outcome : nil
    }

    /// Waits for a request still in flight and discards its outcome.
    func drain() {
        _ = take([])
    }
}
