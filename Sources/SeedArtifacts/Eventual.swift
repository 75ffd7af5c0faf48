import Dispatch
import Foundation

/// A value that one thread provides once and any number of threads wait for: what SeedArtifacts computes beside
/// its main work (an integrity check, the upper half of the row audit, the audit's whole-table queries, a page
/// request sent ahead) and what the publication checks hand to the installer checks.
///
/// `@unchecked Sendable`: `value` is written once, before `ready` is signalled, and read only after a wait on
/// `ready`, which orders that write before every read; whoever provides a value does not touch it afterwards.
final class Eventual<Value>: @unchecked Sendable {
    private var value: Value?
    private let ready = DispatchSemaphore(value: 0)

    init() {}

    /// The value `body` computes on a thread of its own — not on a dispatch queue: a waiter may itself be a dispatch
    /// worker, and on a one-CPU machine the queue's only worker would be the one waiting.
    convenience init(onThread body: @escaping @Sendable () -> Value) {
        self.init()
        Thread { [self] in provide(body()) }.start()
    }

    /// Provides the value; called exactly once.
    func provide(_ value: Value) {
        self.value = value
        ready.signal()
    }

    /// Waits until the value is provided.
    func wait() -> Value {
        ready.wait()
        ready.signal()
        guard let value else { preconditionFailure("an Eventual was signalled without its value") }
        return value
    }
}
