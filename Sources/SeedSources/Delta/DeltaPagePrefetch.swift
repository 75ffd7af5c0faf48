import Foundation
import Synchronization

/// Fetches and reads the next page of one entity type on a thread of its own while the writer applies the current
/// one, so the request, the server's answer and the parse overlap the SQLite work on a second core. One page ahead
/// at most (bounded memory: the page being applied and the one being fetched), handed over strictly in order: the
/// writer sees exactly the sequence of pages and failures a one-at-a-time pull would, and a failure of page N+1
/// reaches it only after page N was applied and checkpointed. The next request depends on the page before it only
/// (its cursor, or zero after a `reset`), which is why it can be sent before that page is applied.
final class DeltaPagePrefetch: Sendable {
    /// Why a page could not be read: the request failed (already typed), or the page broke a protocol rule (the
    /// writer names the entity type and the page number it has reached).
    enum Failure: Error {
        case source(DeltaSourceError)
        case rule(String)
    }

    typealias Item = Result<DeltaPage, Failure>

    private let slot = Mutex<Item?>(nil)
    private let cancelled = Atomic<Bool>(false)
    // All three start at zero (libdispatch traps when a semaphore is released below its initial value).
    /// Signalled when the slot holds the next item.
    private let filled = DispatchSemaphore(value: 0)
    /// Signalled when the writer took the item (and once at the start): the fetcher may request the next page.
    private let freed = DispatchSemaphore(value: 0)
    private let finished = DispatchSemaphore(value: 0)

    /// Starts fetching at `start`: `fetch` gets and reads the page at a cursor; `following` gives the cursor of the
    /// page after a page (nil: it was the last). The thread ends after the last page, after a failure, or at
    /// ``stop()``.
    init<Cursor: Sendable>(
        from start: Cursor, fetch: @escaping @Sendable (Cursor) -> Item,
        following: @escaping @Sendable (DeltaPage, Cursor) -> Cursor?
    ) {
        let thread = Thread { [self] in
            var cursor = start
            while true {
                freed.wait()
                if cancelled.load(ordering: .acquiring) { break }
                let item = fetch(cursor)
                slot.withLock { $0 = item }
                filled.signal()
                guard case .success(let page) = item, let next = following(page, cursor) else { break }
                cursor = next
            }
            finished.signal()
        }
        freed.signal()
        thread.start()
    }

    /// The next page or failure in order; waits while it is being fetched. Called again only after the previous
    /// item was a page that announced more.
    func next() -> Item {
        filled.wait()
        let item = slot.withLock { slot in
            defer { slot = nil }
            return slot!
        }
        freed.signal()
        return item
    }

    /// Ends the fetching thread and waits for it (a request in flight completes first), so nothing uses the
    /// transport after the pull returns. Called exactly once, whether the pull completed or failed.
    func stop() {
        cancelled.store(true, ordering: .releasing)
        freed.signal()
        finished.wait()
    }
}
