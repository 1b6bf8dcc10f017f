import Digest
import ExpenseCore
import ExpenseTestSupport
import Foundation
import SQLite
import Testing

/// Every crash window of design/system.md: kill -9 exactly there (an armed
/// fault point), restart, and the end state converges: each acknowledged
/// expense once on the server and once in the cache, nothing lost, no
/// orphan receipt file after one start-up.
@Suite struct CrashWindowTests {
    /// Adds one expense with a receipt, without waiting for the answer (the
    /// daemon may die before giving it).
    /// `bytes`: the receipt's (one of its own for each expense of a test:
    /// the same bytes twice would be held as the same receipt).
    static func addWithReceipt(_ daemon: DaemonHarness, clientID: String, bytes: [UInt8] = receipt) throws -> String {
        let file = daemon.directory.at("receipt.jpg")
        SampleReceipt.write(bytes, to: file)
        let client = try RawClient(path: daemon.socketPath, timeout: 10)
        try client.send(SyncTests.addLine(1, clientID: clientID, receipt: true), passingFileAt: file)
        _ = try? client.readLine()
        return TransactionID.derive(from: clientID)
    }

    /// Starts the daemon armed with `fault`, waits for it to die there.
    static func crash(_ sync: SyncHarness, at fault: String, then: (SyncHarness) throws -> Void) throws {
        sync.daemon.environment["EXPENSED_FAULT"] = fault
        try sync.daemon.start()
        try then(sync)
        guard sync.daemon.process?.waitForExit(timeout: 20) != nil else { throw TestFailure("the daemon did not reach \(fault)") }
        #expect(sync.daemon.process?.termination == .signaled(SIGKILL), "killed by SIGKILL at \(fault)")
        #expect(sync.daemon.log.contains("fault point \(fault.prefix { $0 != "@" })"))
        sync.daemon.environment["EXPENSED_FAULT"] = nil
    }

    /// Restarts without faults and checks the converged end state.
    static func converge(_ sync: SyncHarness, _ id: String, receiptBytes: [UInt8]? = nil) throws {
        try sync.daemon.start()
        defer { sync.daemon.stop() }
        try sync.waitUntilDrained(timeout: 30)
        let server = try sync.serverExpenses()
        #expect(server.map(\.transactionID) == [id], "exactly once on the server")
        let rows = try sync.daemonRows()
        #expect(rows.cache == [id], "exactly once in the cache")
        #expect(rows.jobs == 0)
        try sync.daemon.waitUntilNoReceiptFiles()
        if let receiptBytes {
            let expense = try sync.daemon.ctlJSON(["show", id])
            let response = try sync.serverRequest("GET", expense["receipt_url"]?.stringValue ?? "")
            #expect(SHA256.hash(response.body) == SHA256.hash(receiptBytes))
        }
    }

    static var receipt: [UInt8] { SampleReceipt.jpeg(size: 9000, seed: 3) }
    /// The receipt of the `n`th expense of a batch.
    static func receipt(_ n: Int) -> [UInt8] { SampleReceipt.jpeg(size: 9000 + n, seed: 3) }

    @Test func receiptStagedJobNotCommitted_leavesNoFileAndTheRetriedAddIsOne() throws {
        let sync = try SyncHarness()
        let clientID = ClientID.make()
        try Self.crash(sync, at: "after-receipt-staged") { sync in _ = try Self.addWithReceipt(sync.daemon, clientID: clientID) }
        #expect(sync.daemon.receiptFiles().count == 1, "the staged copy, referenced by no job")
        #expect(try sync.daemonRows().jobs == 0, "never acknowledged: nothing committed")
        try sync.daemon.start()
        #expect(sync.daemon.receiptFiles().isEmpty, "swept at start-up")
        // The client got no answer and retries with the same client id.
        let id = try Self.addWithReceipt(sync.daemon, clientID: clientID)
        #expect(sync.daemon.stop() == 0)
        try Self.converge(sync, id, receiptBytes: Self.receipt)
    }

    @Test func jobInFlightRequestNotSent_isRequeuedAndSentOnce() throws {
        let sync = try SyncHarness()
        let id = ClientID.make()
        try Self.crash(sync, at: "before-send") { sync in _ = try Self.addWithReceipt(sync.daemon, clientID: id) }
        let db = try Connection(path: "\(sync.daemon.stateDirectory)/expensed.db")
        #expect(try db.scalarInt("SELECT count(*) FROM jobs WHERE state = 'sending'") == 1)
        #expect(try sync.serverExpenses().isEmpty)
        try Self.converge(sync, TransactionID.derive(from: id), receiptBytes: Self.receipt)
        #expect(sync.daemon.log.contains("Requeued 1 job(s) interrupted while sending"))
    }

    @Test func serverCommittedResponseLost_retryIsAReplay() throws {
        let sync = try SyncHarness(serverArguments: ["--fault-drop-response", "1.0"])
        try sync.daemon.start()
        let id = try Self.addWithReceipt(sync.daemon, clientID: ClientID.make())
        try waitUntil(timeout: 20, "the server to commit the create") { try sync.serverExpenses().count == 1 }
        try waitUntil(timeout: 20, "the lost answer to be noticed") { try sync.daemon.ctlJSON(["status"])["server"] == "unreachable" }
        #expect(try sync.daemonRows().cache.isEmpty)
        sync.stopServer()
        try sync.startServer()
        try sync.waitUntilDrained(timeout: 30)
        #expect(sync.daemon.stop() == 0)
        #expect(sync.accessLog().contains { $0.first == "POST" && $0.last == "replayed=true" }, "the resend was a replay")
        try Self.converge(sync, id, receiptBytes: Self.receipt)
    }

    @Test func responseReceivedCacheNotCommitted_resendConverges() throws {
        let sync = try SyncHarness()
        let id = ClientID.make()
        try Self.crash(sync, at: "after-response") { sync in _ = try Self.addWithReceipt(sync.daemon, clientID: id) }
        #expect(try sync.serverExpenses().count == 1)
        #expect(try sync.daemonRows().cache.isEmpty)
        try Self.converge(sync, TransactionID.derive(from: id), receiptBytes: Self.receipt)
        #expect(sync.accessLog().contains { $0.first == "POST" && $0.last == "replayed=true" })
    }

    @Test func cacheUpsertedJobNotRemoved_isOneTransactionThatRollsBack() throws {
        let sync = try SyncHarness()
        let id = ClientID.make()
        try Self.crash(sync, at: "between-upsert-and-job-removal") { sync in _ = try Self.addWithReceipt(sync.daemon, clientID: id) }
        let rows = try sync.daemonRows()
        #expect(rows.cache.isEmpty, "the upsert was not committed without the job's removal")
        #expect(rows.jobs == 2)
        try Self.converge(sync, TransactionID.derive(from: id), receiptBytes: Self.receipt)
    }

    @Test func jobRemovedReceiptFileNotDeleted_isSweptAtStartUp() throws {
        let sync = try SyncHarness()
        let id = ClientID.make()
        try Self.crash(sync, at: "after-job-removed") { sync in _ = try Self.addWithReceipt(sync.daemon, clientID: id) }
        #expect(try sync.daemonRows().jobs == 0)
        #expect(sync.daemon.receiptFiles().count == 1, "the uploaded receipt's file, now an orphan")
        try Self.converge(sync, TransactionID.derive(from: id), receiptBytes: Self.receipt)
        #expect(sync.daemon.log.contains("Removed receipt file"))
    }

    /// The windows inside a batch of answers: killed while the third
    /// answer is being recorded (nothing of that transaction stays), or
    /// after a commit while the second receipt file is being removed.
    /// Eight expenses with receipts (sixteen jobs), queued while the server
    /// was down, then sent four at a time. Answers that come back more than
    /// the pass's hold apart are recorded in batches of their own, so the
    /// first one or two may have been committed before the third's batch.
    @Test(arguments: ["between-upsert-and-job-removal@3", "after-job-removed@2"])
    func crashInsideABatchOfAnswers_converges(_ fault: String) throws {
        let sync = try SyncHarness(daemonArguments: ["--concurrency", "4"], startServer: false)
        var ids: [String] = []
        try Self.crash(sync, at: fault) { sync in
            for n in 0..<8 { ids.append(try Self.addWithReceipt(sync.daemon, clientID: ClientID.make(), bytes: Self.receipt(n))) }
            try sync.startServer()
            // A drain may already have begun and reached the fault point:
            // the daemon killed before it answers is what is awaited.
            _ = try? sync.daemon.request(["op": "sync"])
        }
        if fault.hasPrefix("between-upsert") {
            let rows = try sync.daemonRows()
            let recorded = 16 - rows.jobs
            #expect((0...2).contains(recorded), "at most the two answers before the third were recorded: \(rows)")
            #expect(rows.cache.count <= recorded, "nothing cached but through a recorded answer: \(rows)")
            #expect(sync.daemon.receiptFiles().count >= 8 - recorded, "a receipt file goes only after its job's answer is recorded")
        }
        try sync.daemon.start()
        defer { sync.daemon.stop() }
        try sync.waitUntilDrained(timeout: 30)
        #expect(try sync.serverExpenses().map(\.transactionID).sorted() == ids.sorted(), "each exactly once on the server")
        let rows = try sync.daemonRows()
        #expect(rows.cache == ids.sorted(), "each exactly once in the cache")
        #expect(rows.jobs == 0)
        try sync.daemon.waitUntilNoReceiptFiles()
        for (n, id) in ids.enumerated() {
            let url = try sync.daemon.ctlJSON(["show", id])["receipt_url"]?.stringValue ?? ""
            #expect(SHA256.hash(try sync.serverRequest("GET", url).body) == SHA256.hash(Self.receipt(n)), "\(id): the receipt is whole")
        }
    }

    /// Killed with one create on the wire and the next handed to the HTTP
    /// client, waiting for the connection (one connection; a proxy holds
    /// the first create once it has left the daemon whole, so no answer
    /// frees the connection before the kill, and forwards it after). After
    /// a restart both go again: the one the server took is a replay (or,
    /// while the server, a second a request, still works on it, answered
    /// "in progress" and retried), and each ends up once.
    @Test func killedWithARequestWaitingInTheHTTPClient_converges() throws {
        let sync = try SyncHarness(daemonArguments: ["--concurrency", "1"], serverArguments: ["--fault-delay-ms", "1000"])
        // Between them a proxy that holds each create it has read whole.
        let proxy = try FaultProxy(backendPort: sync.port)
        defer { proxy.stop() }
        proxy.holdWrites()
        sync.daemon.arguments += ["--server", proxy.baseURL]
        try sync.daemon.start()
        let ids = try SyncTests.add(3, to: sync.daemon)
        try waitUntil(timeout: 5, "the creates to be claimed") { try sync.daemon.request(["op": "status"])["result"]?["sending"] == 3 }
        try waitUntil(timeout: 10, "the first create to leave the daemon") { proxy.heldWrites == 1 }
        sync.daemon.crash()
        proxy.releaseWrites()
        try waitUntil(timeout: 10, "the server to finish the create it was given") {
            sync.accessLog().contains { $0.first == "POST" }
        }
        // The daemon is gone: once the proxy has seen its connections end, nothing more can come from it.
        try waitUntil(timeout: 10, "the dead daemon's connections to end") { proxy.openConnections == 0 }
        #expect(proxy.requestsRead("POST") == 1, "the create waiting in the HTTP client never left: \(proxy.log)")
        #expect(sync.accessLog().filter { $0.first == "POST" }.count == 1)
        try sync.daemon.start()
        try sync.waitUntilDrained(timeout: 30)
        #expect(sync.daemon.stop() == 0)
        #expect(try sync.serverExpenses().map(\.transactionID).sorted() == ids.sorted(), "each exactly once on the server")
        let rows = try sync.daemonRows()
        #expect(rows.cache == ids.sorted(), "each exactly once in the cache")
        #expect(rows.jobs == 0)
    }

    @Test func crashAtRandomWhileDraining_converges() throws {
        let sync = try SyncHarness(serverArguments: ["--fault-delay-ms", "5"])
        try sync.daemon.start()
        let ids = try SyncTests.add(60, to: sync.daemon)
        for _ in 0..<5 {
            usleep(UInt32.random(in: 5_000...60_000))
            sync.daemon.crash()
            try sync.daemon.start()
        }
        try sync.waitUntilDrained(timeout: 60)
        #expect(sync.daemon.stop() == 0)
        #expect(Set(try sync.serverExpenses().map(\.transactionID)) == Set(ids))
        #expect(try sync.serverExpenses().count == 60)
        #expect(Set(try sync.daemonRows().cache) == Set(ids))
    }
}
