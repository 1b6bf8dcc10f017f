import Digest
import ExpenseCore
import ExpenseTestSupport
import Foundation
import SQLite
import Testing

/// `expensectl edit ID --receipt FILE`: a receipt attached or replaced,
/// offline or online, through the outbox; queued uploads of one expense
/// coalesce into one. Counts come from the server's own access log.
@Suite struct ReceiptEditTests {
    static let first = SampleReceipt.jpeg(size: 40_000, seed: 1)
    static let second = SampleReceipt.jpeg(size: 60_000, seed: 2)
    static let third = SampleReceipt.pdf(size: 30_000)

    static func write(_ bytes: [UInt8], _ daemon: DaemonHarness, _ name: String) -> String {
        let path = daemon.directory.at(name)
        SampleReceipt.write(bytes, to: path)
        return path
    }

    static func attach(_ daemon: DaemonHarness, _ id: String, _ bytes: [UInt8], name: String) throws {
        let result = try daemon.ctl(["edit", id, "--receipt", write(bytes, daemon, name)])
        guard result.status == 0 else { throw TestFailure("edit --receipt: \(result.stderr)") }
    }

    /// The server's receipt of `id`, hashed from its file.
    static func serverDigest(_ sync: SyncHarness, _ id: String) throws -> String? {
        try sync.serverRecords().first { $0.transactionID == id }?.receiptDigest
    }

    static func digest(_ bytes: [UInt8]) -> String { Hex.encode(SHA256.hash(bytes)) }

    static func receiptJobs(_ daemon: DaemonHarness) throws -> Int {
        let db = try Connection(path: "\(daemon.stateDirectory)/expensed.db", readOnly: true)
        return Int(try db.scalarInt("SELECT count(*) FROM jobs WHERE kind = 'receipt'") ?? 0)
    }

    static func puts(_ sync: SyncHarness, _ id: String, awaiting: Int) -> Int {
        sync.accessLog(awaiting: awaiting) { $0.first == "PUT" && $0.count > 1 && $0[1] == "/v1/expenses/\(id)/receipt" }.count
    }

    static func receipt(_ daemon: DaemonHarness, _ id: String) throws -> (source: String?, bytes: [UInt8]?) {
        let out = daemon.directory.at("out-\(UUID().uuidString)")
        let json = try daemon.ctlJSON(["receipt", id, "-o", out])
        return (json["source"]?.stringValue, FileManager.default.contents(atPath: out).map { [UInt8]($0) })
    }

    @Test func editReceipt_offline_isShownAtOnce_andUploadedOnceOnline() throws {
        let sync = try SyncHarness(startServer: false)
        try OfflineEditTests.startQueueingOnly(sync)
        defer { sync.daemon.stop() }
        let id = try OfflineEditTests.add(sync.daemon)
        #expect(try sync.daemon.ctlJSON(["show", id])["receipt"] == "none")
        try Self.attach(sync.daemon, id, Self.first, name: "late.jpg")
        #expect(try sync.daemon.ctlJSON(["show", id])["receipt"] == "pending")
        let local = try Self.receipt(sync.daemon, id)
        #expect(local.source == "queued")
        #expect(local.bytes == Self.first)

        try OfflineEditTests.goOnline(sync)
        try sync.waitUntilDrained()
        try sync.daemon.waitUntilNoReceiptFiles()
        #expect(Self.puts(sync, id, awaiting: 1) == 1)
        #expect(try Self.serverDigest(sync, id) == Self.digest(Self.first))
        #expect(try sync.daemon.ctlJSON(["show", id])["receipt"] == "uploaded")
        let fetched = try Self.receipt(sync.daemon, id)
        #expect(fetched.source == "server")
        #expect(fetched.bytes == Self.first)
    }

    @Test func editReceipt_ofASyncedReceipt_replacesItOnTheServer() throws {
        let sync = try SyncHarness()
        try sync.daemon.start()
        defer { sync.daemon.stop() }
        let added = try sync.daemon.ctl(["add", "--receipt", Self.write(Self.first, sync.daemon, "a.jpg"), "--merchant", "Hotel"])
        let id = added.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        try sync.waitUntilDrained()
        try sync.daemon.waitUntilNoReceiptFiles()
        #expect(try Self.serverDigest(sync, id) == Self.digest(Self.first))

        // A field changed with it, in the same edit.
        let result = try sync.daemon.ctl(["edit", id, "--receipt", Self.write(Self.third, sync.daemon, "b.pdf"), "--comment", "the real invoice"])
        #expect(result.status == 0, "\(result.stderr)")
        try sync.waitUntilDrained()
        try sync.daemon.waitUntilNoReceiptFiles()
        #expect(Self.puts(sync, id, awaiting: 2) == 2)
        #expect(try Self.serverDigest(sync, id) == Self.digest(Self.third))
        #expect(try OfflineEditTests.serverExpense(sync, id)["comment"] == "the real invoice")
        let fetched = try Self.receipt(sync.daemon, id)
        #expect(fetched.source == "server")
        #expect(fetched.bytes == Self.third, "the recorded digest follows the replacement")
    }

    @Test func twoQueuedReceiptEdits_coalesce_intoOneUploadOfTheNewest() throws {
        let sync = try SyncHarness(startServer: false)
        try OfflineEditTests.startQueueingOnly(sync)
        defer { sync.daemon.stop() }
        let added = try sync.daemon.ctl(["add", "--receipt", Self.write(Self.first, sync.daemon, "a.jpg")])
        let id = added.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        try Self.attach(sync.daemon, id, Self.second, name: "b.jpg")
        try Self.attach(sync.daemon, id, Self.third, name: "c.pdf")
        #expect(try Self.receiptJobs(sync.daemon) == 1)
        #expect(sync.daemon.receiptFiles().count == 1, "the older copies are gone: \(sync.daemon.receiptFiles())")
        #expect(try Self.receipt(sync.daemon, id).bytes == Self.third)

        try OfflineEditTests.goOnline(sync)
        try sync.waitUntilDrained()
        try sync.daemon.waitUntilNoReceiptFiles()
        #expect(Self.puts(sync, id, awaiting: 1) == 1, "one upload")
        #expect(try Self.serverDigest(sync, id) == Self.digest(Self.third))
    }

    /// A replacement while the old upload is on its way: that one is left
    /// to finish, and the new one follows it, so the server ends with the
    /// newest.
    @Test func editReceipt_whileTheOldUploadIsOnItsWay_isSentAfterIt() throws {
        let sync = try SyncHarness()
        // The second request (the upload) is held before it leaves until the test lets it go.
        let hold = try FaultHold("before-send", hit: 2, on: sync.daemon)
        try sync.daemon.start()
        defer { sync.daemon.stop() }
        let added = try sync.daemon.ctl(["add", "--receipt", Self.write(Self.first, sync.daemon, "a.jpg")])
        let id = added.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        try waitUntil(timeout: 30, "the upload to be on its way") { try OfflineEditTests.outbox(sync.daemon).map { "\($0.0) \($0.1)" } == ["receipt sending"] }
        try Self.attach(sync.daemon, id, Self.second, name: "b.jpg")
        let outbox = try OfflineEditTests.outbox(sync.daemon)
        #expect(outbox.map(\.0) == ["receipt", "receipt"], "the one on its way stays: \(outbox)")
        try hold.release(sync.daemon)

        try sync.waitUntilDrained(timeout: 60)
        try sync.daemon.waitUntilNoReceiptFiles()
        #expect(Self.puts(sync, id, awaiting: 2) == 2)
        #expect(try Self.serverDigest(sync, id) == Self.digest(Self.second), "the newest landed last")
        #expect(try Self.receipt(sync.daemon, id).bytes == Self.second)
    }

    @Test func editReceipt_ofGarbage_isRefused_andChangesNothing() throws {
        let sync = try SyncHarness(startServer: false)
        try OfflineEditTests.startQueueingOnly(sync)
        defer { sync.daemon.stop() }
        let added = try sync.daemon.ctl(["add", "--receipt", Self.write(Self.first, sync.daemon, "a.jpg")])
        let id = added.stdout.trimmingCharacters(in: .whitespacesAndNewlines)

        let notAReceipt = try sync.daemon.ctl(["edit", id, "--receipt", Self.write(Array("just some notes\n".utf8), sync.daemon, "notes.jpg")])
        #expect(notAReceipt.status == 65, "\(notAReceipt.stderr)")
        #expect(notAReceipt.stderr.contains("receipt"), "\(notAReceipt.stderr)")
        let cut = try sync.daemon.ctl(["edit", id, "--receipt", Self.write(Array(Self.second.prefix(20_000)), sync.daemon, "cut.jpg")])
        #expect(cut.status == 65)
        #expect(cut.stderr.contains("receipt is truncated"), "\(cut.stderr)")
        let missing = try sync.daemon.ctl(["edit", id, "--receipt", sync.daemon.directory.at("nothing-here.jpg")])
        #expect(missing.status == 66, "\(missing.stderr)")
        #expect(missing.stderr.contains("cannot open receipt"), "\(missing.stderr)")
        let folder = try sync.daemon.ctl(["edit", id, "--receipt", sync.daemon.directory.path])
        #expect(folder.status == 66, "\(folder.stderr)")
        let badID = try sync.daemon.ctl(["edit", "zzz", "--receipt", Self.write(Self.second, sync.daemon, "b.jpg")])
        #expect(badID.status == 1)
        #expect(badID.stderr.contains("that is not an expense id"), "\(badID.stderr)")
        let unknown = try sync.daemon.ctl(["edit", "cp-00000000", "--receipt", sync.daemon.directory.at("b.jpg")])
        #expect(unknown.status == 1)
        #expect(unknown.stderr.contains("no expense matches"), "\(unknown.stderr)")
        #expect(try sync.daemon.ctl(["edit", id]).status == 64, "neither a field nor a receipt")

        #expect(try Self.receiptJobs(sync.daemon) == 1)
        #expect(sync.daemon.receiptFiles().count == 1, "no copy left of a refused file: \(sync.daemon.receiptFiles())")
        #expect(try Self.receipt(sync.daemon, id).bytes == Self.first, "the receipt is the one added")
    }
}
