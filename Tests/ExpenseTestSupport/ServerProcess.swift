import Foundation

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

    /// Makes a user `alice` in `dataDirectory` (unless given the `token` of
    /// a user made before), then starts the server with
    /// `--listen 127.0.0.1:0` and `arguments`, and waits for its
    /// "listening on" line. Its output goes to files in `outputDirectory`
    /// (default: the data directory's parent).
    public init(dataDirectory: String, arguments: [String] = [], executable: String = BuiltProducts.path("expense-server"),
                outputDirectory: String? = nil, environment: [String: String] = [:], token: String? = nil) throws {
        self.executable = executable
        self.dataDirectory = dataDirectory
        self.token = try token ?? Self.addUser("alice", dataDirectory: dataDirectory, executable: executable)
        let child = try ChildProcess(executable, ["serve", "--listen", "127.0.0.1:0", "--data-dir", dataDirectory] + arguments,
                                     environment: environment, outputDirectory: outputDirectory ?? URL(fileURLWithPath: dataDirectory).deletingLastPathComponent().path,
                                     name: "expense-server")
        self.child = child
        var found: UInt16?
        try waitUntil(timeout: 20, "expense-server to listen") {
            if !child.isRunning { throw TestFailure("expense-server exited: \(child.standardError)") }
            found = Self.listeningPort(in: child.standardError)
            return found != nil
        }
        port = found!
    }

    deinit { child.stop() }

    /// Runs `expense-server user add NAME` and returns the token it printed.
    public static func addUser(_ name: String, dataDirectory: String, executable: String = BuiltProducts.path("expense-server")) throws -> String {
        let result = try runCommand(executable, ["user", "add", name, "--data-dir", dataDirectory])
        guard result.status == 0 else { throw TestFailure("user add \(name) failed (\(result.status)): \(result.stderr)") }
        return result.stdout.trimmingCharacters(in: .newlines)
    }

    /// The port of the `expense-server: listening on 127.0.0.1:PORT` line.
    public static func listeningPort(in output: String) -> UInt16? {
        for line in output.split(separator: "\n") where line.hasPrefix("expense-server: listening on 127.0.0.1:") {
            return UInt16(line.split(separator: ":").last ?? "")
        }
        return nil
    }

    /// A new keep-alive connection to the server.
    public func connect(timeout: Double = 20) throws -> HTTPConnection {
        try HTTPConnection(port: port, timeout: timeout)
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
