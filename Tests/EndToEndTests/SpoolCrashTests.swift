import Digest
import ExpenseCore
import ExpenseTestSupport
import Foundation
import Posix
import Testing

/// Kill -9 at each step of a spool intake (an armed fault point), restart:
/// exactly one job per dropped file, with its receipt's bytes intact, and
/// nothing left behind.
/// Serialized: twelve crash-and-restart cases of one daemon each; one at a time bounds the load of their restarts.
@Suite(.serialized) struct SpoolCrashTests {
    static let fields = ExpenseFields(merchant: "Crash Café", amount: "41.90", currency: "EUR", date: "2026-04-01", category: "Meals")
    static let receipt = SpoolDrop.receipt(.jpeg, tag: 77, size: 200 * 1024)
    static var digest: String { Hex.encode(SHA256.hash(receipt)) }

    /// The steps after which the jobs have committed.
    static let committed: Set<String> = ["spool-after-commit", "spool-after-rename", "spool-after-unlink", "spool-after-sync"]

    /// Drops a receipt, after its sidecar when `withSidecar`, into a daemon
    /// armed to die at `point`, and waits for it to die there. A receipt
    /// alone is copied while it waits for a sidecar (an early copy); one
    /// whose sidecar came first is copied when taken.
    static func crash(at point: String, withSidecar: Bool = true) throws -> DaemonHarness {
        let daemon = DaemonHarness(arguments: ["--spool-settle", "300ms"], environment: ["EXPENSED_FAULT": point], spool: true)
        try daemon.start()
        let staging = daemon.directory.at("staging")
        try SpoolDrop.byRename((withSidecar ? [(FileName("crash.json")!, SpoolDrop.sidecar(fields))] : []) + [(FileName("crash.jpg")!, receipt)],
                               in: daemon.spoolDirectory, staging: staging)
        guard daemon.process?.waitForExit(timeout: 20) != nil else {
            daemon.crash()
            throw TestFailure("the daemon did not reach \(point)")
        }
        #expect(daemon.process?.termination == .signaled(SIGKILL), "killed by SIGKILL at \(point)")
        #expect(daemon.log.contains("fault point \(point)"))
        daemon.environment["EXPENSED_FAULT"] = nil
        return daemon
    }

    @Test(arguments: ["spool-after-open", "spool-after-stage", "spool-after-commit", "spool-after-rename", "spool-after-unlink", "spool-after-sync"],
          [true, false])
    func crashAtAnIntakeStep_thenRestart_isExactlyOneJob(_ point: String, withSidecar: Bool) throws {
        let daemon = try Self.crash(at: point, withSidecar: withSidecar)
        let files = withSidecar ? ["crash.jpg", "crash.json"] : ["crash.jpg"]
        let committed = Self.committed.contains(point)
        #expect(try daemon.queuedExpenses().count == (committed ? 1 : 0))
        #expect(try QueuedExpense.intakeRecords(stateDirectory: daemon.stateDirectory) == (committed ? files.count : 0),
                "the files' records commit with the job")
        let staged = point == "spool-after-stage" || committed
        #expect(daemon.receiptFiles().count == (staged ? 1 : 0))
        let left = try daemon.spoolEntries().map(\.displayName)
        switch point {
        case "spool-after-rename": #expect(left.count == files.count && left.contains { $0.hasPrefix(".expensed-taken-") }, "\(left)")
        case "spool-after-unlink", "spool-after-sync": #expect(left.isEmpty)
        default: #expect(left == files)
        }

        try daemon.start()
        defer { daemon.stop() }
        try daemon.waitForSpool(expenses: 1, rejected: 0)
        let queued = try daemon.queuedExpenses()
        #expect(queued.map(\.fields) == [withSidecar ? Self.fields : ExpenseFields()])
        #expect(queued.map(\.receiptDigest) == [Self.digest], "the receipt's bytes, intact")
        #expect(daemon.receiptFiles().count == 1, "no orphan copy")
        try waitUntil(timeout: 10, "the intake records to be forgotten") {
            try QueuedExpense.intakeRecords(stateDirectory: daemon.stateDirectory) == 0
        }
        if ["spool-after-commit", "spool-after-rename"].contains(point) {
            #expect(daemon.log.contains("Removed spool file 'crash.jpg', queued before the daemon stopped"))
        }
    }

    @Test func crashAfterTheCommit_thenANewFileUnderTheSameName_theNewFileIsTakenToo() throws {
        let daemon = try Self.crash(at: "spool-after-commit")
        // A writer drops a new receipt under the same name before the restart.
        let second = SpoolDrop.receipt(.jpeg, tag: 78)
        try SpoolDrop.byRename(second, as: FileName("crash.jpg")!, in: daemon.spoolDirectory, staging: daemon.directory.at("staging"))
        try daemon.start()
        defer { daemon.stop() }
        try daemon.waitForSpool(expenses: 2, rejected: 0)
        let digests = try daemon.queuedExpenses().map(\.receiptDigest)
        #expect(Set(digests) == [Self.digest, Hex.encode(SHA256.hash(second))], "the first once, the new one once")
    }

    @Test func crashAfterTheCommit_thenTheFileRenamedInTheSpool_isTakenAgain_neverLost() throws {
        let daemon = try Self.crash(at: "spool-after-commit")
        // Its writer renames the taken file before the restart: the same
        // inode and bytes under a new name, and a new change time. Nothing
        // the daemon recorded tells it from a new file with the same bytes
        // that got the inode back, so it is taken: twice, rather than lost.
        #expect(rename("\(daemon.spoolDirectory)/crash.jpg", "\(daemon.spoolDirectory)/crash-0001.jpg") == 0)
        try daemon.start()
        defer { daemon.stop() }
        try daemon.waitForSpool(expenses: 2, rejected: 0)
        #expect(try daemon.queuedExpenses().map(\.receiptDigest) == [Self.digest, Self.digest])
        try waitUntil(timeout: 10, "the intake records to be forgotten") {
            try QueuedExpense.intakeRecords(stateDirectory: daemon.stateDirectory) == 0
        }
    }
}

