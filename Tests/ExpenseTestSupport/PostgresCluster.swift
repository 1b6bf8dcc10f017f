import Foundation
import Postgres
import Synchronization

/// A PostgreSQL cluster of the tests' own, from Debian's binaries: `initdb`
/// into a temporary folder, the server on a Unix socket in that folder (no
/// TCP port at all), stopped by pid. Never the machine's own cluster.
///
/// PostgreSQL refuses to run as root; when the tests run as root, the
/// folder belongs to the `postgres` system user and the binaries run as it.
/// Connections use the role `postgres` with `trust` on the socket.
public final class PostgresCluster: @unchecked Sendable {
    public static let binaries = ProcessInfo.processInfo.environment["EXPENSE_TEST_PG_BIN"] ?? "/usr/lib/postgresql/15/bin"

    /// The cluster every test of a run shares, started on first use and
    /// stopped when the test process exits. Each test takes a database of
    /// its own in it (``makeDatabase()``).
    public static var shared: PostgresCluster {
        get throws {
            try sharedCluster.withLock { cluster in
                if let cluster { return cluster }
                let made = try PostgresCluster(name: "shared")
                cluster = made
                atexit { PostgresCluster.stopShared() }
                return made
            }
        }
    }

    private static let sharedCluster = Mutex<PostgresCluster?>(nil)

    private static func stopShared() {
        sharedCluster.withLock { cluster in
            cluster?.stop()
            cluster = nil
        }
    }

    public let directory: TemporaryDirectory
    public let dataDirectory: String
    /// Where the server's socket is: the `host` of its URLs.
    public let socketDirectory: String
    private let settings: [String]
    private var server: LaunchedService?
    private let databases = Atomic<Int>(0)

    /// Runs `initdb` and starts the server.
    /// - Parameters:
    ///   - durable: `fsync` on (for benchmarks); tests run with it off,
    ///     which loses nothing when the server alone crashes.
    ///   - settings: more `-c name=value` settings.
    public init(name: String = "pg", durable: Bool = false, settings: [String: String] = [:]) throws {
        directory = TemporaryDirectory(prefix: "expense-pg-\(name)")
        dataDirectory = directory.at("data")
        socketDirectory = directory.path
        var all = ["listen_addresses": "", "unix_socket_directories": directory.path, "max_connections": "200",
                   "fsync": durable ? "on" : "off", "full_page_writes": durable ? "on" : "off",
                   "shared_buffers": "64MB", "log_min_messages": "warning"]
        for (key, value) in settings { all[key] = value }
        self.settings = all.sorted { $0.key < $1.key }.flatMap { ["-c", "\($0.key)=\($0.value)"] }
        if getuid() == 0 {
            guard chown(directory.path, Self.postgresUser.uid, Self.postgresUser.gid) == 0 else {
                throw TestFailure("chown \(directory.path): \(String(cString: strerror(errno)))")
            }
            chmod(directory.path, 0o700)
        }
        try runAsOwner("initdb", ["-D", dataDirectory, "-U", "postgres", "-A", "trust", "-E", "UTF8", "--locale=C", "--no-sync"])
        try start()
    }

    deinit { stop() }

    /// The system user that owns the cluster when the tests run as root.
    private static let postgresUser: (uid: uid_t, gid: gid_t) = {
        guard let entry = getpwnam("postgres") else { return (0, 0) }
        return (entry.pointee.pw_uid, entry.pointee.pw_gid)
    }()

    /// Starts the server and waits until it accepts connections.
    public func start() throws {
        let service = try LaunchedService("\(Self.binaries)/postgres", ["-D", dataDirectory] + settings,
                                          user: "postgres", deathSignal: "SIGQUIT", outputDirectory: directory.path, name: "postgres")
        server = service
        try waitUntil(timeout: 60, "PostgreSQL to accept connections") {
            guard service.isRunning else { throw TestFailure("postgres exited: \(service.child.standardError)") }
            return (try? Connection(url(database: "postgres"))) != nil
        }
    }

    /// Fast shutdown (`SIGINT`): open transactions are rolled back, the
    /// rest is checkpointed. Waits for the exit.
    public func stop() {
        guard let server else { return }
        if server.stop(signal: SIGINT, timeout: 60) == nil { server.stop(signal: SIGKILL) }
        self.server = nil
    }

    /// Immediate shutdown (`SIGQUIT`), PostgreSQL's crash: the next start
    /// recovers from the WAL.
    public func crash() {
        guard let server else { return }
        server.stop(signal: SIGQUIT, timeout: 60)
        self.server = nil
    }

    public var pid: Int32? { server?.pid }

    /// The URL of `database`, as `expense-server --database` takes it.
    public func url(database: String) -> String {
        "postgresql:///\(database)?host=\(socketDirectory)&user=postgres"
    }

    /// Creates a new, empty database and returns its URL.
    public func makeDatabase() throws -> String {
        let name = "test_\(getpid())_\(databases.add(1, ordering: .relaxed).newValue)"
        let admin = try Connection(url(database: "postgres"))
        try admin.execute("CREATE DATABASE \(name) TEMPLATE template0 STRATEGY FILE_COPY")
        return url(database: name)
    }

    /// Runs one of the cluster's binaries (`pg_dump`, `psql`, …) to completion.
    public func run(_ tool: String, _ arguments: [String], timeout: Double = 120) throws -> CommandResult {
        try runCommand("\(Self.binaries)/\(tool)", arguments, timeout: timeout)
    }

    private func runAsOwner(_ tool: String, _ arguments: [String]) throws {
        let command = getuid() == 0
            ? ("/usr/bin/setpriv", ["--reuid=postgres", "--regid=postgres", "--init-groups", "--", "\(Self.binaries)/\(tool)"] + arguments)
            : ("\(Self.binaries)/\(tool)", arguments)
        let result = try runCommand(command.0, command.1, environment: ["LANG": "C", "LC_ALL": "C"], timeout: 120)
        guard result.status == 0 else { throw TestFailure("\(tool) failed (\(result.status)): \(result.stderr)") }
    }
}
