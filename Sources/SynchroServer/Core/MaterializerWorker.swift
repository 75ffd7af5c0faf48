import Foundation
import Synchronization

/// The background WAL consumer of ``MaterializationMode/background(interval:)``: every interval
/// it turns captured writes into the pull-visible stream, unless materialization is paused.
final class MaterializerWorker: Sendable {
    private let interval: Duration
    private let stopping = Atomic<Bool>(false)
    private let wake = DispatchSemaphore(value: 0)
    private let finished = DispatchSemaphore(value: 0)
    private let started = Atomic<Bool>(false)

    init(interval: Duration) {
        self.interval = interval
    }

    /// Starts the worker thread; it holds the engine weakly so the engine can go away.
    func start(engine: SyncEngine) {
        started.store(true, ordering: .sequentiallyConsistent)
        let thread = Thread { [weak engine, self] in
            let milliseconds = max(1, Int(interval.components.seconds * 1000 + interval.components.attoseconds / 1_000_000_000_000_000))
            while !self.stopping.load(ordering: .sequentiallyConsistent) {
                // A timed wait on a semaphore that only `stop` signals: the product's pacing, not test synchronization.
                _ = self.wake.wait(timeout: .now() + .milliseconds(milliseconds))
                guard !self.stopping.load(ordering: .sequentiallyConsistent), let engine else { break }
                engine.runMaterializerPass()
            }
            self.finished.signal()
        }
        thread.name = "seedkit-materializer"
        thread.start()
    }

    /// Stops the thread and waits for it (idempotent).
    func stop() {
        guard started.load(ordering: .sequentiallyConsistent),
              !stopping.exchange(true, ordering: .sequentiallyConsistent)
        else { return }
        wake.signal()
        finished.wait()
    }
}

extension SyncEngine {
    /// One pass of the background materializer (what it does every interval), skipped while the
    /// `pause_materialization` fault holds. Tests call it to run a pass at a chosen moment.
    public func runMaterializerPass() {
        let mark = checkpointer?.mark
        state.withLock { state in
            guard !state.materializationPaused else { return }
            Materializer.materializePending(state: &state)
        }
        boundLog(since: mark)
    }
}
