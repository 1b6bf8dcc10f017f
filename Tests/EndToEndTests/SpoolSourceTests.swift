import Digest
import ExpenseCore
import ExpenseTestSupport
import Foundation
import Posix
import Testing

/// Where an expense came from (a spool drop, a pair, `add --receipt`), and
/// a sidecar that comes after its receipt: through the real daemon, the
/// real server, and kill -9 at the late sidecar's steps.
/// Serialized: its kill -9 cases restart one daemon each at the late sidecar's steps; one at a time bounds the load of their restarts.
@Suite(.serialized) struct SpoolSourceTests {
    static let fields = ExpenseFields(merchant: "Late Café", amount: "7.40", currency: "EUR", date: "2026-05-02", taxTag: "VAT-10")
    static let byteOrderMark: [UInt8] = [0xEF, 0xBB, 0xBF]

    static func drop(_ bytes: [UInt8], _ name: String, into daemon: DaemonHarness) throws {
        try SpoolDrop.byRename(bytes, as: FileName(name)!, in: daemon.spoolDirectory, staging: daemon.directory.at("staging"))
    }

    /// The expense of `list --json` whose source is named `name`.
    static func expense(from name: String, in list: JSONValue) throws -> JSONValue {
        try #require(list.arrayValue?.first { $0["source"]?["name"]?.stringValue == name }, "no expense from \(name): \(list.serialized())")
    }

    @Test func sources_ofADropAPairAndAnAdd_areShownByShowListAndJSON_andKeptOnceSynced() throws {
        let sync = try SyncHarness(daemonArguments: ["--spool-settle", "100ms"], spool: true)
        let daemon = sync.daemon
        try daemon.start()
        defer { daemon.stop() }
        let before = Clock.wallMilliseconds
        // A name with a newline: shown escaped, never as two lines.
        try Self.drop(SpoolDrop.receipt(.jpeg, tag: 1), "scan\n1.jpg", into: daemon)
        // A pair whose sidecar starts with a byte-order mark and has a tax tag.
        try SpoolDrop.byRename([(FileName("pair.json")!, Self.byteOrderMark + SpoolDrop.sidecar(Self.fields)),
                                (FileName("pair.png")!, SpoolDrop.receipt(.png, tag: 2))],
                               in: daemon.spoolDirectory, staging: daemon.directory.at("staging"))
        try waitUntil(timeout: 30, "both drops on the server") { try daemon.spoolEntries().isEmpty && sync.serverRecords().count == 2 }
        let after = Clock.wallMilliseconds
        let path = daemon.directory.at("r.jpg")
        SampleReceipt.write(SampleReceipt.jpeg(), to: path)
        let added = try daemon.ctl(["add", "--receipt", path])
        #expect(added.status == 0, "\(added.stderr)")
        try sync.waitUntilDrained()

        let list = try daemon.ctlJSON(["list"])
        #expect(list.arrayValue?.count == 3)
        #expect(list.arrayValue?.allSatisfy { $0["state"] == "synced" } == true, "kept once synced: \(list.serialized())")
        let scan = try Self.expense(from: #"scan\x0a1.jpg"#, in: list)
        #expect(scan["source"]?["kind"] == "spool" && scan["source"]?["sidecar"] == .null)
        let dropped = try #require(scan["source"]?["dropped_at"]?.stringValue.flatMap(Timestamp.parse))
        #expect(dropped >= before - 1000 && dropped <= after, "when it was renamed into the spool")
        let pair = try Self.expense(from: "pair.png", in: list)
        #expect(pair["source"]?["sidecar"] == "pair.json")
        #expect(pair["merchant"] == "Late Café" && pair["tax_tag"] == "VAT-10", "the BOM sidecar's fields, tax_tag too, on the server")
        let file = try Self.expense(from: path, in: list)
        #expect(file["source"]?["kind"] == "file" && file["source"]?["dropped_at"] == .null)

        let shown = try daemon.ctl(["show", try #require(scan["transaction_id"]?.stringValue)])
        #expect(shown.stdout.contains(#"Source:          spool file scan\x0a1.jpg, dropped "#), "\(shown.stdout)")
        let shownPair = try daemon.ctl(["show", try #require(pair["transaction_id"]?.stringValue)])
        #expect(shownPair.stdout.contains("Source:          spool file pair.png with sidecar pair.json, dropped "), "\(shownPair.stdout)")
        let shownFile = try daemon.ctl(["show", try #require(file["transaction_id"]?.stringValue)])
        #expect(shownFile.stdout.contains("Source:          receipt file \(path)\n"), "\(shownFile.stdout)")
        // A receipt-only scan is told apart in the table by its name; one with a merchant shows the merchant.
        let table = try daemon.ctl(["list"]).stdout
        #expect(table.contains(#"[scan\x0a1.jpg]"#) && table.contains("[r.jpg]") == false && table.contains("[\(path)]"), "\(table)")
        #expect(table.contains("Late Café") && !table.contains("[pair.png]"), "\(table)")
        // The log line that queued each names its source.
        #expect(daemon.log.contains("Queued expense with receipt '\(path)'"), "\(daemon.log)")
        #expect(daemon.log.contains(#"Queued expense from spool file 'scan\x0a1.jpg'"#))
    }

    @Test func lateSidecar_withinTheWindow_fillsInTheSyncedExpenseOfItsReceipt_throughTheOutbox() throws {
        let sync = try SyncHarness(daemonArguments: ["--spool-settle", "100ms"], spool: true)
        let daemon = sync.daemon
        try daemon.start()
        defer { daemon.stop() }
        let receipt = SpoolDrop.receipt(.jpeg, tag: 3)
        try Self.drop(receipt, "late.jpg", into: daemon)
        try waitUntil(timeout: 30, "the receipt-only expense on the server") { try sync.serverRecords().count == 1 }
        try sync.waitUntilDrained()
        #expect(try sync.serverRecords().first?.merchant == nil)

        try Self.drop(Self.byteOrderMark + SpoolDrop.sidecar(Self.fields), "late.json", into: daemon)
        try waitUntil(timeout: 30, "the late sidecar's fields on the server") { try sync.serverRecords().first?.merchant == "Late Café" }
        try sync.waitUntilDrained()
        let records = try sync.serverRecords()
        #expect(records.count == 1, "one expense, not two")
        #expect(records.first?.receiptDigest == Hex.encode(SHA256.hash(receipt)))
        // The intake removes the sidecar and forgets its record after the
        // commit that the drain may already have sent.
        try waitUntil(timeout: 10, "the sidecar to be removed and its intake record forgotten") {
            try daemon.spoolEntries().isEmpty && QueuedExpense.intakeRecords(stateDirectory: daemon.stateDirectory) == 0
        }
        #expect(try daemon.rejectedEntries().isEmpty)
        let list = try daemon.ctlJSON(["list"])
        let expense = try Self.expense(from: "late.jpg", in: list)
        #expect(expense["amount"] == "7.40" && expense["tax_tag"] == "VAT-10" && expense["version"] == 3, "create, receipt, then the edit: \(expense.serialized())")
        #expect(expense["source"]?["sidecar"] == "late.json")
        #expect(daemon.log.contains("Queued an edit of merchant, amount, currency, date, tax_tag from late sidecar 'late.json' of spool file 'late.jpg'"),
                "\(daemon.log)")
    }

    @Test func lateSidecar_fillsOnlyFieldsStillEmpty_andOneThatWouldChangeNothingIsRejected() throws {
        let daemon = DaemonHarness(arguments: ["--spool-settle", "100ms"], spool: true)
        try daemon.start()
        defer { daemon.stop() }
        try Self.drop(SpoolDrop.receipt(.pdf, tag: 4), "typed.pdf", into: daemon)
        try daemon.waitForSpool(expenses: 1, rejected: 0)
        let id = try #require(daemon.queuedExpenses().first?.transactionID)
        // Typed by a person before the sidecar came: kept.
        #expect(try daemon.ctl(["edit", id, "--merchant", "Typed Shop", "--amount", "9", "--currency", "USD"]).status == 0)
        try Self.drop(SpoolDrop.sidecar(Self.fields), "typed.json", into: daemon)
        try daemon.waitForSpool(expenses: 1, rejected: 0)
        #expect(try daemon.queuedExpenses().map(\.fields) == [
            ExpenseFields(merchant: "Typed Shop", amount: "9.00", currency: "USD", date: "2026-05-02", taxTag: "VAT-10"),
        ])
        #expect(daemon.log.contains("Queued an edit of date, tax_tag from late sidecar 'typed.json' of spool file 'typed.pdf'; merchant, amount, currency kept as the expense had them"),
                "\(daemon.log)")

        // Its source names the sidecar now: another of the same name is an
        // expense of its own (here refused: it lacks what one needs).
        try Self.drop(SpoolDrop.sidecar(ExpenseFields(comment: "again")), "typed.json", into: daemon)
        try daemon.waitForSpool(expenses: 1, rejected: 1)
        #expect(try daemon.rejectionReason(FileName("typed.json")!).contains("reason: sidecar field merchant: required for an expense without a receipt"))

        // A receipt alone whose expense then got every field the sidecar sets: nothing to fill.
        try Self.drop(SpoolDrop.receipt(.pdf, tag: 5), "full.pdf", into: daemon)
        try daemon.waitForSpool(expenses: 2, rejected: 1)
        let full = try #require(daemon.queuedExpenses().last?.transactionID)
        #expect(try daemon.ctl(["edit", full, "--merchant", "M", "--amount", "1.00", "--currency", "EUR", "--date", "2026-01-01", "--tax-tag", "T"]).status == 0)
        try Self.drop(SpoolDrop.sidecar(Self.fields), "full.json", into: daemon)
        try daemon.waitForSpool(expenses: 2, rejected: 2)
        #expect(try daemon.rejectionReason(FileName("full.json")!).contains(
            "reason: is a late sidecar of 'full.pdf' (\(full)), whose fields it sets are all set already (merchant, amount, currency, date, tax_tag)"))
        #expect(try daemon.queuedExpenses().last?.fields.merchant == "M")
    }

    @Test func lateSidecar_thatIsNotJSON_isRejectedWithItsReason_andTheExpenseIsUntouched() throws {
        let daemon = DaemonHarness(arguments: ["--spool-settle", "100ms"], spool: true)
        try daemon.start()
        defer { daemon.stop() }
        try Self.drop(SpoolDrop.receipt(.jpeg, tag: 6), "bad.jpg", into: daemon)
        try daemon.waitForSpool(expenses: 1, rejected: 0)
        try Self.drop(Array(#"{"merchant": "Half"#.utf8), "bad.json", into: daemon)
        try daemon.waitForSpool(expenses: 1, rejected: 1)
        #expect(try daemon.rejectionReason(FileName("bad.json")!).contains("reason: sidecar is not valid JSON"))
        #expect(try daemon.queuedExpenses().map(\.fields) == [ExpenseFields()])
    }

    @Test func lateSidecar_afterTheWindow_isAnExpenseOfItsOwn() throws {
        let window = 400.0
        let daemon = DaemonHarness(arguments: ["--spool-settle", "100ms", "--spool-sidecar-window", "\(Int(window))ms"], spool: true)
        try daemon.start()
        defer { daemon.stop() }
        let receipt = SpoolDrop.receipt(.jpeg, tag: 7)
        try Self.drop(receipt, "slow.jpg", into: daemon)
        try daemon.waitForSpool(expenses: 1, rejected: 0)
        // The window is a lower bound of time, not a guess at speed: past it, whatever the machine's load.
        Thread.sleep(forTimeInterval: window * 2 / 1000)
        try Self.drop(SpoolDrop.sidecar(Self.fields), "slow.json", into: daemon)
        try daemon.waitForSpool(expenses: 2, rejected: 0)
        let queued = try daemon.queuedExpenses()
        #expect(queued.map(\.fields) == [ExpenseFields(), Self.fields])
        #expect(queued.map(\.receiptDigest) == [Hex.encode(SHA256.hash(receipt)), nil])
    }

    @Test(arguments: ["spool-before-late-edit", "spool-after-late-edit"])
    func killedAtALateSidecarsStep_thenRestarted_isOneExpenseWithItsFields(_ point: String) throws {
        let daemon = DaemonHarness(arguments: ["--spool-settle", "100ms"], environment: ["EXPENSED_FAULT": point], spool: true)
        try daemon.start()
        let receipt = SpoolDrop.receipt(.jpeg, tag: 8, size: 100 * 1024)
        try Self.drop(receipt, "crash.jpg", into: daemon)
        try daemon.waitForSpool(expenses: 1, rejected: 0)
        try Self.drop(SpoolDrop.sidecar(Self.fields), "crash.json", into: daemon)
        guard daemon.process?.waitForExit(timeout: 20) != nil else {
            daemon.crash()
            throw TestFailure("the daemon did not reach \(point)")
        }
        #expect(daemon.process?.termination == .signaled(SIGKILL), "killed by SIGKILL at \(point)")
        #expect(daemon.log.contains("fault point \(point)"))
        let committed = point == "spool-after-late-edit"
        #expect(try daemon.queuedExpenses().map(\.fields) == [committed ? Self.fields : ExpenseFields()])
        #expect(try QueuedExpense.intakeRecords(stateDirectory: daemon.stateDirectory) == (committed ? 1 : 0),
                "the sidecar's row commits with the edit")
        #expect(try daemon.spoolEntries().map(\.displayName) == ["crash.json"])

        daemon.environment["EXPENSED_FAULT"] = nil
        try daemon.start()
        defer { daemon.stop() }
        try daemon.waitForSpool(expenses: 1, rejected: 0)
        let queued = try daemon.queuedExpenses()
        #expect(queued.map(\.fields) == [Self.fields], "the fields, once")
        #expect(queued.map(\.receiptDigest) == [Hex.encode(SHA256.hash(receipt))])
        try waitUntil(timeout: 10, "the intake records to be forgotten") {
            try QueuedExpense.intakeRecords(stateDirectory: daemon.stateDirectory) == 0
        }
        if committed {
            #expect(daemon.log.contains("Removed spool file 'crash.json', queued before the daemon stopped"), "\(daemon.log)")
        } else {
            #expect(daemon.log.contains("Queued an edit of merchant, amount, currency, date, tax_tag from late sidecar 'crash.json'"))
        }
        let list = try daemon.ctlJSON(["list"])
        #expect(list.arrayValue?.count == 1)
        #expect(try Self.expense(from: "crash.jpg", in: list)["source"]?["sidecar"] == "crash.json")
    }
}
