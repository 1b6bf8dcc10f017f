import Digest
import ExpenseCore
import Foundation
import SQLite

/// A daemon and an `expense-server` on loopback, wired together with a
/// token file: the setting of every sync test. The server can be stopped
/// and started again on the same port and data directory.
public final class SyncHarness: @unchecked Sendable {
    public let daemon: DaemonHarness
    public let serverData: String
    public let port: UInt16
    public let tokenFile: String
    public private(set) var server: ServerProcess?
    public private(set) var token: String
    /// A command that runs the server (`ip netns exec NS`), by `exec`.
    public var serverLauncher: [String] = []

    /// - Parameters:
    ///   - daemonArguments: extra `expensed` flags (fast timers are added).
    ///   - startServer: whether the server runs from the start.
    public init(daemonArguments: [String] = [], environment: [String: String] = [:], serverArguments: [String] = [],
                startServer: Bool = true, spool: Bool = false) throws {
        let directory = TemporaryDirectory(prefix: "sync")
        serverData = directory.at("server")
        port = try ServerProcess.unusedPort()
        token = try ServerProcess.addUser("alice", dataDirectory: serverData)
        tokenFile = directory.at("token")
        _ = FileManager.default.createFile(atPath: tokenFile, contents: Data((token + "\n").utf8), attributes: [.posixPermissions: 0o600])
        daemon = DaemonHarness(arguments: [
            "--server", "http://127.0.0.1:\(port)", "--token-file", tokenFile,
            "--drain-interval", "200ms", "--backoff-base", "50ms", "--backoff-cap", "1s",
            "--connect-timeout", "2s", "--request-timeout", "10s",
        ] + daemonArguments, environment: environment, spool: spool, directory: directory)
        if startServer { try self.startServer(serverArguments) }
    }

    /// Another device of the same user: a second daemon sending to the same
    /// server with the same token, its timers as fast as the first's.
    /// - Parameter arguments: more flags; a flag given again wins.
    public func secondDevice(_ arguments: [String] = []) -> DaemonHarness {
        DaemonHarness(arguments: ["--server", "http://127.0.0.1:\(port)", "--token-file", tokenFile, "--drain-interval", "200ms",
                                  "--backoff-base", "50ms", "--backoff-cap", "1s", "--connect-timeout", "2s"] + arguments)
    }

    /// Starts (or restarts) the server on the harness's port and data directory.
    public func startServer(_ arguments: [String] = []) throws {
        server = try ServerProcess(dataDirectory: serverData, arguments: arguments, outputDirectory: daemon.directory.path,
                                   token: token, port: port, launcher: serverLauncher)
    }

    public func stopServer() {
        server?.stop()
        server = nil
    }

    /// Writes a different token into the token file.
    public func writeToken(_ text: String) {
        _ = FileManager.default.createFile(atPath: tokenFile, contents: Data((text + "\n").utf8))
    }

    /// Rows in the server's expense table (read straight from its database).
    public func serverExpenses() throws -> [(transactionID: String, deleted: Bool)] {
        let db = try Connection(path: "\(serverData)/expense-server.db")
        return try db.query("SELECT transaction_id, deleted FROM expenses ORDER BY id") { ($0.string(0), $0.bool(1)) }
    }

    /// An expense as the server stored it, with the SHA-256 (hex) of the
    /// receipt bytes in its file, hashed here (not the digest it recorded).
    public struct ServerRecord: Sendable {
        public let transactionID: String
        public let clientID: String
        public let merchant: String?
        public let deleted: Bool
        /// SHA-256 of the stored receipt file; nil without a receipt.
        public let receiptDigest: String?
        /// The digest the server recorded for it.
        public let recordedDigest: String?
    }

    /// Every expense row of the server's database, receipts hashed from
    /// the files under its `receipts/`.
    public func serverRecords() throws -> [ServerRecord] {
        let db = try Connection(path: "\(serverData)/expense-server.db", readOnly: true)
        let rows = try db.query("SELECT transaction_id, client_id, merchant, deleted, receipt_file, receipt_sha256 FROM expenses ORDER BY id") {
            ($0.string(0), $0.string(1), $0.optionalString(2), $0.bool(3), $0.optionalString(4), $0.optionalString(5))
        }
        return try rows.map { id, clientID, merchant, deleted, file, recorded in
            var digest: String?
            if let file {
                guard let bytes = FileManager.default.contents(atPath: "\(serverData)/receipts/\(file)") else {
                    throw TestFailure("the server's receipt file \(file) of \(id) is missing")
                }
                digest = Hex.encode(SHA256.hash([UInt8](bytes)))
            }
            return ServerRecord(transactionID: id, clientID: clientID, merchant: merchant, deleted: deleted,
                                receiptDigest: digest, recordedDigest: recorded)
        }
    }

    /// Rows in the daemon's cache and its outbox (read from its database).
    public func daemonRows() throws -> (cache: [String], jobs: Int) {
        let db = try Connection(path: "\(daemon.stateDirectory)/expensed.db")
        let cache = try db.query("SELECT transaction_id FROM expenses ORDER BY transaction_id") { $0.string(0) }
        let jobs = Int(try db.scalarInt("SELECT count(*) FROM jobs") ?? 0)
        return (cache, jobs)
    }

    /// An authenticated request to the server, from the test.
    public func serverRequest(_ method: String, _ path: String, body: JSONValue? = nil, key: String? = nil) throws -> HTTPMessage {
        guard let server else { throw TestFailure("the server is not running") }
        let connection = try server.connect()
        var headers = [("Authorization", "Bearer \(token)")]
        if let key { headers.append(("Idempotency-Key", "\"\(key)\"")) }
        if body != nil { headers.append(("Content-Type", "application/json")) }
        return try connection.request(method, path, headers: headers, body: body?.serializedBytes())
    }

    /// Waits until the outbox is empty (everything applied or dropped).
    public func waitUntilDrained(timeout: Double = 60) throws {
        try daemon.waitForQueue(timeout: timeout)
    }

    /// Access log lines of the server, split into fields: method, path, status, duration, transaction id.
    public func accessLog() -> [[String]] {
        (server?.accessLog ?? []).map { $0.split(separator: " ").map(String.init) }
    }

    /// The access log's lines that `matching` accepts, once there are at
    /// least `count` of them (or `timeout` has passed): the server writes a
    /// line when its answer has gone out, so the daemon can record the
    /// answer, and a test see the outbox empty, a moment before the line is
    /// there. A count below what a test expects then means a request that
    /// was never made, not one not yet logged.
    public func accessLog(awaiting count: Int, timeout: Double = 10, _ matching: ([String]) -> Bool) -> [[String]] {
        try? waitUntil(timeout: timeout, "\(count) such lines in the access log") { accessLog().filter(matching).count >= count }
        return accessLog().filter(matching)
    }
}
