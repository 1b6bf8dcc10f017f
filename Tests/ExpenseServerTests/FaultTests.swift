import ExpenseCore
import ExpenseTestSupport
import Foundation
import Testing

/// `--fault-*`: chaos that is off by default, seeded and reproducible.
@Suite struct FaultTests {
    @Test(arguments: StorageEngine.allCases)
    func dropResponse_commitsThenCloses_andTheRetryReplaysTheSameExpense(_ engine: StorageEngine) throws {
        let directory = TemporaryDirectory(prefix: "expense-server-fault")
        let storage = try StorageFixture(engine, dataDirectory: directory.at("data"))
        let key = TestServer.key()
        let body = Array(TestServer.lunch.utf8)
        let headers = { (token: String) in
            [("Authorization", "Bearer \(token)"), ("Content-Type", "application/json"), ("Idempotency-Key", "\"\(key)\"")]
        }
        let token: String
        do {
            let faulty = try ServerProcess(dataDirectory: storage.dataDirectory, database: storage.database,
                                           arguments: ["--fault-drop-response", "1.0"], outputDirectory: directory.path)
            token = faulty.token
            let connection = try faulty.connect()
            #expect(throws: HTTPConnectionError.self) {
                _ = try connection.request("POST", "/v1/expenses", headers: headers(token), body: body)
            }
            // The server committed before it closed the connection.
            #expect(faulty.accessLog.contains { $0.hasPrefix("POST /v1/expenses 201 ") && $0.hasSuffix("fault=drop-response") })
            #expect(faulty.stop() == 0)
        }
        #expect(try storage.scalar("SELECT count(*) FROM expenses") == 1)

        // The same data, no faults: the retry with the same key is a replay.
        let healthy = try ServerProcess(dataDirectory: storage.dataDirectory, database: storage.database,
                                        outputDirectory: directory.path, token: token)
        let retry = try healthy.connect().request("POST", "/v1/expenses", headers: headers(token), body: body)
        #expect(retry.status == 200)
        #expect(retry.header("Idempotent-Replayed") == "true")
        #expect(retry.json?["transaction_id"] as? String == TransactionID.derive(from: key))
        #expect(retry.json?["version"] as? Int == 1)
        #expect(try storage.scalar("SELECT count(*) FROM expenses") == 1)
    }

    @Test(arguments: StorageEngine.allCases)
    func dropResponseOnAFlakyServer_retriesConvergeOnOneExpense(_ engine: StorageEngine) throws {
        // Half the responses are lost; a client retrying the same key until
        // it hears back still makes exactly one expense.
        let server = try TestServer(engine, ["--fault-drop-response", "0.5", "--fault-seed", "42"])
        let key = TestServer.key()
        var answer: HTTPMessage?
        var attempts = 0
        while answer == nil && attempts < 50 {
            attempts += 1
            answer = try? server.create(key: key)
        }
        let response = try #require(answer)
        #expect([200, 201].contains(response.status))
        #expect(try server.scalar("SELECT count(*) FROM expenses") == 1)
    }

    @Test(arguments: StorageEngine.allCases)
    func dropRequest_closesBeforeProcessing(_ engine: StorageEngine) throws {
        let server = try TestServer(engine, ["--fault-drop-request", "1.0"])
        #expect(throws: HTTPConnectionError.self) { _ = try server.create(key: TestServer.key()) }
        #expect(try server.scalar("SELECT count(*) FROM expenses") == 0)
        #expect(server.process.accessLog.contains { $0.hasPrefix("POST /v1/expenses 000 ") && $0.hasSuffix("fault=drop-request") })
        // /healthz is never faulted, so readiness checks keep working.
        #expect(server.isHealthy)
    }

    @Test(arguments: StorageEngine.allCases)
    func errorRate_answers503WithRetryAfter_andChangesNothing(_ engine: StorageEngine) throws {
        let server = try TestServer(engine, ["--fault-error-rate", "1.0"])
        let response = try server.create(key: TestServer.key())
        #expect(response.status == 503)
        #expect(response.header("Retry-After") == "1")
        #expect(response.errorCode == "service_unavailable")
        #expect(response.isJSONError)
        #expect(try server.scalar("SELECT count(*) FROM expenses") == 0)
    }

    @Test(arguments: StorageEngine.allCases)
    func delay_holdsEachRequest(_ engine: StorageEngine) throws {
        let server = try TestServer(engine, ["--fault-delay-ms", "300"])
        let started = Date()
        #expect(try server.get("/v1/expenses").status == 200)
        #expect(Date().timeIntervalSince(started) >= 0.3)
    }

    @Test(arguments: StorageEngine.allCases)
    func theSameSeed_injectsTheSameFaults(_ engine: StorageEngine) throws {
        func pattern(seed: String) throws -> [Int] {
            let server = try TestServer(engine, ["--fault-error-rate", "0.5", "--fault-seed", seed])
            let connection = try server.connect()
            return try (0..<24).map { _ in try server.request(on: connection, "GET", "/v1/expenses").status }
        }
        let first = try pattern(seed: "7")
        #expect(Set(first) == [200, 503])
        #expect(try pattern(seed: "7") == first)
        #expect(try pattern(seed: "8") != first)
    }
}

