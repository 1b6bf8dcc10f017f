import ExpenseCore
import ExpenseTestSupport
import Foundation
import Posix
import Testing

/// The same receipt twice, through the real daemon and the real server:
/// by `add` and by the spool, the second expense is held with the first
/// one's id, nothing of it reaches the server until `retry`, and
/// `discard` drops it; a different receipt with equal fields is sent.
@Suite struct SameReceiptTests {
    static let fields = ["--merchant", "Blue Bottle", "--amount", "12.50", "--currency", "EUR", "--date", "2026-11-29"]

    func heldJob(_ daemon: DaemonHarness, _ id: String) throws -> JSONValue? {
        try daemon.ctlJSON(["show", id])["jobs"]?.arrayValue?.first { $0["state"] == "needs_attention" }
    }

    @Test func addingAReceiptTwice_holdsTheSecond_untilRetry() throws {
        let sync = try SyncHarness()
        let daemon = sync.daemon
        try daemon.start()
        defer { daemon.stop() }
        let receipt = daemon.directory.at("scan.jpg")
        SampleReceipt.write(SampleReceipt.jpeg(size: 4000, seed: 11), to: receipt)
        let first = try daemon.ctl(["add", "--receipt", receipt] + Self.fields)
        #expect(first.status == 0 && first.stderr.isEmpty, "\(first.stderr)")
        let firstID = first.stdout.trimmingCharacters(in: .whitespacesAndNewlines)

        let again = try daemon.ctl(["add", "--receipt", receipt] + Self.fields)
        #expect(again.status == 0, "held, not refused: \(again.stderr)")
        let heldID = again.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(again.stderr.contains("\(heldID) is held: its receipt is the same as another expense's"), "\(again.stderr)")
        #expect(again.stderr.contains("'expensectl retry \(heldID)' sends it anyway"), "\(again.stderr)")

        // Attached by an edit to an expense of its own, the same receipt is
        // held as well, and the edit says so as the add does.
        let plain = try daemon.ctl(["add", "--merchant", "Taxi", "--amount", "9.00", "--currency", "EUR", "--date", "2026-11-30"])
        let plainID = plain.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        let attached = try daemon.ctl(["edit", plainID, "--receipt", receipt])
        #expect(attached.status == 0, "\(attached.stderr)")
        #expect(attached.stderr.contains("\(plainID) is held: its receipt is the same as another expense's"), "\(attached.stdout) \(attached.stderr)")
        #expect(attached.stderr.contains("'expensectl retry \(plainID)' sends it anyway"), "\(attached.stderr)")
        #expect(try daemon.ctl(["discard", plainID]).status == 0)

        // Another receipt with the very same fields is another expense.
        let other = daemon.directory.at("other.jpg")
        SampleReceipt.write(SampleReceipt.jpeg(size: 4000, seed: 12), to: other)
        let third = try daemon.ctl(["add", "--receipt", other] + Self.fields)
        #expect(third.status == 0 && third.stderr.isEmpty, "\(third.stderr)")
        let thirdID = third.stdout.trimmingCharacters(in: .whitespacesAndNewlines)

        try waitUntil(timeout: 30, "the first and third expenses with their receipts on the server") {
            try sync.serverRecords().filter { $0.receiptDigest != nil }.map(\.transactionID).sorted() == [firstID, thirdID].sorted()
        }
        let job = try #require(try heldJob(daemon, heldID))
        #expect(job["kind"] == "create" && job["last_error_class"] == "same_receipt")
        let error = job["last_error"]?.stringValue ?? ""
        #expect(error.hasPrefix("the same receipt as \(firstID) (added "), "\(error)")
        #expect(job["hint"]?.stringValue?.contains("'expensectl retry \(heldID)' sends it anyway") == true)
        #expect(daemon.log.contains("Expense is held: the same receipt as \(firstID)"), "\(daemon.log)")
        #expect(try !sync.serverExpenses().map(\.transactionID).contains(heldID), "nothing of the held expense was sent")
        // Its upload waits behind the held create: counted as such, and not
        // waited for by `sync --wait`, which has nothing it could send.
        let status = try daemon.ctlJSON(["status"])
        #expect(status["needs_attention"] == 1 && status["queued"] == 1 && status["behind_attention"] == 1, "\(status.serialized())")
        #expect(try daemon.ctl(["status"]).stdout.contains("; 1 waiting behind one that needs attention"))
        let waited = try daemon.ctl(["sync", "--wait", "--timeout", "30"])
        #expect(waited.status == 0, "\(waited.stderr)")
        #expect(waited.stdout == "Done; 1 need attention, 1 more waiting behind them (see 'expensectl list').\n", "\(waited.stdout)")

        #expect(try daemon.ctl(["retry", heldID]).status == 0)
        try waitUntil(timeout: 30, "the held expense on the server once retried") {
            try sync.serverRecords().contains { $0.transactionID == heldID && $0.receiptDigest != nil }
        }
        try sync.waitUntilDrained()
        #expect(try daemon.ctlJSON(["show", heldID])["state"] == "synced")
    }

    @Test func theSpoolTakingAReceiptAlreadyAdded_holdsIt_andDiscardDropsIt() throws {
        let sync = try SyncHarness(daemonArguments: ["--spool-settle", "100ms"], spool: true)
        let daemon = sync.daemon
        try daemon.start()
        defer { daemon.stop() }
        let bytes = SpoolDrop.receipt(.png, tag: 7)
        let receipt = daemon.directory.at("scan.png")
        SampleReceipt.write(bytes, to: receipt)
        let added = try daemon.ctl(["add", "--receipt", receipt] + Self.fields)
        #expect(added.status == 0, "\(added.stderr)")
        let addedID = added.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        try sync.waitUntilDrained()

        try SpoolDrop.byRename(bytes, as: FileName("scan.png")!, in: daemon.spoolDirectory, staging: daemon.directory.at("staging"))
        var heldID = ""
        try waitUntil(timeout: 30, "the spool's expense held") {
            let list = try daemon.ctlJSON(["list"]).arrayValue ?? []
            heldID = list.first { $0["state"] == "needs_attention" }?["transaction_id"]?.stringValue ?? ""
            return try !heldID.isEmpty && daemon.spoolEntries().isEmpty
        }
        let job = try #require(try heldJob(daemon, heldID))
        #expect(job["last_error"]?.stringValue?.hasPrefix("the same receipt as \(addedID) (added ") == true, "\(job.serialized())")
        #expect(daemon.log.contains("Expense from spool file 'scan.png' is held"), "\(daemon.log)")

        #expect(try daemon.ctl(["discard", "--yes", heldID]).status == 0)
        #expect(try daemon.ctlJSON(["list"]).arrayValue?.map { $0["transaction_id"]?.stringValue } == [addedID])
        #expect(try sync.serverExpenses().map(\.transactionID) == [addedID])
    }
}
