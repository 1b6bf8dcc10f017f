import Foundation

/// HAProxy from Debian in front of server processes on 127.0.0.1, run with
/// the project's example configuration (`contrib/haproxy/expense-server.cfg`)
/// and the test's ports: the configuration people copy is the one tested.
/// Started in the foreground by the test, stopped by pid.
public final class LoadBalancer: @unchecked Sendable {
    public static let executable = ProcessInfo.processInfo.environment["EXPENSE_TEST_HAPROXY"] ?? "/usr/sbin/haproxy"
    public static let example = "\(BuiltProducts.packageRoot)/contrib/haproxy/expense-server.cfg"

    public let port: UInt16
    public let configuration: String
    private let service: LaunchedService

    /// Writes the example configuration with `port` for the frontend and
    /// `backends` for its servers, checks it with `haproxy -c`, starts
    /// HAProxy and waits until `/healthz` answers through it.
    /// - Parameter port: the frontend's port; a free one when `nil`.
    public init(backends: [UInt16], directory: String, port requestedPort: UInt16? = nil, checkIntervalMilliseconds: Int? = nil) throws {
        port = try requestedPort ?? ServerProcess.unusedPort()
        var text = try String(contentsOfFile: Self.example, encoding: .utf8)
        text = text.replacingOccurrences(of: "bind 127.0.0.1:8080", with: "bind 127.0.0.1:\(port)")
        let lines = text.split(separator: "\n", omittingEmptySubsequences: false).filter { !$0.contains("    server s") }
        let servers = backends.enumerated().map { "    server s\($0.offset + 1) 127.0.0.1:\($0.element)" }
        text = (lines.map(String.init) + servers).joined(separator: "\n") + "\n"
        if let interval = checkIntervalMilliseconds {
            text = text.replacingOccurrences(of: "check inter 2s", with: "check inter \(interval)ms")
        }
        configuration = "\(directory)/haproxy-\(port).cfg"
        try text.write(toFile: configuration, atomically: true, encoding: .utf8)
        let check = try runCommand(Self.executable, ["-c", "-f", configuration])
        guard check.status == 0 else { throw TestFailure("haproxy -c refused \(configuration): \(check.stdout)\(check.stderr)") }
        service = try LaunchedService(Self.executable, ["-db", "-f", configuration], outputDirectory: directory, name: "haproxy")
        let port = port
        try waitUntil(timeout: 30, "HAProxy to answer /healthz") {
            guard service.isRunning else { throw TestFailure("haproxy exited: \(service.child.standardError)") }
            return (try? HTTPConnection(port: port, timeout: 2).request("GET", "/healthz").status) == 200
        }
    }

    public var pid: Int32 { service.pid }
    public var isRunning: Bool { service.isRunning }

    /// A new connection to the frontend.
    public func connect(timeout: Double = 30) throws -> HTTPConnection {
        try HTTPConnection(port: port, timeout: timeout)
    }

    /// HAProxy's own log (one line per request, `option httplog`).
    public var log: String { service.child.standardOutput }

    /// `SIGUSR1`: a soft stop; then waits for the exit.
    public func stop() {
        if service.stop(signal: SIGUSR1, timeout: 20) == nil { service.stop(signal: SIGKILL) }
    }
}
