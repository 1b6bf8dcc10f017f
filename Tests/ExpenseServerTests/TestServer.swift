import Digest
import ExpenseTestSupport
import Foundation

/// A live `expense-server` of one test's own: its own data directory (and
/// PostgreSQL database), port and user, stopped by pid when the test ends.
final class TestServer: @unchecked Sendable {
    let directory = TemporaryDirectory(prefix: "expense-server-test")
    let storage: StorageFixture
    let process: ServerProcess

    init(_ engine: StorageEngine, _ arguments: [String] = []) throws {
        storage = try StorageFixture(engine, dataDirectory: directory.at("data"))
        process = try ServerProcess(dataDirectory: storage.dataDirectory, database: storage.database, arguments: arguments,
                                    outputDirectory: directory.path)
    }

    var token: String { process.token }
    var port: UInt16 { process.port }
    var dataDirectory: String { process.dataDirectory }
    var engine: StorageEngine { storage.engine }

    /// Adds a user to this server's data and returns its token.
    func addUser(_ name: String) throws -> String {
        try ServerProcess.addUser(name, dataDirectory: dataDirectory, database: storage.database)
    }

    /// Another server process on the same data (same directory, same database).
    func anotherProcess(_ arguments: [String] = []) throws -> ServerProcess {
        try ServerProcess(dataDirectory: dataDirectory, database: storage.database, arguments: arguments,
                          outputDirectory: directory.path, token: token)
    }

    /// Who a request claims to be.
    enum Auth {
        case alice
        case token(String)
        case none
    }

    func connect(timeout: Double = 20) throws -> HTTPConnection { try process.connect(timeout: timeout) }

    /// One request on a new connection.
    func request(_ method: String, _ path: String, headers: [(String, String)] = [], body: [UInt8]? = nil,
                 auth: Auth = .alice) throws -> HTTPMessage {
        try request(on: connect(), method, path, headers: headers, body: body, auth: auth)
    }

    func request(on connection: HTTPConnection, _ method: String, _ path: String, headers: [(String, String)] = [],
                 body: [UInt8]? = nil, auth: Auth = .alice) throws -> HTTPMessage {
        var all = headers
        switch auth {
        case .alice: all.insert(("Authorization", "Bearer \(token)"), at: 0)
        case .token(let other): all.insert(("Authorization", "Bearer \(other)"), at: 0)
        case .none: break
        }
        return try connection.request(method, path, headers: all, body: body)
    }

    func create(key: String, _ body: String = TestServer.lunch, auth: Auth = .alice, quoted: Bool = true) throws -> HTTPMessage {
        try request("POST", "/v1/expenses", headers: [
            ("Content-Type", "application/json"), ("Idempotency-Key", quoted ? "\"\(key)\"" : key),
        ], body: Array(body.utf8), auth: auth)
    }

    func patch(_ id: String, key: String, _ body: String, auth: Auth = .alice) throws -> HTTPMessage {
        try request("PATCH", "/v1/expenses/\(id)", headers: [
            ("Content-Type", "application/json"), ("Idempotency-Key", "\"\(key)\""),
        ], body: Array(body.utf8), auth: auth)
    }

    func delete(_ id: String, key: String, auth: Auth = .alice) throws -> HTTPMessage {
        try request("DELETE", "/v1/expenses/\(id)", headers: [("Idempotency-Key", "\"\(key)\"")], auth: auth)
    }

    func putReceipt(_ id: String, key: String, bytes: [UInt8], contentType: String = "image/png",
                    digest: String? = nil, auth: Auth = .alice) throws -> HTTPMessage {
        try request("PUT", "/v1/expenses/\(id)/receipt", headers: [
            ("Content-Type", contentType), ("Idempotency-Key", "\"\(key)\""),
            ("Repr-Digest", digest ?? TestServer.digest(of: bytes)),
        ], body: bytes, auth: auth)
    }

    func get(_ path: String, auth: Auth = .alice) throws -> HTTPMessage {
        try request("GET", path, auth: auth)
    }

    /// Runs a query against the server's database, beside the live server.
    func scalar(_ sql: String) throws -> Int64? {
        try storage.scalar(sql)
    }

    /// How many receipts are stored (files, or rows of the database).
    func storedReceiptCount() throws -> Int {
        try storage.storedReceiptDigests().count
    }

    /// Uploads left in the staging folder.
    var stagedUploads: [String] { storage.stagedUploads }

    /// The server still answers `/healthz`.
    var isHealthy: Bool {
        (try? request("GET", "/healthz", auth: .none).status) == 200 && process.child.isRunning
    }

    static func key() -> String { UUID().uuidString.lowercased() }

    static func digest(of bytes: [UInt8]) -> String { "sha-256=:\(Base64.encode(SHA256.hash(bytes))):" }

    static let lunch = """
        {"merchant": "Blue Bottle", "amount": "12.50", "currency": "EUR", "date": "2026-11-29", \
        "category": "Meals", "comment": "team lunch", "device_id": "dev-1", "device_seq": 17, \
        "created_at_device": "2026-11-29T12:01:00Z"}
        """

    /// A small PNG-looking file: the signature, then `count` bytes.
    static func png(_ count: Int = 1000, seed: UInt8 = 1) -> [UInt8] {
        [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A] + (0..<count).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ Int(seed)) }
    }
}

extension HTTPMessage {
    /// The expense in a 2xx body.
    var expense: [String: Any] { json ?? [:] }
    var transactionID: String? { json?["transaction_id"] as? String }
    var isReplay: Bool { header("Idempotent-Replayed") == "true" }
    var isJSONError: Bool {
        header("Content-Type") == "application/json; charset=utf-8" && errorCode != nil
            && ((json?["error"] as? [String: Any])?["message"] as? String).map { !$0.isEmpty } == true
    }
}
