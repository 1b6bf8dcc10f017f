import Foundation
import Synchronization

/// A running `expense-server serve` on 127.0.0.1 with a port of its own,
/// a data directory, and a user: what end-to-end tests and the benchmark
/// talk to. Stopped by pid (SIGTERM) when it goes away.
public final class ServerProcess: @unchecked Sendable {
    public let child: ChildProcess
    public let port: UInt16
    public let dataDirectory: String
    /// The bearer token of the user made at start.
    public let token: String
    public let executable: String
    /// `--database`, when the server does not keep its data in SQLite.
    public let database: String?

    /// Makes a user `alice` in `dataDirectory` (unless given the `token` of
    /// a user made before), then starts the server with
    /// `--listen 127.0.0.1:0` and `arguments`, and waits for its
    /// "listening on" line. Its output goes to files in `outputDirectory`
    /// (default: the data directory's parent).
    /// - Parameters:
    ///   - database: `--database` (a `postgresql://` URL), for both `user add` and `serve`.
    ///   - port: the port to listen on; 0 (the default) picks a free one.
    ///   - launcher: a command that runs the server (`ip netns exec NS`), by `exec`.
    ///   - host: the address to listen on (another than loopback inside a network namespace of the test's own).
    public init(dataDirectory: String, database: String? = nil, arguments: [String] = [], executable: String = BuiltProducts.path("expense-server"),
                outputDirectory: String? = nil, environment: [String: String] = [:], token: String? = nil, port requestedPort: UInt16 = 0,
                launcher: [String] = [], host: String = "127.0.0.1") throws {
        self.executable = executable
        self.dataDirectory = dataDirectory
        self.database = database
        self.token = try token ?? Self.addUser("alice", dataDirectory: dataDirectory, database: database, executable: executable)
        let storage = ["--data-dir", dataDirectory] + (database.map { ["--database", $0] } ?? [])
        let command = launcher + [executable, "serve", "--listen", "\(host):\(requestedPort)"] + storage + arguments
        let child = try ChildProcess(command[0], Array(command.dropFirst()),
                                     environment: environment, outputDirectory: outputDirectory ?? URL(fileURLWithPath: dataDirectory).deletingLastPathComponent().path,
                                     name: "expense-server")
        self.child = child
        var found: UInt16?
        try waitUntil(timeout: 20, "expense-server to listen") {
            if !child.isRunning { throw TestFailure("expense-server exited: \(child.standardError)") }
            found = Self.listeningPort(in: child.standardError, host: host)
            return found != nil
        }
        port = found!
    }

    deinit { child.stop() }

    /// Runs `expense-server user add NAME` and returns the token it printed.
    public static func addUser(_ name: String, dataDirectory: String, database: String? = nil,
                               executable: String = BuiltProducts.path("expense-server")) throws -> String {
        let result = try runCommand(executable, ["user", "add", name, "--data-dir", dataDirectory] + (database.map { ["--database", $0] } ?? []))
        guard result.status == 0 else { throw TestFailure("user add \(name) failed (\(result.status)): \(result.stderr)") }
        return result.stdout.trimmingCharacters(in: .newlines)
    }

    /// The port of the `expense-server: listening on HOST:PORT` line.
    public static func listeningPort(in output: String, host: String = "127.0.0.1") -> UInt16? {
        for line in output.split(separator: "\n") where line.hasPrefix("expense-server: listening on \(host):") {
            return UInt16(line.split(separator: ":").last ?? "")
        }
        return nil
    }

    /// A new keep-alive connection to the server.
    public func connect(timeout: Double = 20) throws -> HTTPConnection {
        try HTTPConnection(port: port, timeout: timeout)
    }

    /// A port nothing listens on right now: for a server that is started
    /// later (and perhaps again), at an address a daemon already uses.
    /// Taken below the kernel's ephemeral range (32768 and up), so no
    /// outgoing connection of a test running beside this one is given it
    /// meanwhile, and never handed out twice: not by one test process, nor
    /// by two running side by side (see ``reservedForThisProcess(_:)``).
    public static func unusedPort() throws -> UInt16 {
        for _ in 0..<1000 {
            let port = UInt16.random(in: 20_000...32_000)
            guard handedOut.withLock({ $0.insert(port).inserted }), reservedForThisProcess(port) else { continue }
            let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            defer { close(fd) }
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_addr.s_addr = inet_addr("127.0.0.1")
            address.sin_port = port.bigEndian
            let bound = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
            }
            if bound == 0 { return port }
        }
        throw TestFailure("no unused port from 20000 to 32000 after 1000 tries")
    }

    private static let handedOut = Mutex<Set<UInt16>>([])

    /// The abstract Unix socket name (without its leading NUL) that holds
    /// `port` for a test process.
    public static func reservationName(_ port: UInt16) -> String { "expensed-test-port-\(port)" }

    /// Binds the abstract Unix socket ``reservationName(_:)`` and keeps it
    /// open until the test process exits (the kernel then frees the name,
    /// even after a kill): another test process on this machine that tries
    /// the same port finds the name taken and picks another.
    private static func reservedForThisProcess(_ port: UInt16) -> Bool {
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { return false }
        let bound = (try? withUnixAddress(reservationName(port), abstract: true) { bind(fd, $0, $1) }) ?? -1
        if bound != 0 { close(fd) }
        return bound == 0
    }

    /// The access log lines so far (lines that are not `expense-server: …`).
    public var accessLog: [String] {
        child.standardError.split(separator: "\n").map(String.init).filter { !$0.hasPrefix("expense-server:") }
    }

    /// SIGTERM, and the exit status.
    @discardableResult
    public func stop() -> Int32? {
        child.signal(SIGTERM)
        return child.waitForExit(timeout: 20)
    }
}
