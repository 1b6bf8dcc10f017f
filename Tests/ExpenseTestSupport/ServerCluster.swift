import Foundation

/// Several `expense-server` processes on one PostgreSQL database, each on a
/// port of its own, behind HAProxy: the deployment of docs/server.md, on
/// loopback. A process can be killed and started again on its port.
public final class ServerCluster: @unchecked Sendable {
    public let directory = TemporaryDirectory(prefix: "expense-cluster")
    public let storage: StorageFixture
    public let ports: [UInt16]
    public let token: String
    /// HAProxy's port, known before it starts.
    public let balancerPort: UInt16
    public private(set) var processes: [ServerProcess?]
    public private(set) var balancer: LoadBalancer!
    private let arguments: [String]
    private let executable: String
    private let checkIntervalMilliseconds: Int

    /// Starts `count` processes with `arguments`, then HAProxy (unless
    /// `startBalancer` is false: then ``startBalancer()`` does, later).
    /// - Parameter database: the URL of a database to use (the tests'
    ///   shared cluster gets a new one when `nil`).
    public init(processes count: Int = 3, database: String? = nil, arguments: [String] = [],
                executable: String = BuiltProducts.path("expense-server"),
                startBalancer: Bool = true, checkIntervalMilliseconds: Int = 500) throws {
        if let database {
            storage = StorageFixture(postgres: database, dataDirectory: directory.at("staging"))
        } else {
            storage = try StorageFixture(.postgres, dataDirectory: directory.at("staging"))
        }
        self.arguments = arguments
        self.executable = executable
        self.checkIntervalMilliseconds = checkIntervalMilliseconds
        ports = try (0..<count).map { _ in try ServerProcess.unusedPort() }
        balancerPort = try ServerProcess.unusedPort()
        token = try ServerProcess.addUser("alice", dataDirectory: directory.at("staging-0"), database: storage.database, executable: executable)
        processes = Array(repeating: nil, count: count)
        for index in 0..<count { try start(index) }
        if startBalancer { try self.startBalancer() }
    }

    /// Starts HAProxy on ``balancerPort``.
    public func startBalancer() throws {
        balancer = try LoadBalancer(backends: ports, directory: directory.path, port: balancerPort,
                                    checkIntervalMilliseconds: checkIntervalMilliseconds)
    }

    deinit {
        balancer?.stop()
        for process in processes { process?.stop() }
    }

    /// Starts process `index` on its port (again).
    public func start(_ index: Int) throws {
        processes[index] = try ServerProcess(dataDirectory: directory.at("staging-\(index)"), database: storage.database,
                                             arguments: arguments, executable: executable, outputDirectory: directory.path,
                                             token: token, port: ports[index])
    }

    /// `kill -9` of process `index`.
    public func crash(_ index: Int) {
        processes[index]?.child.crash()
        processes[index] = nil
    }

    /// The running process at `index`.
    public func process(_ index: Int) throws -> ServerProcess {
        guard let process = processes[index] else { throw TestFailure("server process \(index) is not running") }
        return process
    }

    /// Access log lines of every process started so far, by process.
    public func accessLogs() -> [[String]] {
        processes.map { $0?.accessLog ?? [] }
    }

    /// An authenticated request through HAProxy, on `connection` or a new one.
    public func request(_ method: String, _ path: String, headers: [(String, String)] = [], body: [UInt8]? = nil,
                        on connection: HTTPConnection? = nil) throws -> HTTPMessage {
        let connection = try connection ?? balancer.connect()
        return try connection.request(method, path, headers: [("Authorization", "Bearer \(token)")] + headers, body: body)
    }
}
