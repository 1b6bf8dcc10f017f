import Digest
import ExpenseTestSupport
import Foundation
import Postgres
import Synchronization
import Testing

/// The PostgreSQL connections of one server process: `--database-pool`
/// bounds them, and claims on a database that does not answer fail fast.
@Suite struct DatabasePoolTests {
    /// `count` requests sent at once, each on a connection of its own;
    /// their answers (or errors) come in as they end.
    final class Burst: @unchecked Sendable {
        let answers = Mutex<[(status: Int, retryAfter: String?)]>([])
        let done = DispatchGroup()

        init(_ count: Int, _ send: @escaping @Sendable (Int) throws -> HTTPMessage) {
            for index in 0..<count {
                done.enter()
                Thread { [self] in
                    let answer = try? send(index)
                    answers.withLock { $0.append((answer?.status ?? -1, answer?.header("Retry-After"))) }
                    done.leave()
                }.start()
            }
        }

        var statuses: [Int] { answers.withLock { $0.map(\.status) } }
    }

    /// The connections of the server processes whose application_name is `name`.
    static func connections(_ monitor: Postgres.Connection, _ name: String, waitingOnALock: Bool = false) throws -> Int {
        Int(try monitor.scalarInt("SELECT count(*) FROM pg_stat_activity WHERE application_name = $1"
                                  + (waitingOnALock ? " AND wait_event_type = 'Lock'" : ""), [.text(name)]) ?? -1)
    }

    @Test func databasePool_isTaken_andBoundsTheProcesssConnectionsUnderLoad() throws {
        let directory = TemporaryDirectory()
        let name = "pool-test-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        let database = try PostgresCluster.shared.makeDatabase()
        let url = database + "&application_name=\(name)"
        let server = try ServerProcess(dataDirectory: directory.at("data"), database: url, arguments: ["--database-pool", "2"],
                                       outputDirectory: directory.path)
        #expect(server.child.standardError.contains("up to 2 connections"))
        let token = server.token
        // Every list request holds its pooled connection while the table is locked.
        let locker = try Postgres.Connection(database), monitor = try Postgres.Connection(database)
        try locker.execute("BEGIN")
        try locker.execute("LOCK TABLE expenses IN ACCESS EXCLUSIVE MODE")
        let burst = Burst(12) { _ in
            try server.connect(timeout: 60).request("GET", "/v1/expenses", headers: [("Authorization", "Bearer \(token)")])
        }
        let most = Atomic<Int>(0)
        let sampling = Atomic<Bool>(true)
        let sampler = DispatchGroup()
        sampler.enter()
        Thread {
            let own = try? Postgres.Connection(database)
            while sampling.load(ordering: .relaxed) {
                if let own, let count = try? Self.connections(own, name) { most.max(count, ordering: .relaxed) }
            }
            sampler.leave()
        }.start()
        try waitUntil(timeout: 60, "two requests waiting on the lock") { try Self.connections(monitor, name, waitingOnALock: true) == 2 }
        // The other requests wait for a connection of the pool, and after
        // its wait are answered 503: no third connection is made for them.
        try waitUntil(timeout: 60, "a request answered 503 while the pool was lent out") { burst.statuses.contains(503) }
        #expect(try Self.connections(monitor, name, waitingOnALock: true) == 2)
        try locker.execute("COMMIT")
        #expect(burst.done.wait(timeout: .now() + 60) == .success)
        sampling.store(false, ordering: .relaxed)
        sampler.wait()
        let answers = burst.answers.withLock { $0 }
        #expect(answers.allSatisfy { $0.status == 200 || ($0.status == 503 && $0.retryAfter != nil) }, "\(answers)")
        #expect(answers.contains { $0.status == 200 })
        // The pool's two, and at most the claim connections (ClaimLocks: 4), which lists do not take.
        #expect(most.load(ordering: .relaxed) >= 2 && most.load(ordering: .relaxed) <= 2 + 4, "\(most.load(ordering: .relaxed))")
        #expect(try Self.connections(monitor, name) <= 2)
    }

    /// The shard of ``ClaimLocks`` a key's lock goes to (of 4): the first
    /// 8 bytes of SHA-256("USER KEY"), big-endian, modulo 4.
    static func claimShard(user: Int64, key: String) -> UInt64 {
        SHA256.hash(Array("\(user) \(key)".utf8)).prefix(8).reduce(UInt64(0)) { $0 << 8 | UInt64($1) } % 4
    }

    @Test func claimsOnADatabaseHostThatNeverAnswers_get503WithRetryAfter_notAQueueOfConnectTimeouts() throws {
        let directory = TemporaryDirectory()
        let database = try PostgresCluster.shared.makeDatabase()
        let proxy = try StallingProxy(forwardingTo: "\(PostgresCluster.shared.socketDirectory)/.s.PGSQL.5432")
        defer { proxy.stop() }
        let databaseName = try #require(database.split(separator: "?").first?.split(separator: "/").last)
        let timeout = 3600
        let url = "postgresql:///\(databaseName)?host=127.0.0.1&port=\(proxy.port)&user=postgres&connect_timeout=\(timeout)"
        let server = try ServerProcess(dataDirectory: directory.at("data"), database: url, outputDirectory: directory.path)
        let token = server.token
        let alice = try #require(try Postgres.Connection(database).scalarInt("SELECT id FROM users WHERE name = 'alice'"))
        // Eight pooled connections open, so that every request below finds
        // one for its sign-in: eight lists held at once by a locked table.
        let locker = try Postgres.Connection(database), monitor = try Postgres.Connection(database)
        try locker.execute("BEGIN")
        try locker.execute("LOCK TABLE expenses IN ACCESS EXCLUSIVE MODE")
        let warm = Burst(8) { _ in
            try server.connect(timeout: 60).request("GET", "/v1/expenses", headers: [("Authorization", "Bearer \(token)")])
        }
        try waitUntil(timeout: 60, "eight lists waiting on the lock") {
            try monitor.scalarInt("SELECT count(*) FROM pg_stat_activity WHERE datname = $1 AND wait_event_type = 'Lock'",
                                  [.text(String(databaseName))]) == 8
        }
        try locker.execute("COMMIT")
        #expect(warm.done.wait(timeout: .now() + 60) == .success)
        #expect(warm.statuses == Array(repeating: 200, count: 8))

        // From now on, no new connection to the database is answered; the
        // pool's open ones still are (sign-in works), the claims have none yet.
        proxy.goSilent()
        var keys: [String] = []
        while keys.count < 8 {
            let key = UUID().uuidString.lowercased()
            if Self.claimShard(user: alice, key: key) == 0 { keys.append(key) }
        }
        let body = Array(TestServer.lunch.utf8)
        let chosen = keys
        let burst = Burst(chosen.count) { index in
            try server.connect(timeout: 120).request("POST", "/v1/expenses", headers: [
                ("Authorization", "Bearer \(token)"), ("Content-Type", "application/json"), ("Idempotency-Key", "\"\(chosen[index])\""),
            ], body: body)
        }
        // Queued behind one another under the shard's mutex, one claim at a
        // time would be connecting and the others waiting for its connect
        // timeout (an hour here); each connects at once, so all eight wait
        // on the silent host together.
        try waitUntil(timeout: 60, "every claim to be connecting at once") { proxy.silentConnectionCount >= keys.count }
        #expect(burst.statuses.isEmpty, "nothing is answered while the host is silent")
        proxy.hangUpSilentConnections()
        #expect(burst.done.wait(timeout: .now() + 120) == .success)
        let answers = burst.answers.withLock { $0 }
        #expect(answers.count == keys.count && answers.allSatisfy { $0.status == 503 && $0.retryAfter != nil }, "\(answers)")
        #expect(try Postgres.Connection(database).scalarInt("SELECT count(*) FROM expenses") == 0)
        #expect(server.child.isRunning)
    }
}
