import Dispatch
import Foundation
import Synchronization

/// The threads handlers run on: a job goes to an idle thread, or to a new thread when none is idle,
/// so any number of handlers may block at once. Threads are reused (starting one costs more than a
/// small request) and end after ``idleLifetime`` without work or when the pool is closed.
final class HandlerThreads: Sendable {
    static let idleLifetime = DispatchTimeInterval.seconds(10)

    private struct State {
        var idle: [Worker] = []
        var closed = false
    }

    private let state = Mutex(State())

    /// Runs `job` on an idle thread or a new one.
    func run(_ job: @escaping @Sendable () -> Void) {
        let idle = state.withLock { $0.idle.popLast() }
        if let idle {
            idle.assign(job)
        } else {
            let worker = Worker(job)
            let thread = Thread { [self] in serve(worker) }
            thread.name = "seedkit-http-handler"
            thread.start()
        }
    }

    /// Ends every idle thread; a thread still running a job ends when the job returns. Call once no more
    /// jobs will be submitted.
    func close() {
        let idle = state.withLock { state in
            state.closed = true
            defer { state.idle = [] }
            return state.idle
        }
        for worker in idle { worker.dismiss() }
    }

    private func serve(_ worker: Worker) {
        while let job = worker.next() {
            job()
            let parked = state.withLock { state in
                guard !state.closed else { return false }
                state.idle.append(worker)
                return true
            }
            guard parked else { return }
            guard worker.awaitAssignment(within: Self.idleLifetime) else {
                let retired = state.withLock { state in
                    guard let index = state.idle.firstIndex(where: { $0 === worker }) else { return false }
                    state.idle.remove(at: index)
                    return true
                }
                // Not retired: `run` took this worker just now and is assigning it a job.
                if retired { return }
                worker.awaitAssignment()
                continue
            }
        }
    }
}

/// One pool thread's mailbox: the job it runs next, or `nil` when it must end.
private final class Worker: Sendable {
    private let job: Mutex<(@Sendable () -> Void)?>
    private let assigned = DispatchSemaphore(value: 0)

    init(_ first: @escaping @Sendable () -> Void) {
        job = Mutex(first)
    }

    func assign(_ job: @escaping @Sendable () -> Void) {
        self.job.withLock { $0 = job }
        assigned.signal()
    }

    func dismiss() {
        job.withLock { $0 = nil }
        assigned.signal()
    }

    /// `false` when nothing was assigned within `interval`.
    func awaitAssignment(within interval: DispatchTimeInterval) -> Bool {
        assigned.wait(timeout: .now() + interval) == .success
    }

    func awaitAssignment() {
        assigned.wait()
    }

    /// Takes the assigned job, leaving the mailbox empty.
    func next() -> (@Sendable () -> Void)? {
        job.withLock { job in
            defer { job = nil }
            return job
        }
    }
}
