import Digest
import ExpenseCore
import ExpenseTestSupport
import Foundation
import Testing

/// `expensed` against the shared deployment: three `expense-server`
/// processes on one PostgreSQL database behind HAProxy.
/// Serialized: it runs a PostgreSQL cluster, three servers and HAProxy of its own.
@Suite(.serialized) struct SharedServerTests {
    /// Expenses in the drain: 400 (a kill after a quarter of them still falls
    /// mid-drain, with eight requests in flight), 2,000 at the large scale,
    /// or `EXPENSE_TEST_DRAIN_COUNT`.
    static let count = TestScale.count(quick: 400, large: 2000, variable: "EXPENSE_TEST_DRAIN_COUNT")

    @Test func drainThroughThreeProcesses_whileOneIsKilledAndRestarted_arrivesExactlyOnceAndIntact() throws {
        // HAProxy starts once every expense is queued, so that the kill
        // and the restart fall in the middle of the drain.
        let cluster = try ServerCluster(processes: 3, startBalancer: false)
        let directory = cluster.directory
        SampleReceipt.write(Array((cluster.token + "\n").utf8), to: directory.at("token"))
        let daemon = DaemonHarness(arguments: [
            "--server", "http://127.0.0.1:\(cluster.balancerPort)", "--token-file", directory.at("token"),
            "--drain-interval", "200ms", "--backoff-base", "50ms", "--backoff-cap", "1s",
            "--connect-timeout", "2s", "--request-timeout", "10s", "--concurrency", "8",
        ])
        try daemon.start()
        defer { daemon.stop() }

        let count = Self.count
        var expected: [String: String] = [:]
        let contents = (0..<count).map { SampleReceipt.jpeg(size: 1500 + ($0 * 37) % 6000, seed: UInt8($0 % 251)) }
        let files = (0..<count).map { n -> String in
            let path = daemon.directory.at("receipt-\(n).jpg")
            SampleReceipt.write(contents[n], to: path)
            return path
        }
        let ids = try SyncTests.add(count, to: daemon) { files[$0] }
        for (n, id) in ids.enumerated() { expected[id] = Hex.encode(SHA256.hash(contents[n])) }
        try cluster.startBalancer()

        func onServer() throws -> Int64 { try cluster.storage.scalar("SELECT count(*) FROM expenses") ?? 0 }
        try waitUntil(timeout: 300, "a quarter of the expenses on the server") { try onServer() >= Int64(count / 4) }
        cluster.crash(1)
        let atCrash = try onServer()
        try waitUntil(timeout: 300, "the other two processes to go on") { try onServer() >= atCrash + Int64(count / 4) }
        try cluster.start(1)
        try daemon.waitForQueue(timeout: 600)

        #expect(try onServer() == Int64(count), "exactly \(count) expenses on the server")
        #expect(try cluster.storage.receiptDigestsByTransaction() == expected, "every receipt, byte for byte")
        #expect(try cluster.storage.scalar("SELECT count(*) FROM receipts") == Int64(count), "no receipt twice")
        let list = try daemon.list()
        #expect(list.count == count)
        #expect(list.allSatisfy { $0["state"] == "synced" && $0["receipt"] == "uploaded" })
        // Each is removed after its answer is recorded: waited for, not checked once.
        try daemon.waitUntilNoReceiptFiles()
        // The restarted process took its share again.
        #expect(try cluster.process(1).accessLog.contains { $0.hasPrefix("PUT ") || $0.hasPrefix("POST ") })
    }
}
