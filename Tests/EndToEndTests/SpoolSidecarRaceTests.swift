import Digest
import ExpenseCore
import ExpenseTestSupport
import Foundation
import Posix
import Testing

/// A receipt taken alone, and its sidecar arriving while that intake is
/// at each of its steps (the daemon held there by a `hold` fault point):
/// one expense with the receipt and the sidecar's fields, whatever the
/// moment; and the same through a kill -9 at that step and a restart.
/// Serialized: twelve cases that hold or kill a daemon at each step of an intake; one at a time bounds the load of their restarts.
@Suite(.serialized) struct SpoolSidecarRaceTests {
    static let fields = ExpenseFields(merchant: "Race Café", amount: "12.30", currency: "EUR", date: "2026-04-02", category: "Meals")
    static let receipt = SpoolDrop.receipt(.jpeg, tag: 91, size: 64 * 1024)
    static let steps = ["spool-after-open", "spool-after-stage", "spool-after-commit", "spool-after-rename", "spool-after-unlink", "spool-after-sync"]

    /// A daemon held at `point` of the intake of `scan.jpg`, dropped
    /// alone, with `scan.json` dropped while it is held and seen waiting.
    static func holdWithSidecar(at point: String) throws -> (DaemonHarness, FaultHold) {
        // No settle time: the receipt alone is taken at once, and never copied early.
        let daemon = DaemonHarness(arguments: ["--spool-settle", "0"], spool: true, directory: TemporaryDirectory(prefix: "race"))
        let hold = try FaultHold(point, on: daemon)
        try daemon.start()
        let staging = daemon.directory.at("staging")
        try SpoolDrop.byRename(receipt, as: FileName("scan.jpg")!, in: daemon.spoolDirectory, staging: staging)
        try hold.waitUntilHeld(daemon)
        try SpoolDrop.byRename(SpoolDrop.sidecar(fields), as: FileName("scan.json")!, in: daemon.spoolDirectory, staging: staging)
        // Seen waiting, or (the race this guards against) taken beside it.
        let waits = "Spool file 'scan.json' waits until its receipt 'scan.jpg', being taken, is queued"
        let takenAlone = "Queued expense from spool file 'scan.json'"
        try waitUntil(timeout: 30, "the sidecar to be seen waiting for its receipt") {
            daemon.log.contains(waits) || daemon.log.contains(takenAlone)
        }
        #expect(!daemon.log.contains(takenAlone), "the sidecar became an expense of its own while its receipt was being taken")
        #expect(daemon.log.contains(waits))
        return (daemon, hold)
    }

    /// The daemon holds one expense: the receipt's, with the sidecar's fields.
    static func expectOneExpense(_ daemon: DaemonHarness) throws {
        try daemon.waitForSpool(expenses: 1, rejected: 0)
        let queued = try daemon.queuedExpenses()
        #expect(queued.count == 1, "one create: \(queued)")
        #expect(queued.map(\.receiptDigest) == [Hex.encode(SHA256.hash(receipt))])
        try waitUntil(timeout: 30, "the sidecar's fields on the expense") {
            let listed = try daemon.ctlJSON(["list"]).arrayValue ?? []
            return listed.count == 1 && listed[0]["merchant"]?.stringValue == fields.merchant && listed[0]["amount"]?.stringValue == fields.amount
                && listed[0]["date"]?.stringValue == fields.date && listed[0]["category"]?.stringValue == fields.category
        }
        #expect(try daemon.ctlJSON(["list"]).arrayValue?.count == 1)
        #expect(!daemon.log.contains("Queued expense from spool file 'scan.json'"), "the sidecar never became an expense of its own")
    }

    @Test(arguments: steps)
    func sidecarArrivingDuringItsReceiptsIntake_isOneExpense(_ point: String) throws {
        let (daemon, hold) = try Self.holdWithSidecar(at: point)
        defer { daemon.stop() }
        try hold.release(daemon)
        try Self.expectOneExpense(daemon)
    }

    @Test(arguments: steps)
    func killedThereWithTheSidecarWaiting_thenRestarted_isOneExpense(_ point: String) throws {
        let (daemon, _) = try Self.holdWithSidecar(at: point)
        daemon.crash()
        daemon.environment["EXPENSED_FAULT"] = nil
        try daemon.start()
        defer { daemon.stop() }
        try Self.expectOneExpense(daemon)
    }
}
