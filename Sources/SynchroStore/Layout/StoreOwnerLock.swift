import SystemKit

/// The one-owner rule of a client store (seed 002, "Accounts and cache authority": a database has one physical
/// owner; a competing open fails with `store_in_use`): an ``AdvisoryLock`` on `<store>.lock` beside the file, taken
/// before the file is opened or migrated and held until the owner closes it, refused at once when another process
/// holds it (naming its PID). Why a lock file and `flock` rather than a lock on the database itself:
/// `docs/decisions.md`, "One owner per store".
package final class StoreOwnerLock: Sendable {
    /// The lock file.
    package var path: String { lock.path }
    private let lock: AdvisoryLock

    /// Takes the lock for the store at `storePath`, failing at once with
    /// ``ClientStoreError/storeInUse(path:holderPID:)`` when another open description holds it.
    package init(storePath: String) throws(ClientStoreError) {
        do {
            lock = try AdvisoryLock(path: storePath + ".lock")
        } catch {
            switch error {
            case .held(_, let holder): throw .storeInUse(path: storePath, holderPID: holder)
            case .unavailable(let failure): throw .ownerLockUnavailable(path: failure.path, errno: failure.code)
            }
        }
    }
}
