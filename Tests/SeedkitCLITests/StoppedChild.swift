import Foundation
import Glibc
import _SeedkitTestSupport

/// A `seedkit` child spawned directly (not through `Process`) so the test can `waitpid(WUNTRACED)` for the moment
/// it stops itself at a `SEEDKIT_CRASH_SIGNAL=STOP` boundary; standard output and error go to `output`.
final class StoppedChild {
    let pid: pid_t
    private var reaped = false

    init(_ arguments: [String], environment: [String: String], output: String) throws {
        let path = SeedkitProcess.executable.path
        let environment = ProcessInfo.processInfo.environment.merging(environment) { _, new in new }
        let argv = ([path] + arguments).map { strdup($0) } + [nil]
        let envp = environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer {
            argv.forEach { free($0) }
            envp.forEach { free($0) }
        }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, output, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        posix_spawn_file_actions_adddup2(&actions, 1, 2)
        var pid: pid_t = 0
        let result = posix_spawn(&pid, path, &actions, nil, argv, envp)
        guard result == 0 else { throw HarnessError("posix_spawn failed (errno \(result))") }
        self.pid = pid
    }

    /// Blocks until the child has stopped itself (or fails if it exited instead).
    func waitUntilStopped() throws {
        var status: Int32 = 0
        while waitpid(pid, &status, WUNTRACED) < 0 {
            guard errno == EINTR else { throw HarnessError("waitpid failed (errno \(errno))") }
        }
        guard status & 0xFF == 0x7F else {
            reaped = true
            throw HarnessError("the child ended (status \(status)) before its stop point")
        }
    }

    /// Lets the stopped child go on and returns its exit status.
    func continueAndWait() throws -> Int32 {
        Glibc.kill(pid, SIGCONT)
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 {
            guard errno == EINTR else { throw HarnessError("waitpid failed (errno \(errno))") }
        }
        reaped = true
        return (status >> 8) & 0xFF
    }

    func kill() {
        guard !reaped else { return }
        Glibc.kill(pid, SIGKILL)
        Glibc.kill(pid, SIGCONT)
        var status: Int32 = 0
        _ = waitpid(pid, &status, 0)
        reaped = true
    }
}
