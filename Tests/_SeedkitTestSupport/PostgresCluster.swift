import Foundation
import Synchronization
import PostgresKit

/// A throwaway PostgreSQL cluster for tests: `initdb` into a fresh temporary directory, its own Unix socket
/// directory and TCP port on 127.0.0.1, started with `pg_ctl`, and stopped and removed when the test process
/// ends (or when ``stop()`` is called), whatever the tests did.
///
/// PostgreSQL refuses to run as root, and CI runs as root: the cluster's files then belong to the `postgres`
/// user and every server command runs through `runuser -u postgres`, in a directory that user can traverse.
/// Local socket connections are trusted; TCP connections need a password (SCRAM), so authentication failures
/// can be tested. The server runs without fsync: its data is thrown away.
public final class PostgresCluster: Sendable {
    /// The superuser, who owns the cluster.
    public static let superuser = "postgres"
    /// The superuser's password over TCP.
    public static let superuserPassword = "seedkit-test-superuser"

    /// The folder holding the data directory, the socket and the log.
    public let directory: String
    /// The TCP port on 127.0.0.1 (also the socket's port number).
    public let port: Int
    /// The PostgreSQL server binaries used.
    public let binaries: String
    private let stopped = Mutex(false)
    /// The write end of the watchdog's pipe: held only by this process (close-on-exec), so the watchdog reads end
    /// of file exactly when this process ends, however it ends.
    private let lifeline: Int32

    /// The data directory.
    public var dataDirectory: String { directory + "/data" }

    /// A libpq connection string to `database` over the Unix socket as `user` (trusted, no password).
    public func socketConnectionString(database: String = "postgres", user: String = superuser) -> String {
        "host=\(directory) port=\(port) dbname=\(database) user=\(user)"
    }

    /// A `postgresql://` URI to `database` over TCP on 127.0.0.1 as `user`, without a password (supply it
    /// through `PGPASSWORD` or a passfile, as a user would).
    public func tcpURI(database: String = "postgres", user: String = superuser) -> String {
        "postgresql://\(user)@127.0.0.1:\(port)/\(database)"
    }

    /// Runs `sql` as the superuser in `database` (over the socket): tests that need a role or drop a function.
    public func execute(_ sql: String, database: String = "postgres") throws {
        _ = try PostgresConnection(connectionString: socketConnectionString(database: database)).execute(sql)
    }

    /// Creates a password login, a member of `group` when given (cluster-wide, so tests use unique names).
    public func createLogin(_ name: String, password: String, memberOf group: String? = nil) throws {
        try execute("CREATE ROLE \(name) LOGIN PASSWORD '\(password)'" + (group.map { " IN ROLE \($0)" } ?? ""))
    }

    /// The cluster shared by every test of this process, started on first use and stopped at exit. Nil, with the
    /// reason, when no PostgreSQL server is installed (`make deps` installs it).
    public static func shared() throws -> PostgresCluster {
        try sharedCluster.withLock { cluster in
            if let cluster { return cluster }
            let started = try PostgresCluster()
            cluster = started
            atexit { PostgresCluster.stopShared() }
            return started
        }
    }

    private static let sharedCluster = Mutex<PostgresCluster?>(nil)

    private static func stopShared() {
        sharedCluster.withLock { $0?.stop() }
    }

    /// Creates, configures and starts a new cluster.
    public init() throws {
        binaries = try Self.findBinaries()
        let base = "/tmp/seedkit-pg-" + UUID().uuidString.lowercased().prefix(12)
        try FileManager.default.createDirectory(atPath: base, withIntermediateDirectories: false,
                                                attributes: [.posixPermissions: 0o755])
        directory = base
        port = try Self.freePort()
        lifeline = try Self.startWatchdog(directory: base, binaries: binaries)
        do {
            try writeRestricted(directory + "/pwfile", Self.superuserPassword + "\n")
            try handOver(directory)
            try runServerCommand("initdb", [
                "-D", dataDirectory, "-U", Self.superuser, "--pwfile=\(directory)/pwfile", "-E", "UTF8",
                "--locale=C", "--auth-local=trust", "--auth-host=scram-sha-256", "--no-sync",
            ])
            try runServerCommand("pg_ctl", [
                "-D", dataDirectory, "-l", directory + "/server.log", "-w", "-t", "60", "-o",
                "-p \(port) -k \(directory) -c listen_addresses=127.0.0.1 -c fsync=off -c synchronous_commit=off "
                    + "-c full_page_writes=off -c max_connections=150 -c wal_level=logical "
                    + "-c max_replication_slots=8 -c max_wal_senders=8",
                "start",
            ])
        } catch {
            stop()
            throw error
        }
    }

    deinit {
        stop()
    }

    /// Stops the server immediately and removes its directory; later calls do nothing.
    public func stop() {
        let first = stopped.withLock { done -> Bool in
            defer { done = true }
            return !done
        }
        guard first else { return }
        if FileManager.default.fileExists(atPath: dataDirectory + "/postmaster.pid") {
            try? runServerCommand("pg_ctl", ["-D", dataDirectory, "-m", "immediate", "-w", "stop"])
        }
        try? FileManager.default.removeItem(atPath: directory)
        close(lifeline)
    }

    /// Starts a shell that waits for end of file on a pipe only this process writes to, then stops the cluster
    /// and removes its directory: a test process killed by a signal (atexit handlers do not run then) still
    /// leaves no server behind. Returns the pipe's write end.
    private static func startWatchdog(directory: String, binaries: String) throws -> Int32 {
        var ends: [Int32] = [-1, -1]
        guard pipe(&ends) == 0 else { throw ClusterFailure("pipe failed: errno \(errno)") }
        for end in ends { _ = fcntl(end, F_SETFD, FD_CLOEXEC) }
        let stop = "\(binaries)/pg_ctl -D '\(directory)/data' -m immediate -w stop"
        let asOwner = isRoot ? "/usr/sbin/runuser -u \(superuser) -- \(stop)" : stop
        let script = "read _ ; if [ -f '\(directory)/data/postmaster.pid' ]; then \(asOwner); fi; rm -rf '\(directory)'"
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_adddup2(&actions, ends[0], 0)
        posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0)
        let words: [String] = ["/bin/sh", "-c", script]
        let argv: [UnsafeMutablePointer<CChar>?] = words.map { strdup($0) } + [nil]
        defer { argv.forEach { free($0) } }
        var pid: pid_t = 0
        let spawned = posix_spawn(&pid, "/bin/sh", &actions, nil, argv, environ)
        close(ends[0])
        guard spawned == 0 else {
            close(ends[1])
            throw ClusterFailure("cannot start the cluster watchdog: errno \(spawned)")
        }
        return ends[1]
    }

    /// The last lines of the server log (for a failing test's message).
    public func logTail(lines: Int = 20) -> String {
        let text = (try? String(contentsOfFile: directory + "/server.log", encoding: .utf8)) ?? ""
        return text.split(separator: "\n").suffix(lines).joined(separator: "\n")
    }

    // MARK: - Processes

    private static var isRoot: Bool { getuid() == 0 }

    /// Runs a server binary as the cluster's owner; throws with its output when it fails.
    private func runServerCommand(_ name: String, _ arguments: [String]) throws {
        let executable = binaries + "/" + name
        if Self.isRoot {
            try Self.run("/usr/sbin/runuser", ["-u", Self.superuser, "--", executable] + arguments)
        } else {
            try Self.run(executable, arguments)
        }
    }

    /// Runs `executable` and waits for it, its output in a temporary file. Spawned and reaped directly, not through
    /// Foundation's `Process`: `pg_ctl start` leaves a server running that inherits the child's descriptors, and
    /// `Process` learns of a child's exit through a descriptor the child holds, so it would wait for the server.
    private static func run(_ executable: String, _ arguments: [String]) throws {
        let outputPath = NSTemporaryDirectory() + "seedkit-pg-output-" + UUID().uuidString
        defer { unlink(outputPath) }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, outputPath, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        posix_spawn_file_actions_adddup2(&actions, 1, 2)
        let argv = ([executable] + arguments).map { strdup($0) } + [nil]
        defer { argv.forEach { free($0) } }
        var pid: pid_t = 0
        let spawned = posix_spawn(&pid, executable, &actions, nil, argv, environ)
        guard spawned == 0 else { throw ClusterFailure("cannot start \(executable): errno \(spawned)") }
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 {
            guard errno == EINTR else { throw ClusterFailure("waitpid failed: errno \(errno)") }
        }
        let exited = (status & 0x7f) == 0
        let code = (status >> 8) & 0xff
        guard exited, code == 0 else {
            let text = (try? String(contentsOfFile: outputPath, encoding: .utf8)) ?? ""
            throw ClusterFailure(
                "\((executable as NSString).lastPathComponent) failed (status \(status)): " + text.suffix(2000))
        }
    }

    /// Gives `path` (recursively) to the `postgres` user when running as root.
    private func handOver(_ path: String) throws {
        guard Self.isRoot else { return }
        try Self.run("/bin/chown", ["-R", "\(Self.superuser):", path])
    }

    private func writeRestricted(_ path: String, _ text: String) throws {
        guard FileManager.default.createFile(
            atPath: path, contents: Data(text.utf8), attributes: [.posixPermissions: 0o600])
        else { throw ClusterFailure("cannot write \(path)") }
    }

    /// `$SEEDKIT_PG_BINDIR`, else the newest `/usr/lib/postgresql/<version>/bin` holding `initdb`.
    private static func findBinaries() throws -> String {
        if let override = ProcessInfo.processInfo.environment["SEEDKIT_PG_BINDIR"], !override.isEmpty {
            return override
        }
        let root = "/usr/lib/postgresql"
        let versions = ((try? FileManager.default.contentsOfDirectory(atPath: root)) ?? [])
            .compactMap(Int.init).sorted(by: >)
        for version in versions where FileManager.default.isExecutableFile(atPath: "\(root)/\(version)/bin/initdb") {
            return "\(root)/\(version)/bin"
        }
        throw ClusterFailure("no PostgreSQL server found under \(root) (make deps installs postgresql)")
    }

    /// A TCP port on 127.0.0.1 that was free a moment ago (bound to port 0, read, released).
    private static func freePort() throws -> Int {
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard descriptor >= 0 else { throw ClusterFailure("socket() failed") }
        defer { close(descriptor) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { socketAddress in
                bind(descriptor, socketAddress, length) == 0 && getsockname(descriptor, socketAddress, &length) == 0
            }
        }
        guard bound else { throw ClusterFailure("cannot bind a loopback port") }
        return Int(UInt16(bigEndian: address.sin_port))
    }
}

/// Why a throwaway cluster could not be set up.
public struct ClusterFailure: Error, CustomStringConvertible {
    public let description: String

    init(_ description: String) {
        self.description = description
    }
}
