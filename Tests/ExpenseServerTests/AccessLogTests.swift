import ExpenseTestSupport
import Foundation
import Testing

/// One access log line per request, in the documented format, and never a
/// token or a body in it (docs/server.md, "Access log").
@Suite struct AccessLogTests {
    static var pattern: Regex<(Substring, method: Substring, path: Substring, status: Substring, ms: Substring, id: Substring, replayed: Substring, Substring?)> { #/^(?<method>\S+) (?<path>\S+) (?<status>\d{3}) (?<ms>\d+\.\d)ms (?<id>cp-[0-9a-f]{22}|-) replayed=(?<replayed>true|false)( \S+=\S+)?$/# }

    @Test(arguments: StorageEngine.allCases)
    func eachRequest_logsOneLineInTheDocumentedFormat(_ engine: StorageEngine) throws {
        let server = try TestServer(engine)
        let key = "1b4e28ba-2fa1-11d2-883f-0000f87d3b6e"
        // A line is written when its exchange ends, after the answer went
        // out, by that connection's thread: the next request, on another
        // connection, may be logged first. Each line is awaited before the
        // next request, so the order below is the order sent.
        var sent = 0
        func send(_ request: () throws -> HTTPMessage) throws {
            _ = try request()
            sent += 1
            try waitUntil(timeout: 10, "access line \(sent)") { server.process.accessLog.count >= sent }
        }
        try send { try server.create(key: key) }
        try send { try server.create(key: key) }
        try send { try server.get("/v1/expenses?limit=5") }
        try send { try server.get("/healthz", auth: .none) }
        try send { try server.get("/nowhere", auth: .none) }
        let lines = server.process.accessLog
        #expect(lines.count == 5)
        for line in lines {
            #expect(line.wholeMatch(of: Self.pattern) != nil, "\(line)")
        }
        #expect(lines[0].hasPrefix("POST /v1/expenses 201 "))
        #expect(lines[0].hasSuffix("ms cp-0206e11a39722b8b0b0d34 replayed=false"))
        #expect(lines[1].hasPrefix("POST /v1/expenses 200 "))
        #expect(lines[1].hasSuffix("ms cp-0206e11a39722b8b0b0d34 replayed=true"))
        #expect(lines[2].hasPrefix("GET /v1/expenses 200 "))
        #expect(lines[2].hasSuffix("ms - replayed=false"))
        #expect(lines[3].hasPrefix("GET /healthz 200 "))
        // Not the API's: the web interface sends a browser to sign in.
        #expect(lines[4].hasPrefix("GET /nowhere 303 "))
    }

    @Test(arguments: StorageEngine.allCases)
    func theLog_neverHoldsTheTokenOrTheBody(_ engine: StorageEngine) throws {
        let server = try TestServer(engine)
        let id = try #require(try server.create(key: TestServer.key(), #"{"merchant": "Secret Merchant 4711", "comment": "private note"}"#).transactionID)
        _ = try server.putReceipt(id, key: TestServer.key(), bytes: Array("%PDF-secret-receipt-bytes".utf8), contentType: "application/pdf")
        _ = try server.get("/v1/expenses", auth: .token("esk_wrong-token-value"))
        _ = try server.patch(id, key: TestServer.key(), #"{"base_version": 9, "set": {"merchant": "Other Secret"}}"#)
        server.process.stop()
        let log = server.process.child.standardError
        #expect(!log.isEmpty)
        for secret in [server.token, "esk_wrong-token-value", "Secret Merchant", "private note", "secret-receipt", "Other Secret"] {
            #expect(!log.contains(secret), "\(secret) in the log")
        }
    }

    @Test(arguments: StorageEngine.allCases)
    func hostileMethodsAndPaths_cannotForgeLogLines(_ engine: StorageEngine) throws {
        let server = try TestServer(engine)
        let connection = try server.connect()
        try connection.send("GET /v1/expenses\u{7f}%0aPOST HTTP/1.1\r\nHost: x\r\n\r\n")
        _ = try connection.readResponse()
        try waitUntil(timeout: 10, "the access line") { !server.process.accessLog.isEmpty }
        let line = try #require(server.process.accessLog.first)
        #expect(line.wholeMatch(of: Self.pattern) != nil, "\(line)")
        #expect(line.hasPrefix("GET /v1/expenses%7F%250aPOST 401 "))
    }
}
