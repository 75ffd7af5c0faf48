import Glibc
import Synchronization

/// SIGINT and SIGTERM as a request to stop at the next safe point instead of a kill: a long command (a pipeline run,
/// an export) installs the handler, checks ``requested`` between its units of work, removes its scratch files and
/// exits with the interrupted status. The handler only stores the signal number (async-signal-safe); everything
/// else happens on the command's own thread.
package enum Interruption {
    /// Installs the handler for SIGINT and SIGTERM. Until then the signals keep their default action (terminate).
    /// Call it on the thread that runs the command: the signals are also unblocked there, since a parent may start
    /// the process with them blocked (a blocked SIGTERM would otherwise stay pending and never stop the run).
    package static func install() {
        var set = sigset_t()
        sigemptyset(&set)
        for number in [SIGINT, SIGTERM] {
            _ = signal(number, { number in Interruption.received.store(number, ordering: .sequentiallyConsistent) })
            sigaddset(&set, number)
        }
        _ = pthread_sigmask(SIG_UNBLOCK, &set, nil)
    }

    /// Whether SIGINT or SIGTERM arrived since ``install()``.
    package static var requested: Bool { receivedSignal != nil }

    /// The signal that arrived, if any.
    package static var receivedSignal: Int32? {
        let number = received.load(ordering: .sequentiallyConsistent)
        return number == 0 ? nil : number
    }

    /// The last signal received; 0 for none.
    private static let received = Atomic<Int32>(0)
}
