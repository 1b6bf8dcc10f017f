import ExpenseTestSupport
import Foundation
import Synchronization
import Testing

/// Concurrent first requests with one key: the UNIQUE constraint lets one
/// win, and every other answer is a replay of it or a 409.
@Suite struct RaceTests {
    /// Sends `count` creates with `key` at once, each on its own connection
    /// to one of `ports`, released together once all are connected.
    private func race(count: Int, ports: [UInt16], token: String, key: String, body: [UInt8]) throws -> [HTTPMessage] {
        let connections = try (0..<count).map { try HTTPConnection(port: ports[$0 % ports.count]) }
        let request = HTTPConnection.encode("POST", "/v1/expenses", headers: [
            ("Authorization", "Bearer \(token)"), ("Content-Type", "application/json"), ("Idempotency-Key", "\"\(key)\""),
        ], body: body)
        let results = Mutex<[Result<HTTPMessage, Error>]>([])
        let gate = DispatchGroup()
        gate.enter()
        let done = DispatchGroup()
        for connection in connections {
            done.enter()
            let box = UncheckedBox(connection)
            Thread {
                gate.wait()
                let result = Result { try box.value.send(request); return try box.value.readResponse(method: "POST") }
                results.withLock { $0.append(result) }
                done.leave()
            }.start()
        }
        gate.leave()
        #expect(done.wait(timeout: .now() + 60) == .success)
        return try results.withLock { $0 }.map { try $0.get() }
    }

    private func check(_ responses: [HTTPMessage], count: Int) throws {
        #expect(responses.count == count)
        let created = responses.filter { $0.status == 201 }
        #expect(created.count == 1)
        for response in responses {
            #expect([200, 201, 409].contains(response.status), "unexpected \(response.status): \(response.text)")
            if response.status == 200 { #expect(response.isReplay) }
            if response.status == 409 { #expect(response.errorCode == "request_in_progress") }
        }
        // Every answer that carries an expense carries the same one, byte for byte.
        let bodies = Set(responses.filter { $0.status / 100 == 2 }.map(\.body))
        #expect(bodies.count == 1)
        #expect(bodies.first.map { String(decoding: $0, as: UTF8.self).contains("\"version\":1") } == true)
    }

    @Test(arguments: StorageEngine.allCases)
    func fiftyConcurrentCreatesWithOneKey_makeExactlyOneExpense(_ engine: StorageEngine) throws {
        let server = try TestServer(engine)
        let key = TestServer.key()
        let responses = try race(count: 50, ports: [server.port], token: server.token, key: key, body: Array(TestServer.lunch.utf8))
        try check(responses, count: 50)
        #expect(try server.scalar("SELECT count(*) FROM expenses") == 1)
        // Afterwards, with nothing in flight, every retry is a replay.
        let after = try server.create(key: key)
        #expect(after.status == 200)
        #expect(after.isReplay)
    }

    @Test(arguments: StorageEngine.allCases)
    func concurrentCreatesOnTwoServerProcesses_makeExactlyOneExpense(_ engine: StorageEngine) throws {
        let first = try TestServer(engine)
        // A second process on the same data directory and database.
        let second = try first.anotherProcess()
        let key = TestServer.key()
        let responses = try race(count: 40, ports: [first.port, second.port], token: first.token, key: key,
                                 body: Array(TestServer.lunch.utf8))
        try check(responses, count: 40)
        #expect(try first.scalar("SELECT count(*) FROM expenses") == 1)
        #expect(try first.scalar("SELECT count(*) FROM idempotency_keys") == 1)
    }

    @Test(arguments: StorageEngine.allCases)
    func manyDistinctCreatesAtOnce_allCommitOnce(_ engine: StorageEngine) throws {
        let server = try TestServer(engine)
        let keys = (0..<64).map { _ in TestServer.key() }
        let statuses = Mutex<[Int]>([])
        let done = DispatchGroup()
        for chunk in stride(from: 0, to: keys.count, by: 8) {
            done.enter()
            let slice = Array(keys[chunk..<chunk + 8])
            Thread {
                for key in slice {
                    let status = (try? server.create(key: key).status) ?? -1
                    statuses.withLock { $0.append(status) }
                }
                done.leave()
            }.start()
        }
        #expect(done.wait(timeout: .now() + 60) == .success)
        #expect(statuses.withLock { $0 }.filter { $0 == 201 }.count == keys.count)
        #expect(try server.scalar("SELECT count(*) FROM expenses") == Int64(keys.count))
        #expect(try server.scalar("SELECT count(DISTINCT change_seq) FROM expenses") == Int64(keys.count))
    }
}

/// Hands a non-Sendable value to exactly one other thread.
final class UncheckedBox<T>: @unchecked Sendable {
    let value: T
    init(_ value: T) { self.value = value }
}
