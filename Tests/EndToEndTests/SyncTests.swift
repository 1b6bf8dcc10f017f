import Digest
import ExpenseCore
import ExpenseTestSupport
import Foundation
import Synchronization
import SQLite
import Testing

/// The sync engine against the real reference server on loopback.
@Suite struct SyncTests {
    static func addLine(_ n: Int, clientID: String = ClientID.make(), receipt: Bool = false) -> String {
        #"{"id":\#(n),"op":"add","client_id":""# + clientID + #"","receipt":\#(receipt),"expense":{"merchant":"Shop \#(n)","amount":"\#(n % 1000).\#(n % 90 + 10)","currency":"EUR","date":"2026-11-29"}}"# + "\n"
    }

    /// A started daemon that sends to `server`, with a token file.
    static func daemon(sendingTo server: LoopbackHTTPServer, _ arguments: [String], environment: [String: String] = [:]) throws -> DaemonHarness {
        let dir = TemporaryDirectory()
        SampleReceipt.write(Array("token\n".utf8), to: dir.at("token"))
        let daemon = DaemonHarness(arguments: ["--server", server.baseURL, "--token-file", dir.at("token")] + arguments,
                                   environment: environment, directory: dir)
        try daemon.start()
        return daemon
    }

    /// Adds `count` expenses over one connection; returns their transaction ids.
    static func add(_ count: Int, to daemon: DaemonHarness, receipts: ((Int) -> String)? = nil) throws -> [String] {
        let client = try RawClient(path: daemon.socketPath)
        var ids: [String] = []
        for n in 0..<count {
            let line = addLine(n, receipt: receipts != nil)
            if let receipts { try client.send(line, passingFileAt: receipts(n)) } else { try client.send(line) }
            let answer = try client.readJSONLine()
            guard let id = answer["result"]?["transaction_id"]?.stringValue else { throw TestFailure("add failed: \(answer.serialized())") }
            ids.append(id)
        }
        return ids
    }

    @Test func offlineFirst_hundredAddsApplyOnceTheServerComes() throws {
        let sync = try SyncHarness(startServer: false)
        try sync.daemon.start()
        defer { sync.daemon.stop() }
        let ids = try Self.add(100, to: sync.daemon)
        let offline = try sync.daemon.list()
        #expect(offline.count == 100)
        #expect(offline.allSatisfy { $0["state"] == "queued" || $0["state"] == "sending" })
        let status = try sync.daemon.ctlJSON(["status"])
        #expect(status["server"] == "unreachable")
        try waitUntil(timeout: 10, "a job to say why it waits") {
            try sync.daemon.ctlJSON(["show", ids[0]])["jobs"]?.arrayValue?.first?["last_error_class"] == "transport"
        }
        let waiting = try sync.daemon.ctlJSON(["show", ids[0]])["jobs"]?.arrayValue?.first
        #expect(waiting?["attempts"] == 0, "no attempt counted for a transport failure")
        #expect(waiting?["last_error"]?.stringValue?.hasPrefix("no answer:") == true)

        try sync.startServer()
        try sync.waitUntilDrained(timeout: 60)
        let server = try sync.serverExpenses()
        #expect(server.count == 100)
        #expect(Set(server.map(\.transactionID)) == Set(ids))
        let rows = try sync.daemonRows()
        #expect(rows.cache.count == 100)
        #expect(rows.jobs == 0)
        #expect(try sync.daemon.list().allSatisfy { $0["state"] == "synced" })
    }

    /// 300 expenses with receipts through a server that loses a tenth of the
    /// requests and a tenth of the answers and refuses one in twenty with a
    /// 5xx; 1,000 at `EXPENSED_TEST_SCALE=large`.
    @Test func chaos_expensesWithReceipts_arriveExactlyOnceAndIntact() throws {
        let sync = try SyncHarness(daemonArguments: ["--request-timeout", "3s"],
                                   serverArguments: ["--fault-drop-request", "0.1", "--fault-drop-response", "0.1",
                                                     "--fault-error-rate", "0.05", "--fault-seed", "42"])
        try sync.daemon.start()
        defer { sync.daemon.stop() }
        let count = TestScale.count(quick: 300, large: 1000)
        var digests: [String: [UInt8]] = [:]
        let contents = (0..<count).map { SampleReceipt.jpeg(size: 1000 + $0 * 7, seed: UInt8($0 % 251)) }
        let files = (0..<count).map { n -> String in
            let path = sync.daemon.directory.at("receipt-\(n).jpg")
            SampleReceipt.write(contents[n], to: path)
            return path
        }
        let ids = try Self.add(count, to: sync.daemon) { files[$0] }
        for (n, id) in ids.enumerated() { digests[id] = SHA256.hash(contents[n]) }
        try sync.waitUntilDrained(timeout: 240)

        let server = try sync.serverExpenses()
        #expect(server.count == count, "exactly \(count) server expenses")
        #expect(Set(server.map(\.transactionID)) == Set(ids))
        let rows = try sync.daemonRows()
        #expect(rows.jobs == 0, "nothing left in the outbox")
        #expect(rows.cache.count == count)
        try sync.daemon.waitUntilNoReceiptFiles()

        // Every receipt, fetched back from the server (now without faults), is byte-identical.
        sync.stopServer()
        try sync.startServer()
        let list = try sync.daemon.list()
        #expect(list.allSatisfy { $0["receipt"] == "uploaded" })
        let connection = try sync.server!.connect()
        for expense in list {
            let id = expense["transaction_id"]?.stringValue ?? ""
            let url = expense["receipt_url"]?.stringValue ?? ""
            let response = try connection.request("GET", url, headers: [("Authorization", "Bearer \(sync.token)")])
            #expect(response.status == 200)
            #expect(SHA256.hash(response.body) == digests[id], "receipt of \(id)")
        }
    }

    @Test func twoDrainsAtOnce_neverSendTheSameJobTwice() throws {
        let sync = try SyncHarness(environment: ["WATCHDOG_USEC": "100000", "NOTIFY_SOCKET": "/nonexistent/notify"])
        try sync.daemon.start()
        defer { sync.daemon.stop() }
        // Adds (each a trigger), sync requests and 50 ms watchdog ticks, all at once.
        let stop = Atomic<Bool>(false)
        let syncer = Thread {
            while !stop.load(ordering: .relaxed) { _ = try? sync.daemon.request(["op": "sync"]) }
        }
        syncer.start()
        let ids = try Self.add(200, to: sync.daemon)
        try sync.waitUntilDrained()
        stop.store(true, ordering: .relaxed)
        let posts = sync.accessLog(awaiting: 200) { $0.first == "POST" }
        #expect(posts.count == 200, "one POST per expense: \(posts.count)")
        #expect(Set(posts.compactMap { $0.count > 4 ? $0[4] : nil }) == Set(ids))
        #expect(posts.allSatisfy { $0.count > 2 && $0[2] == "201" })
    }

    @Test func replay_sendingTheSameBatchTwiceLeavesTheServerIdentical() throws {
        let sync = try SyncHarness(startServer: false)
        try sync.daemon.start()
        let receipts = SampleReceipt.distinctFiles(30, in: sync.daemon.directory, extension: "png") { SampleReceipt.png(size: 5000 + $0) }
        _ = try Self.add(30, to: sync.daemon) { receipts[$0] }
        #expect(sync.daemon.stop() == 0)
        let copy = sync.daemon.directory.at("state-copy")
        try FileManager.default.copyItem(atPath: sync.daemon.stateDirectory, toPath: copy)

        try sync.startServer()
        try sync.daemon.start()
        try sync.waitUntilDrained()
        #expect(sync.daemon.stop() == 0)
        let first = try sync.serverRequest("GET", "/v1/expenses?limit=1000")
        #expect(first.status == 200)

        // The outbox as it was before it drained: everything goes again.
        try FileManager.default.removeItem(atPath: sync.daemon.stateDirectory)
        try FileManager.default.moveItem(atPath: copy, toPath: sync.daemon.stateDirectory)
        try sync.daemon.start()
        defer { sync.daemon.stop() }
        try sync.waitUntilDrained()
        let second = try sync.serverRequest("GET", "/v1/expenses?limit=1000")
        #expect(try JSONValue.parse(second.body)["expenses"] == JSONValue.parse(first.body)["expenses"])
        #expect(try sync.serverExpenses().count == 30)
        let replays = sync.accessLog(awaiting: 60) { $0.last == "replayed=true" }
        #expect(replays.count == 60, "every create and receipt of the second round was a replay: \(replays.count)")
    }

    /// A create refused as the contract says a merchant block list would.
    static let blocked = LoopbackHTTPServer.Reply.respond(
        status: 422, headers: ["Content-Type": "application/json"],
        body: Array(#"{"error":{"code":"merchant_blocked","message":"merchant is on the block list"}}"#.utf8))

    /// A create answered `201` with the expense it makes.
    static func created(_ request: LoopbackHTTPServer.Request) -> LoopbackHTTPServer.Reply {
        let body = (try? JSONValue.parse(request.body)) ?? .null
        let key = request.headers["idempotency-key"]?.trimmingCharacters(in: CharacterSet(charactersIn: "\"")) ?? ""
        let expense: JSONValue = ["transaction_id": .string(TransactionID.derive(from: key)), "client_id": .string(key),
                                  "merchant": body["merchant"] ?? .null, "amount": body["amount"] ?? .null,
                                  "currency": body["currency"] ?? .null, "date": body["date"] ?? .null, "version": 1,
                                  "created_at": "2026-11-30T00:00:00.000Z", "updated_at": "2026-11-30T00:00:00.000Z"]
        return .respond(status: 201, headers: ["Content-Type": "application/json"], body: expense.serializedBytes())
    }

    @Test func newExpense_getsThroughABacklogOfFailingOnes() throws {
        // Every "Blocked" create is refused, again and again; others apply.
        let server = try LoopbackHTTPServer { request in
            if request.method == "GET" { return .respond(status: 200, headers: [:], body: Array(#"{"expenses":[],"next_cursor":"0","has_more":false}"#.utf8)) }
            let merchant = (try? JSONValue.parse(request.body))?["merchant"]?.stringValue ?? ""
            return merchant.hasPrefix("Blocked") ? Self.blocked : Self.created(request)
        }
        defer { server.stop() }
        let daemon = try Self.daemon(sendingTo: server, ["--concurrency", "1", "--drain-interval", "100ms",
                                                         "--backoff-base", "10ms", "--backoff-cap", "50ms", "--max-attempts", "1000"])
        defer { daemon.stop() }
        let client = try RawClient(path: daemon.socketPath)
        for n in 0..<20 {
            try client.send(#"{"op":"add","expense":{"merchant":"Blocked \#(n)","amount":"1.00","currency":"EUR","date":"2026-11-29"}}"# + "\n")
            #expect(try client.readJSONLine()["ok"] == true)
        }
        try waitUntil(timeout: 10, "every blocked create to be retrying") { server.requests.filter { $0.method == "POST" }.count >= 60 }
        try client.send(#"{"op":"add","expense":{"merchant":"Welcome","amount":"2.00","currency":"EUR","date":"2026-11-29"}}"# + "\n")
        let added = try client.readJSONLine()["result"]?["transaction_id"]?.stringValue ?? ""
        try waitUntil(timeout: 10, "the new expense to apply past the failing ones") {
            try daemon.list().first { $0["transaction_id"]?.stringValue == added }?["state"] == "synced"
        }
        // And the failing ones are not given up: they are still tried after it.
        let blockedCreates = {
            server.requests.filter { $0.method == "POST" && ((try? JSONValue.parse($0.body))?["merchant"]?.stringValue ?? "").hasPrefix("Blocked") }.count
        }
        let blockedSoFar = blockedCreates()
        try waitUntil(timeout: 10, "the failing ones to be tried again after the new one applied") { blockedCreates() > blockedSoFar }
        #expect(try daemon.list().filter { $0["state"] == "synced" }.count == 1)
    }

    @Test func rejectedFiveTimes_needsAttentionThenRetryApplies() throws {
        // A server that refuses this expense until it is "fixed".
        let fixed = Atomic<Bool>(false)
        let server = try LoopbackHTTPServer { request in
            if request.method == "GET" { return .respond(status: 200, headers: [:], body: Array(#"{"expenses":[],"next_cursor":"0","has_more":false}"#.utf8)) }
            return fixed.load(ordering: .relaxed) ? Self.created(request) : Self.blocked
        }
        let token = TemporaryDirectory()
        SampleReceipt.write(Array("t0ken\n".utf8), to: token.at("token"))
        let daemon = DaemonHarness(arguments: ["--server", server.baseURL, "--token-file", token.at("token"), "--drain-interval", "100ms",
                                               "--backoff-base", "10ms", "--backoff-cap", "50ms", "--max-attempts", "5"],
                                   environment: ["EXPENSED_DEBUG": "1"])
        try daemon.start()
        defer { daemon.stop() }
        let id = try Self.add(1, to: daemon)[0]
        try waitUntil(timeout: 20, "the job to need attention") { try daemon.list().first?["state"] == "needs_attention" }
        #expect(server.requests.filter { $0.method == "POST" }.count == 5)
        let shown = try daemon.ctlJSON(["show", id])
        let job = shown["jobs"]?.arrayValue?.first
        #expect(job?["state"] == "needs_attention")
        #expect(job?["attempts"] == 5)
        #expect(job?["last_error_class"] == "rejected")
        #expect(job?["last_error"]?.stringValue?.contains("merchant is on the block list") == true)
        // Logged after the commit that the list shows.
        try waitUntil("the log to say so") { daemon.log.contains("needs attention after 5 failed attempts") }
        // It stays put: nothing more is sent until someone decides, not
        // even by a pass asked for.
        let passes = daemon.passesEnded
        #expect(try daemon.request(["op": "sync"])["ok"] == true)
        try daemon.waitForPasses(after: passes, count: 1)
        #expect(server.requests.filter { $0.method == "POST" }.count == 5)

        fixed.store(true, ordering: .relaxed)
        let retried = try daemon.ctl(["retry", id])
        #expect(retried.status == 0)
        try waitUntil(timeout: 10, "the retried job to apply") { try daemon.list().first?["state"] == "synced" }
        #expect(server.requests.filter { $0.method == "POST" }.count == 6)
    }

    /// A refusal is counted in `stats` as its commit is seen: with the pass
    /// held right after it recorded the answers (nothing logged yet),
    /// `status` shows the job needing attention and `stats` counts its
    /// failure already, since start and in total; and once, after the pass.
    @Test func aRefusalStatusShows_isCountedByStatsAlready() throws {
        let server = try LoopbackHTTPServer { request in
            if request.method == "GET" { return .respond(status: 200, headers: [:], body: Array(#"{"expenses":[],"next_cursor":"0","has_more":false}"#.utf8)) }
            return Self.blocked
        }
        let token = TemporaryDirectory()
        SampleReceipt.write(Array("t0ken\n".utf8), to: token.at("token"))
        let daemon = DaemonHarness(arguments: ["--server", server.baseURL, "--token-file", token.at("token"), "--max-attempts", "1"])
        let hold = try FaultHold("after-answers-recorded", on: daemon)
        try daemon.start()
        defer { daemon.stop() }
        _ = try Self.add(1, to: daemon)
        try hold.waitUntilHeld(daemon)
        func rejected() throws -> [JSONValue?] {
            let stats = try daemon.ctlJSON(["stats"])
            return [stats["since_start"]?["failures"]?["rejected"], stats["total"]?["failures"]?["rejected"]]
        }
        #expect(try daemon.ctlJSON(["status"])["needs_attention"] == 1)
        #expect(try rejected() == [1, 1])
        #expect(!daemon.log.contains("needs attention after"), "held before the pass logged it")
        try hold.release(daemon)
        try waitUntil("the log to say so") { daemon.log.contains("needs attention after 1 failed attempts") }
        #expect(try rejected() == [1, 1])
    }

    @Test func wrongToken_pausesWithoutBlamingJobsUntilTheFileIsFixed() throws {
        let sync = try SyncHarness(environment: ["EXPENSED_DEBUG": "1"])
        sync.writeToken("not-the-token")
        try sync.daemon.start()
        defer { sync.daemon.stop() }
        let ids = try Self.add(5, to: sync.daemon)
        // Jobs claimed with the first refused one are "sending" until the pass puts them back.
        try sync.daemon.waitForQueue(queued: 5, server: "needs_credentials", timeout: 10, "credentials to be needed, the five jobs queued")
        let status = try sync.daemon.ctl(["status"])
        #expect(status.stdout.contains("needed: the server refused the token"))
        for id in ids {
            let job = try sync.daemon.ctlJSON(["show", id])["jobs"]?.arrayValue?.first
            #expect(job?["attempts"] == 0)
            #expect(job?["transient_attempts"] == 0)
            #expect(job?["state"] == "queued")
        }
        #expect(sync.daemon.log.contains("Server refused the credentials (401)"))
        #expect(!sync.daemon.log.contains("not-the-token"), "the token never reaches a log line")
        // Paused: the timer's passes go on (each looks at the token file),
        // and none of them sends. Counted from a pass after the refusals: the
        // server logs a request after its answer has gone out.
        try sync.daemon.waitForPasses(after: sync.daemon.passesEnded, count: 1)
        let posts = sync.accessLog().filter { $0.first == "POST" }.count
        try sync.daemon.waitForPasses(after: sync.daemon.passesEnded, count: 2)
        #expect(sync.accessLog().filter { $0.first == "POST" }.count == posts, "paused: nothing more is sent")

        // The refusals are counted since start and in total, the same.
        func auth() throws -> [Int64?] {
            let stats = try sync.daemon.ctlJSON(["stats"])
            return [stats["since_start"]?["failures"]?["auth"]?.intValue, stats["total"]?["failures"]?["auth"]?.intValue]
        }
        let refusals = try #require(try auth()[0])
        #expect(refusals >= 1)
        #expect(try auth() == [refusals, refusals])

        sync.writeToken(sync.token)
        try sync.waitUntilDrained(timeout: 20)
        #expect(try sync.serverExpenses().count == 5)
        #expect(try sync.daemon.ctlJSON(["status"])["server"] == "ok")
        // The total outlives the daemon.
        sync.daemon.stop()
        try sync.daemon.start()
        #expect(try auth() == [nil, refusals])
    }

    @Test func hungServer_delaysAPassByTheTimeoutAndNeverWedgesTheDaemon() throws {
        let server = try LoopbackHTTPServer { _ in .hang }
        let dir = TemporaryDirectory()
        SampleReceipt.write(Array("token\n".utf8), to: dir.at("token"))
        let listener = try NotifyListener(path: dir.at("notify"))
        let daemon = DaemonHarness(arguments: ["--server", server.baseURL, "--token-file", dir.at("token"),
                                               "--request-timeout", "1s", "--drain-interval", "200ms"],
                                   environment: ["NOTIFY_SOCKET": listener.path, "WATCHDOG_USEC": "400000"])
        try daemon.start()
        defer { daemon.stop() }
        _ = try Self.add(3, to: daemon)
        // While requests hang, the control socket answers and pings keep
        // coming: five of them, each one a tick that a hung request did not
        // hold up (the deadline only stops a daemon that never would).
        var pings = 0
        _ = listener.collect(timeout: 60 * TestPatience.factor) { messages in
            pings = messages.filter { $0 == "WATCHDOG=1" }.count
            return pings >= 5
        }
        #expect(pings >= 5, "watchdog pings continue while the server hangs: \(pings)")
        for _ in 0..<10 {
            #expect(try daemon.request(["op": "status"])["ok"] == true)
        }
        try waitUntil(timeout: 10, "the timeout to be recorded") {
            try daemon.ctlJSON(["status"])["server"] == "unreachable"
        }
        #expect(daemon.log.contains("Timeout") || daemon.log.contains("timed out"), "\(daemon.log)")
        #expect(try daemon.list().allSatisfy { $0["state"] == "queued" || $0["state"] == "sending" })
    }

    @Test func requestsOnTheWire_neverExceedTheConcurrency() throws {
        // Creates are refused until all are queued, then hang, so every
        // request the daemon lets out stays on the wire.
        let hang = Atomic<Bool>(false)
        let server = try LoopbackHTTPServer { request in
            guard request.method == "POST" else { return .respond(status: 503, headers: [:], body: []) }
            return hang.load(ordering: .relaxed) ? .hang : .close
        }
        defer { server.stop() }
        // A request timeout far past the test's waits: the two hung requests
        // stay on the wire until the end, however slow the machine.
        let daemon = try Self.daemon(sendingTo: server, ["--concurrency", "2", "--request-timeout", "60s", "--drain-interval", "1h"])
        defer { daemon.stop() }
        _ = try Self.add(12, to: daemon)
        try waitUntil("every job back in the queue") { try daemon.request(["op": "status"])["result"]?["queued"] == 12 }
        hang.store(true, ordering: .relaxed)
        let before = server.requests.filter { $0.method == "POST" }.count
        #expect(try daemon.request(["op": "sync"])["ok"] == true)
        try waitUntil(timeout: 5, "two creates to reach the server") { server.requests.filter { $0.method == "POST" }.count >= before + 2 }
        // More jobs are claimed and handed to the HTTP client, which holds
        // them: no third request while two hang.
        try waitUntil(timeout: 10, "more jobs to wait ready in the HTTP client") {
            (try daemon.request(["op": "status"])["result"]?["sending"]?.intValue ?? 0) > 2
        }
        #expect(server.requests.filter { $0.method == "POST" }.count == before + 2, "no third request while two hang")
    }

    @Test func deleteOfACreateClaimedButNeverSent_dropsItsChainWhenThePassEnds() throws {
        // Creates hang. With concurrency 1, one is on the wire and one waits
        // in the HTTP client; the rest of the pass's claim stays claimed,
        // never handed to the network, until the pass ends.
        let server = try LoopbackHTTPServer { request in
            request.method == "POST" ? .hang : .respond(status: 503, headers: [:], body: [])
        }
        defer { server.stop() }
        let daemon = try Self.daemon(sendingTo: server, ["--concurrency", "1", "--request-timeout", "60s", "--drain-interval", "1h",
                                                         "--server", "none"])
        defer { daemon.stop() }
        let receipts = SampleReceipt.distinctFiles(5, in: daemon.directory)
        let ids = try Self.add(5, to: daemon) { receipts[$0] }
        #expect(daemon.receiptFiles().count == 5)
        // Queued while no server was configured: now one pass claims them all.
        #expect(daemon.stop() == 0)
        daemon.arguments.removeLast(2)
        try daemon.start()
        try waitUntil(timeout: 10, "the first create on the wire") { server.requests.count == 1 }
        let states = try Self.createStates(daemon)
        #expect(states[ids[4]] == "sending", "claimed: \(states)")
        let deleted = try daemon.ctl(["delete", ids[4]])
        #expect(deleted.stdout.contains("delete queued"), "the create is claimed and may yet go: \(deleted.stdout)")

        // Stopping ends the pass: the claimed jobs go back, and the deleted
        // expense's create, never sent, takes its delete.
        #expect(daemon.stop() == 0)
        #expect(daemon.log.contains("\(ids[4]): Deleted before it reached the server"), "\(daemon.log)")
        #expect(server.requests.count == 1, "nothing more was sent")
        try daemon.start()
        #expect(try Self.createStates(daemon)[ids[4]] == nil)
        // In any order: two adds in the same millisecond list by their ids.
        let listed = try daemon.list()
        #expect(listed.compactMap { $0["transaction_id"]?.stringValue }.sorted() == ids[0..<4].sorted(), "the four others stay: \(listed)")
        #expect(daemon.receiptFiles().count == 4, "its receipt file is gone")
    }

    /// The state of each create in the outbox, by transaction id.
    static func createStates(_ daemon: DaemonHarness) throws -> [String: String] {
        let db = try Connection(path: "\(daemon.stateDirectory)/expensed.db")
        return Dictionary(uniqueKeysWithValues: try db.query("SELECT transaction_id, state FROM jobs WHERE kind = 'create'") { ($0.string(0), $0.string(1)) })
    }

    @Test func refusalOfATokenTheFileHasJustReplaced_pausesNothing() throws {
        // The server refuses the first token and, before it answers, the
        // file gets a new one: sends look at the file once a second, so only
        // the refusal's own look can see it. The job goes again with the new
        // token at once; sending is not paused.
        let tokenPath = Mutex<String?>(nil)
        let server = try LoopbackHTTPServer { request in
            guard request.method == "POST" else { return .respond(status: 503, headers: [:], body: []) }
            if request.headers["authorization"] == "Bearer token", let path = tokenPath.withLock({ $0 }) {
                SampleReceipt.write(Array("new-token\n".utf8), to: path)
                return .respond(status: 401, headers: [:], body: Array(#"{"error":{"code":"unauthorized"}}"#.utf8))
            }
            return .respond(status: 503, headers: ["Retry-After": "3600"], body: [])
        }
        defer { server.stop() }
        let daemon = try Self.daemon(sendingTo: server, ["--drain-interval", "1h"])
        defer { daemon.stop() }
        tokenPath.withLock { $0 = daemon.directory.at("token") }
        _ = try Self.add(1, to: daemon)
        try waitUntil(timeout: 5, "the create to go again with the new token") {
            server.requests.contains { $0.method == "POST" && $0.headers["authorization"] == "Bearer new-token" }
        }
        #expect(try daemon.request(["op": "status"])["result"]?["server"] != "needs_credentials")
    }

    @Test func stoppingWhileABatchIsBeingRecorded_doesNotSpin_andLosesNothing() throws {
        // The first batch of answers takes 3 s to record; more answers wait
        // behind it when SIGTERM cancels the pass. Waiting for that batch
        // must cost next to no CPU, and every expense ends up applied or
        // still queued, once, after a restart.
        let sync = try SyncHarness(daemonArguments: ["--concurrency", "4", "--drain-interval", "1h"],
                                   environment: ["EXPENSED_FAULT": "between-upsert-and-job-removal:sleep=3000"], startServer: false)
        // Queued by a daemon that sends nothing, so no pass those adds
        // start can meet the server half-way (and stop for good at the
        // slow batch, with nothing else waiting); the next start drains.
        sync.daemon.arguments += ["--server", "none"]
        try sync.daemon.start()
        let ids = try Self.add(40, to: sync.daemon)
        #expect(sync.daemon.stop() == 0)
        sync.daemon.arguments.removeLast(2)
        try sync.startServer()
        try sync.daemon.start()
        try waitUntil(timeout: 5, "answers to wait behind the slow batch") { sync.accessLog().filter { $0.first == "POST" }.count >= 12 }
        let process = try #require(sync.daemon.process)
        let before = try cpuSeconds(process.pid)
        var last = before
        process.signal(SIGTERM)
        // Its CPU time as last seen before it exited, the batch recorded.
        try waitUntil(timeout: 60, "the daemon to stop once the batch is recorded") {
            if let now = try? cpuSeconds(process.pid) { last = now }
            return !process.isRunning
        }
        let used = last - before
        #expect(used < 0.5, "stopping daemon used \(used) s of CPU waiting 3 s for one commit")
        #expect(sync.daemon.stop() == 0)
        try sync.daemon.start()
        #expect(try sync.daemon.request(["op": "sync"])["ok"] == true)
        try sync.daemon.waitForQueue(timeout: 20, "every expense applied")
        let listed = try sync.daemon.list()
        #expect(listed.count == 40 && listed.allSatisfy { $0["state"] == "synced" })
        #expect(Set(listed.compactMap { $0["transaction_id"]?.stringValue }) == Set(ids))
        #expect(try sync.serverExpenses().count == 40)
    }

    /// A server whose first create hangs and whose later ones are turned
    /// away (503, retry in an hour), and how many creates it has seen.
    static func serverWhoseFirstCreateHangs() throws -> (LoopbackHTTPServer, @Sendable () -> Int) {
        final class Count: Sendable { let value = Atomic<Int>(0) }
        let posts = Count()
        let server = try LoopbackHTTPServer { request in
            guard request.method == "POST" else { return .respond(status: 503, headers: [:], body: []) }
            let n = posts.value.add(1, ordering: .relaxed).newValue
            return n == 1 ? .hang : .respond(status: 503, headers: ["Retry-After": "3600"], body: Array(#"{"error":{"code":"busy"}}"#.utf8))
        }
        return (server, { posts.value.load(ordering: .relaxed) })
    }

    @Test func answersWaitingForCompany_areRecordedSoonWhileARequestHangs() throws {
        // The first create hangs; the others are answered at once. Their
        // answers are fewer than a batch, and a request is still on the
        // wire: they are recorded after a short hold, not when it ends.
        let (server, posts) = try Self.serverWhoseFirstCreateHangs()
        defer { server.stop() }
        let daemon = try Self.daemon(sendingTo: server, ["--concurrency", "4", "--request-timeout", "60s", "--drain-interval", "1h"])
        defer { daemon.stop() }
        _ = try Self.add(3, to: daemon)
        try waitUntil(timeout: 5, "three creates to reach the server") { posts() >= 3 }
        try waitUntil(timeout: 10, "the two answers to be recorded while the first request hangs") {
            let jobs = try daemon.list()
            return jobs.filter { $0["state"] == "queued" }.count == 2 && jobs.filter { $0["state"] == "sending" }.count == 1
        }
        #expect(try daemon.request(["op": "status"])["result"]?["sending"] == 1)
    }

    @Test func jobsQueuedWhileARequestHangs_joinThePassRunning() throws {
        // The first create hangs. The pass has looked for more and found
        // nothing; creates added now join it and go out at once, not when
        // the hanging request ends (60 s) and the next pass begins.
        let (server, posts) = try Self.serverWhoseFirstCreateHangs()
        defer { server.stop() }
        let daemon = try Self.daemon(sendingTo: server, ["--concurrency", "4", "--request-timeout", "60s", "--drain-interval", "1h"],
                                     environment: ["EXPENSED_DEBUG": "1"])
        defer { daemon.stop() }
        _ = try Self.add(1, to: daemon)
        try waitUntil(timeout: 5, "the first create to reach the server") { posts() >= 1 }
        try waitUntil(timeout: 10, "the pass to look for more jobs and find none") { daemon.log.contains("Drain pass found nothing more to claim") }
        _ = try Self.add(2, to: daemon)
        try waitUntil(timeout: 5, "the two later creates to reach the server while the first hangs") { posts() >= 3 }
        try waitUntil(timeout: 10, "their answers to be recorded while the first still hangs") {
            try daemon.request(["op": "status"])["result"]?["sending"] == 1
        }
    }

    @Test func requestsWaitingForAConnection_doNotSpendTheirTimeoutWaiting() throws {
        // One connection; each create takes 1.8 s of a 3 s timeout (1.2 s to
        // spare on a loaded machine). A request timed from when it was handed
        // over would expire waiting its turn: the second waits 1.8 s for the
        // connection and ends 3.6 s after it was handed over.
        let server = try LoopbackHTTPServer { request in
            guard request.method == "POST" else { return .respond(status: 503, headers: [:], body: []) }
            return .respondAfter(seconds: 1.8, status: 503, headers: ["Retry-After": "3600"], body: [])
        }
        defer { server.stop() }
        let daemon = try Self.daemon(sendingTo: server, ["--concurrency", "1", "--request-timeout", "3s", "--drain-interval", "1h"])
        defer { daemon.stop() }
        let client = try RawClient(path: daemon.socketPath)
        for n in 0..<3 { try client.send(Self.addLine(n)) }
        for _ in 0..<3 { #expect(try client.readJSONLine()["ok"] == true) }
        try waitUntil(timeout: 15, "three answers") { server.requests.filter { $0.method == "POST" }.count >= 3 && !daemon.log.isEmpty }
        try waitUntil(timeout: 5, "the third answer to be recorded") {
            try daemon.list().allSatisfy { $0["state"] == "queued" } && (try daemon.request(["op": "status"])["result"]?["sending"]?.intValue) == 0
        }
        #expect(!daemon.log.contains("unreachable"), "no request timed out waiting: \(daemon.log)")
        #expect(try daemon.ctlJSON(["status"])["last_error_class"] != "transport")
    }

    @Test func receiptCopyLostWhileQueued_isSaidAndTheExpenseStillSyncs() throws {
        let sync = try SyncHarness(startServer: false)
        try sync.daemon.start()
        let receipt = sync.daemon.directory.at("r.jpg")
        SampleReceipt.write(SampleReceipt.jpeg(), to: receipt)
        let txn = try sync.daemon.ctl(["add", "--receipt", receipt, "--merchant", "M", "--amount", "1.00", "--currency", "EUR",
                                       "--date", "2026-11-29"]).stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(sync.daemon.stop() == 0)
        let copies = sync.daemon.receiptFiles()
        #expect(copies.count == 1)
        try FileManager.default.removeItem(atPath: "\(sync.daemon.stateDirectory)/receipts/\(copies[0])")
        try sync.startServer()
        try sync.daemon.start()
        defer { sync.daemon.stop() }
        #expect(sync.daemon.log.contains("is referenced by a job but missing"), "\(sync.daemon.log)")
        try waitUntil(timeout: 20, "the receipt job to need attention") {
            try sync.daemon.ctlJSON(["show", txn])["jobs"]?.arrayValue?.contains { $0["kind"] == "receipt" && $0["state"] == "needs_attention" } == true
        }
        let shown = try sync.daemon.ctlJSON(["show", txn])
        let job = shown["jobs"]?.arrayValue?.first { $0["kind"] == "receipt" }
        // The legible copy is made from the file the daemon received, so the
        // loss shows when that copy is made (or, once made, when it is sent).
        let error = job?["last_error"]?.stringValue ?? ""
        #expect(error.contains("receipt cannot be read") || error.contains("receipt file cannot be read"), "\(shown.serialized())")
        #expect(job?["hint"]?.stringValue?.contains("expensectl retry \(txn)") == true, "\(shown.serialized())")
        #expect(try sync.serverExpenses().map(\.transactionID) == [txn], "the create went through")
        #expect(try sync.daemon.ctl(["discard", txn]).status == 0)
        #expect(try sync.daemon.ctlJSON(["show", txn])["jobs"]?.arrayValue?.isEmpty == true)
    }

    @Test func overlappingRefreshesAndADrain_neverMakeTwoCacheRows() throws {
        let sync = try SyncHarness(environment: ["EXPENSED_DEBUG": "1"])
        // Expenses made elsewhere (another device of the same user).
        var elsewhere: [String] = []
        for n in 0..<40 {
            let key = ClientID.make()
            let response = try sync.serverRequest("POST", "/v1/expenses", body: ["merchant": .string("Elsewhere \(n)"), "amount": "1.00", "currency": "EUR", "date": "2026-11-01"], key: key)
            #expect(response.status == 201)
            elsewhere.append(TransactionID.derive(from: key))
        }
        try sync.daemon.start()
        defer { sync.daemon.stop() }
        let stop = Atomic<Bool>(false)
        let stopped = Atomic<Int>(0)
        let refreshers = (0..<3).map { _ in
            Thread {
                while !stop.load(ordering: .relaxed) { _ = try? sync.daemon.request(["op": "sync", "refresh": true]) }
                stopped.add(1, ordering: .relaxed)
            }
        }
        refreshers.forEach { $0.start() }
        let mine = try Self.add(60, to: sync.daemon)
        try sync.waitUntilDrained()
        // Refreshes go on over the drained outbox for two more passes.
        try sync.daemon.waitForPasses(after: sync.daemon.passesEnded, count: 2)
        stop.store(true, ordering: .relaxed)
        try waitUntil("the refreshers to stop") { stopped.load(ordering: .relaxed) == refreshers.count }
        // A refresh still under way commits page by page: the rows below
        // hold at every commit.
        let rows = try sync.daemonRows()
        #expect(rows.cache.count == 100)
        #expect(Set(rows.cache) == Set(elsewhere + mine))
        let listed = try sync.daemon.list().compactMap { $0["transaction_id"]?.stringValue }
        #expect(listed.count == 100)
        #expect(Set(listed).count == 100)
    }

    @Test func listShowStatusAndStats_describeTheSync() throws {
        let sync = try SyncHarness(startServer: false)
        try sync.daemon.start()
        defer { sync.daemon.stop() }
        let receipt = sync.daemon.directory.at("r.pdf")
        SampleReceipt.write(SampleReceipt.pdf(size: 4000), to: receipt)
        let plain = try Self.add(1, to: sync.daemon)[0]
        let withReceipt = try sync.daemon.ctl(["add", "--receipt", receipt]).stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        func receipts() throws -> [String: JSONValue] {
            Dictionary(uniqueKeysWithValues: try sync.daemon.list().map { ($0["transaction_id"]?.stringValue ?? "", $0["receipt"] ?? .null) })
        }
        #expect(try receipts() == [plain: "none", withReceipt: "pending"])
        try sync.startServer()
        try sync.waitUntilDrained()
        let list = try sync.daemon.list()
        #expect(try receipts() == [plain: "none", withReceipt: "uploaded"])
        #expect(list.allSatisfy { $0["state"] == "synced" && $0["version"] != .null })
        let shown = try sync.daemon.ctlJSON(["show", withReceipt])
        #expect(shown["receipt_url"]?.stringValue?.contains(withReceipt) == true)
        #expect(shown["jobs"] == [])
        let status = try sync.daemon.ctlJSON(["status"])
        #expect(status["server"] == "ok")
        #expect(status["last_contact_at"]?.stringValue != nil)
        #expect(status["server_url"]?.stringValue == "http://127.0.0.1:\(sync.port)")
        // Counted as the commit that emptied the outbox was seen: read once.
        let stats = try sync.daemon.ctlJSON(["stats"])
        #expect(stats["since_start"]?["applied"] == 3)
        #expect(stats["since_start"]?["latency_ms"]?["p50"]?.intValue != nil)
        #expect(stats["total"]?["applied"] == 3)
        #expect(stats["since_start"]?["failures"]?["transport"]?.intValue ?? 0 >= 1, "\(stats.serialized())")
        let human = try sync.daemon.ctl(["stats"])
        #expect(human.stdout.contains("Since start:"))
    }

    @Test func syncWait_returnsOnceDrained() throws {
        let sync = try SyncHarness(startServer: false)
        try sync.daemon.start()
        defer { sync.daemon.stop() }
        _ = try Self.add(20, to: sync.daemon)
        let timedOut = try sync.daemon.ctl(["sync", "--wait", "--timeout", "1"])
        #expect(timedOut.status == 75)
        try sync.startServer()
        let result = try sync.daemon.ctl(["sync", "--wait", "--timeout", "30"])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stdout.contains("everything is synced"))
        #expect(try sync.daemonRows().jobs == 0)
    }
}
