import Digest
import ExpenseCore
import ExpenseTestSupport
import Foundation
import Postgres
import Synchronization
import Testing

/// Three server processes on one PostgreSQL database behind HAProxy (round
/// robin, the example configuration of contrib/): every rule of
/// contract.md holds across processes, decided by the database alone.
/// Serialized: its tests share one PostgreSQL cluster, three servers and HAProxy, and one of them restarts that PostgreSQL.
@Suite(.serialized) struct ClusterTests {
    static let keys = TestScale.count(quick: 80, large: 200, variable: "EXPENSE_TEST_CLUSTER_KEYS")
    static let json = ("Content-Type", "application/json")

    /// Sends `request` `count` times at once, each on its own new
    /// connection through HAProxy; a `409` is sent again until it gets
    /// another answer. Returns the final answers and how many were 409s.
    private func burst(_ cluster: ServerCluster, count: Int = 5, _ method: String, _ path: String,
                       headers: [(String, String)], body: [UInt8]?) throws -> (answers: [HTTPMessage], conflicts: Int) {
        let connections = try (0..<count).map { _ in UncheckedBox(try cluster.balancer.connect()) }
        let conflicts = Atomic<Int>(0)
        let answers = together(count) { index in
            var answer = try cluster.request(method, path, headers: headers, body: body, on: connections[index].value)
            while answer.status == 409 {
                #expect(answer.errorCode == "request_in_progress")
                conflicts.add(1, ordering: .relaxed)
                usleep(20_000)
                answer = try cluster.request(method, path, headers: headers, body: body)
            }
            return answer
        }
        return (try answers.map { try $0.get() }, conflicts.load(ordering: .relaxed))
    }

    /// Exactly one answer applied (`applied`), every other a replay with the
    /// same body.
    private func checkOnce(_ answers: [HTTPMessage], applied: Int, _ what: String) {
        #expect(answers.filter { $0.status == applied && !$0.isReplay }.count == 1, "\(what): \(answers.map(\.status))")
        #expect(answers.filter { $0.status == 200 && $0.isReplay }.count == answers.count - 1, "\(what): \(answers.map(\.status))")
        #expect(Set(answers.map(\.body)).count == 1, "\(what): the answers differ")
    }

    @Test func keysSentFiveTimesAtOnceToDifferentProcesses_makeEachExpenseReceiptAndEditOnce() throws {
        let cluster = try ServerCluster(processes: 3)
        var ids: [String] = []
        var conflicts = 0
        for n in 0..<Self.keys {
            let key = ClientID.make()
            let body = Array(#"{"merchant": "Shop \#(n)", "amount": "\#(n).50", "currency": "EUR", "date": "2026-11-29"}"#.utf8)
            let (answers, seen) = try burst(cluster, "POST", "/v1/expenses", headers: [Self.json, ("Idempotency-Key", "\"\(key)\"")], body: body)
            conflicts += seen
            checkOnce(answers, applied: 201, "create \(n)")
            ids.append(TransactionID.derive(from: key))
        }
        // Round robin sent each key's five requests to more than one process
        // (a process logs a request after its answer has gone out: waited for).
        func reached(_ id: String, _ logs: [[String]]) -> Int {
            logs.filter { log in log.contains { $0.hasPrefix("POST /v1/expenses ") && $0.contains(id) } }.count
        }
        try? waitUntil("each key's requests logged by two processes") { let logs = cluster.accessLogs(); return ids.allSatisfy { reached($0, logs) >= 2 } }
        let logs = cluster.accessLogs()
        for id in ids {
            let reached = reached(id, logs)
            #expect(reached >= 2, "\(id) reached \(reached) process(es)")
        }
        #expect(try cluster.storage.scalar("SELECT count(*) FROM expenses") == Int64(Self.keys))

        var digests: [String: String] = [:]
        for (n, id) in ids.enumerated() {
            let bytes = TestServer.png(2000 + n * 13, seed: UInt8(n % 251))
            digests[id] = Hex.encode(SHA256.hash(bytes))
            let (answers, seen) = try burst(cluster, "PUT", "/v1/expenses/\(id)/receipt", headers: [
                ("Content-Type", "image/png"), ("Idempotency-Key", "\"\(ClientID.make())\""), ("Repr-Digest", TestServer.digest(of: bytes)),
            ], body: bytes)
            conflicts += seen
            checkOnce(answers, applied: 200, "receipt \(n)")
            #expect(answers.allSatisfy { $0.expense["version"] as? Int == 2 })
        }
        #expect(try cluster.storage.receiptDigestsByTransaction() == digests)
        #expect(try cluster.storage.scalar("SELECT count(*) FROM receipts") == Int64(Self.keys))

        for (n, id) in ids.enumerated() {
            let (answers, seen) = try burst(cluster, "PATCH", "/v1/expenses/\(id)", headers: [Self.json, ("Idempotency-Key", "\"\(ClientID.make())\"")],
                                            body: Array(#"{"base_version": 2, "set": {"comment": "edit \#(n)"}}"#.utf8))
            conflicts += seen
            checkOnce(answers, applied: 200, "edit \(n)")
        }
        #expect(try cluster.storage.scalar("SELECT count(*) FROM expenses WHERE version = 3") == Int64(Self.keys))
        #expect(try cluster.storage.scalar("SELECT count(*) FROM idempotency_keys") == Int64(3 * Self.keys))
        // The feed, read through HAProxy page by page, has each expense once.
        var cursor = ""
        var listed: [String] = []
        while true {
            let page = try cluster.request("GET", "/v1/expenses?since=\(cursor)&limit=37")
            listed += (page.json?["expenses"] as? [[String: Any]] ?? []).compactMap { $0["transaction_id"] as? String }
            cursor = page.json?["next_cursor"] as? String ?? ""
            if page.json?["has_more"] as? Bool != true { break }
        }
        #expect(listed.sorted() == ids.sorted())
        print("ClusterTests: \(conflicts) answers of 409 (each sent again until it replayed)")
    }

    @Test func processKilledHoldingACreateInProgress_theRetryThroughAnotherProcessConverges() throws {
        let cluster = try ServerCluster(processes: 3)
        let key = ClientID.make()
        let body = Array(TestServer.lunch.utf8)
        // Process 0 has the headers (its "100 Continue" says so) and holds the key.
        let held = try cluster.process(0).connect()
        try held.send(HTTPConnection.encode("POST", "/v1/expenses", headers: [
            ("Authorization", "Bearer \(cluster.token)"), Self.json, ("Idempotency-Key", key),
            ("Content-Length", "\(body.count)"), ("Expect", "100-continue"),
        ]))
        #expect(try held.readResponse(method: "POST").status == 100)
        // Another process sees the claim.
        let headers = [("Authorization", "Bearer \(cluster.token)"), Self.json, ("Idempotency-Key", key)]
        let meanwhile = try cluster.process(1).connect().request("POST", "/v1/expenses", headers: headers, body: body)
        #expect(meanwhile.status == 409)
        #expect(meanwhile.errorCode == "request_in_progress")

        cluster.crash(0)
        // The client retries through HAProxy, as the daemon would, until it hears back.
        var answer: HTTPMessage?
        try waitUntil(timeout: 30, "the retry to be answered") {
            answer = try? cluster.request("POST", "/v1/expenses", headers: [Self.json, ("Idempotency-Key", key)], body: body)
            return answer.map { $0.status / 100 == 2 } ?? false
        }
        #expect(answer?.status == 201)
        #expect(answer?.transactionID == TransactionID.derive(from: key))
        let replay = try cluster.request("POST", "/v1/expenses", headers: [Self.json, ("Idempotency-Key", key)], body: body)
        #expect(replay.status == 200 && replay.isReplay)
        #expect(try cluster.storage.scalar("SELECT count(*) FROM expenses") == 1)
    }

    /// Each process's log lines for its 500s: the failure it logged and
    /// the access line, what a 500 in a test needs to be understood.
    private func failures(_ cluster: ServerCluster) throws -> String {
        try (0..<3).flatMap { index in
            try cluster.process(index).child.standardError.split(separator: "\n")
                .filter { $0.contains("Failed to process") || $0.contains(" 500 ") }
                .map { "process \(index): \($0)" }
        }.joined(separator: "\n")
    }

    @Test func postgresRestartedUnderLoad_requestsGet503_nothingIsLost_andTheServersRecoverOnTheirOwn() throws {
        let postgres = try PostgresCluster(name: "restart")
        let cluster = try ServerCluster(processes: 3, database: try postgres.makeDatabase())
        let pids = try (0..<3).map { try cluster.process($0).child.pid }
        let acknowledged = Mutex<[String]>([])
        let statuses = Mutex<[Int: Int]>([:])
        let retryAfter = Mutex<Set<String>>([])
        let stop = Atomic<Bool>(false)
        let done = DispatchGroup()
        for _ in 0..<6 {
            done.enter()
            Thread {
                defer { done.leave() }
                var connection: HTTPConnection?
                while !stop.load(ordering: .relaxed) {
                    // One key until it is answered 2xx, as the daemon does
                    // (also once told to stop: a create that committed and
                    // lost its answer is acknowledged by its replay).
                    let key = ClientID.make()
                    let deadline = Date().addingTimeInterval(120)
                    while Date() < deadline {
                        do {
                            connection = try connection ?? cluster.balancer.connect(timeout: 10)
                            let answer = try cluster.request("POST", "/v1/expenses", headers: [Self.json, ("Idempotency-Key", key)],
                                                             body: Array(TestServer.lunch.utf8), on: connection)
                            statuses.withLock { $0[answer.status, default: 0] += 1 }
                            if answer.status == 503 { retryAfter.withLock { _ = $0.insert(answer.header("Retry-After") ?? "none") } }
                            if answer.status / 100 == 2 {
                                acknowledged.withLock { $0.append(key) }
                                break
                            }
                            usleep(50_000)
                        } catch {
                            connection = nil
                            usleep(50_000)
                        }
                    }
                }
            }.start()
        }
        func waitForAcknowledged(_ count: Int) throws {
            try waitUntil(timeout: 120, "\(count) acknowledged creates") { acknowledged.withLock { $0.count } >= count }
        }
        try waitForAcknowledged(150)
        postgres.crash()
        try waitUntil(timeout: 60, "requests to get 503 while PostgreSQL is down") { statuses.withLock { $0[503] ?? 0 } >= 20 }
        try postgres.start()
        let before = acknowledged.withLock { $0.count }
        try waitForAcknowledged(before + 150)
        stop.store(true, ordering: .relaxed)
        #expect(done.wait(timeout: .now() + 60) == .success)

        let keys = acknowledged.withLock { $0 }
        let seen = statuses.withLock { $0 }
        let failed = try failures(cluster)
        #expect(seen[500] == nil, "no 500: \(seen)\n\(failed)")
        #expect(retryAfter.withLock { $0 } == ["5"], "every 503 says when to retry")
        let db = try Postgres.Connection(cluster.storage.database!)
        #expect(try db.scalarInt("SELECT count(*) FROM expenses") == Int64(keys.count), "each acknowledged create once, nothing else: \(seen)")
        #expect(try db.scalarInt("SELECT count(DISTINCT client_id) FROM expenses") == Int64(Set(keys).count))
        // The same processes served before and after, and still do.
        #expect(try (0..<3).map { try cluster.process($0).child.pid } == pids)
        for index in 0..<3 {
            let direct = try cluster.process(index).connect().request("GET", "/v1/expenses?limit=1", headers: [("Authorization", "Bearer \(cluster.token)")])
            #expect(direct.status == 200)
        }
        print("ClusterTests: statuses during the restart: \(seen.sorted { $0.key < $1.key })")
    }
}
