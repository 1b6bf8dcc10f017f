import ExpenseCore
import ExpenseTestSupport
import Foundation
import Posix
import Testing

/// Ten scans dropped in as a new user would (five by `add --receipt`, five
/// into the spool), against the real ihatemoney and the real fava: each is
/// held as incomplete (no `0` bill, no refusal), counted in `status`,
/// listed by `list --incomplete`, kept across a restart, and sent once an
/// edit completes it; and against expense-server, all ten go as before
/// (docs/sync.md, "Incomplete expenses").
/// Serialized: each test runs a Python backend and a daemon.
@Suite(.serialized) struct IncompleteExpenseTests {
    /// The journal's line for each expense held.
    static let heldLine = "Expense held as incomplete: "

    /// Adds five receipt-only expenses with `add --receipt` and drops five
    /// receipts alone into the spool, each with bytes of its own.
    /// - Returns: the ten transaction ids.
    static func dropTenScans(_ daemon: DaemonHarness, _ directory: TemporaryDirectory) throws -> Set<String> {
        var ids: Set<String> = []
        for n in 0..<5 {
            let path = directory.at("scan-\(n).jpg")
            SampleReceipt.write(SampleReceipt.jpeg(size: 3000 + n * 100, seed: UInt8(40 + n)), to: path)
            let added = try daemon.ctlJSON(["add", "--receipt", path])
            ids.insert(try #require(added["transaction_id"]?.stringValue))
        }
        let staging = directory.at("staging")
        try FileManager.default.createDirectory(atPath: staging, withIntermediateDirectories: true)
        for n in 0..<5 {
            try SpoolDrop.byRename(SpoolDrop.receipt(.jpeg, tag: 60 + n, size: 5000), as: FileName("drop-\(n).jpg")!, in: daemon.spoolDirectory,
                                   staging: staging)
        }
        try waitUntil(timeout: 60, "the five spool drops to be queued") { try daemon.list().count == 10 }
        return Set(try daemon.list().compactMap { $0["transaction_id"]?.stringValue })
    }

    /// How many times the journal said an expense is held, in this run of the daemon.
    static func toldHeld(_ daemon: DaemonHarness) -> Int {
        daemon.log.components(separatedBy: "\n").filter { $0.contains(heldLine) }.count
    }

    /// Waits until `count` expenses are held, each told of in the journal
    /// (the pass that held them has ended), and nothing else is pending.
    static func waitUntilHeld(_ daemon: DaemonHarness, _ count: Int, told: Int) throws {
        try waitUntil(timeout: 90, "\(count) incomplete expenses held and nothing else pending") {
            let status = try daemon.ctlJSON(["status"])
            return status["incomplete"] == .integer(Int64(count)) && status["sending"] == 0 && status["queued"] == status["incomplete_jobs"]
                && toldHeld(daemon) == told
        }
    }

    /// The part of the journey every backend that needs fields shares.
    /// - Parameters:
    ///   - stored: the transaction ids the backend holds records of now.
    ///   - checkArrived: checks the record of the completed expense.
    static func journey(_ daemon: DaemonHarness, _ directory: TemporaryDirectory, missing: [String], rule: String,
                        stored: () throws -> [String], checkArrived: (String) throws -> Void) throws {
        try daemon.start()
        defer { daemon.stop() }
        let ids = try dropTenScans(daemon, directory)
        try waitUntilHeld(daemon, 10, told: 10)
        #expect(try stored().isEmpty, "nothing reached the backend: no 0 bill, no refusal")
        let told = daemon.log.components(separatedBy: "\n").filter { $0.contains(heldLine) }
        #expect(ids.allSatisfy { id in told.filter { $0.contains("'expensectl edit \(id)'") }.count == 1 }, "once per expense: \(told)")
        #expect(told.allSatisfy { $0.contains("\(rule.replacing("an expense", with: "it")); nothing is sent until an edit gives it \(RequiredFields.phrase(missing))") },
                "\(told)")
        let status = try daemon.ctlJSON(["status"])
        #expect(status["incomplete_rule"]?.stringValue == rule)
        #expect(status["needs_attention"] == 0)
        #expect(status["line"]?.stringValue?.contains("; 10 incomplete") == true, "\(status)")
        let human = try daemon.ctl(["status"])
        #expect(human.stdout.contains("Incomplete:       10 held: \(rule); 'expensectl list --incomplete' lists them"), "\(human.stdout)")
        let waited = try daemon.ctl(["sync", "--wait", "--timeout", "60s"])
        #expect(waited.status == 0 && waited.stdout.contains("Done; 10 incomplete, held until an edit gives them what the backend needs"),
                "\(waited.stdout) \(waited.stderr)")

        // list --incomplete lists them, each with what it lacks.
        let listed = try daemon.ctlJSON(["list", "--incomplete"]).arrayValue ?? []
        #expect(Set(listed.compactMap { $0["transaction_id"]?.stringValue }) == ids)
        #expect(listed.allSatisfy { $0["missing"] == .array(missing.map(JSONValue.string)) && $0["state"] == "queued" }, "\(listed)")
        let table = try daemon.ctl(["list", "--incomplete"])
        #expect(table.status == 0 && table.stdout.split(separator: "\n").dropFirst().count == 10)
        #expect(table.stdout.split(separator: "\n").dropFirst().allSatisfy { $0.contains(" incomplete ") }, "\(table.stdout)")
        let one = try #require(ids.sorted().first)
        #expect(try daemon.ctl(["show", one]).stdout.contains("State:           incomplete: held until it has \(RequiredFields.phrase(missing))"))
        for (arguments, message) in [
            (["list", "--incomplete", "yes"], "unexpected argument"),
            (["list", "--incomplete=yes"], "--incomplete"),
            (["list", "--incomplete", "--state", "incomplete"], "unknown state 'incomplete'"),
            (["list", "--incomplete", "--ids", "--totals"], "--ids prints transaction ids alone"),
            (["list", "--incomplete", "--limit", "0"], "limit"),
        ] {
            let refused = try daemon.ctl(arguments)
            #expect(refused.status == 64, "\(arguments): \(refused.status) \(refused.stderr)")
            #expect(refused.stderr.contains(message), "\(arguments): \(refused.stderr)")
        }
        let request = try daemon.request(["op": "list", "incomplete": "yes", "id": 9])
        #expect(request["error"]?["code"] == "invalid_field", "\(request)")

        // A restart keeps them held, and told of once more.
        daemon.stop()
        try daemon.start()
        try waitUntilHeld(daemon, 10, told: 10)
        #expect(try stored().isEmpty)
        #expect(try daemon.list().count == 10, "nothing lost")

        // An amount alone does not complete it: still held, saying what it lacks.
        let passes = daemon.passesEnded
        let partial = try daemon.ctlJSON(["edit", one, "--amount", "12.50", "--currency", "EUR"])
        #expect(partial["missing"] == ["date"], "\(partial)")
        try daemon.waitForPasses(after: passes, count: 1)
        #expect(try stored().isEmpty)
        #expect(try daemon.ctlJSON(["status"])["incomplete"] == 10)

        // The date completes it: exactly that one arrives, once, with those fields.
        let edited = try daemon.ctl(["edit", one, "--date", "2026-11-28"])
        #expect(edited.status == 0, "\(edited.stderr)")
        try waitUntil(timeout: 60, "the completed expense to reach the backend") { try stored() == [one] }
        try checkArrived(one)
        try waitUntilHeld(daemon, 9, told: 10)
        #expect(try stored() == [one], "sent once, and nothing else")

        // A delete of one still held ends it here; nothing is sent.
        let other = try #require(ids.subtracting([one]).sorted().first)
        let deleted = try daemon.ctlJSON(["delete", other])
        #expect(deleted["sent_nothing"] == true, "\(deleted)")
        try waitUntilHeld(daemon, 8, told: 10)
        #expect(try stored() == [one])
        #expect(try daemon.ctlJSON(["show", one])["missing"] == [])
    }

    @Test func ihatemoney_holdsTenScans_andBillsOnlyTheOneCompleted() throws {
        let h = try IhatemoneyHarness(environment: ["EXPENSED_DEBUG": "1"], spool: true)
        try Self.journey(h.daemon, h.directory, missing: ["amount", "date"], rule: "ihatemoney needs an amount and a date to create an expense",
                         stored: { try h.bills().compactMap { bill in Self.transactionID(ofLink: bill.externalLink) } }) { id in
            let bill = try #require(try h.bills(for: id).first)
            #expect(bill.amount == 12.5 && bill.date == "2026-11-28" && bill.currency == "EUR", "\(bill)")
        }
    }

    @Test func fava_holdsTenScans_andWritesOnlyTheOneCompleted() throws {
        let h = try FavaHarness(environment: ["EXPENSED_DEBUG": "1"], spool: true)
        try Self.journey(h.daemon, h.directory, missing: ["amount", "currency", "date"],
                         rule: "fava needs an amount, a currency and a date to create an expense",
                         stored: { try h.fava.loadLedger().transactions.compactMap { $0.meta["transaction_id"] } }) { id in
            let ledger = try h.fava.loadLedger()
            #expect(ledger.errors.isEmpty, "\(ledger.errors)")
            let entry = try #require(ledger.transactions(linked: id).first)
            #expect(entry.date == "2026-11-28")
            #expect(entry.postings.contains { $0.number == "12.50" && $0.currency == "EUR" }, "\(entry.postings)")
        }
    }

    /// A sidecar that comes late for a receipt taken alone completes it as
    /// an edit would: the held scan becomes one bill with the sidecar's fields.
    @Test func ihatemoney_aLateSidecarCompletesAHeldScan() throws {
        let h = try IhatemoneyHarness(spool: true)
        try h.daemon.start()
        defer { h.daemon.stop() }
        let staging = h.directory.at("staging")
        try FileManager.default.createDirectory(atPath: staging, withIntermediateDirectories: true)
        try SpoolDrop.byRename(SpoolDrop.receipt(.png, tag: 70, size: 6000), as: FileName("late-1.png")!, in: h.daemon.spoolDirectory, staging: staging)
        try Self.waitUntilHeld(h.daemon, 1, told: 1)
        #expect(try h.bills().isEmpty)
        let id = try #require(try h.daemon.list().first?["transaction_id"]?.stringValue)
        let fields = ExpenseFields(merchant: "Pharmacy", amount: "8.20", currency: "EUR", date: "2026-11-27")
        try SpoolDrop.byRename(SpoolDrop.sidecar(fields), as: FileName("late-1.json")!, in: h.daemon.spoolDirectory, staging: staging)
        try waitUntil(timeout: 60, "the completed scan to become a bill") { try h.bills().count == 1 }
        let bill = try #require(try h.bills(for: id).first)
        #expect(bill.amount == 8.2 && bill.date == "2026-11-27" && bill.what == "Pharmacy", "\(bill)")
        try waitUntil(timeout: 60, "nothing held or pending") {
            let status = try h.daemon.ctlJSON(["status"])
            return status["incomplete"] == 0 && status["queued"] == 0 && status["sending"] == 0
        }
        #expect(try h.bills().count == 1)
    }

    /// expense-server takes a receipt alone: all ten go as before, nothing
    /// is held or counted as incomplete.
    @Test func expenseServer_takesTheTenScansAsTheyAre() throws {
        let sync = try SyncHarness(spool: true)
        try sync.daemon.start()
        defer { sync.daemon.stop() }
        let ids = try Self.dropTenScans(sync.daemon, sync.daemon.directory)
        try sync.waitUntilDrained()
        #expect(Set(try sync.serverRecords().map(\.transactionID)) == ids)
        let status = try sync.daemon.ctlJSON(["status"])
        #expect(status["incomplete"] == 0 && status["incomplete_jobs"] == 0 && status["incomplete_rule"] == .null, "\(status)")
        #expect(!(try sync.daemon.ctl(["status"]).stdout.contains("Incomplete:")))
        #expect(Self.toldHeld(sync.daemon) == 0)
        // Still incomplete in the listing's sense (no merchant, amount or
        // date), but none held.
        let listed = try sync.daemon.ctlJSON(["list", "--incomplete"]).arrayValue ?? []
        #expect(listed.count == 10 && listed.allSatisfy { $0["missing"] == [] && $0["state"] == "synced" }, "\(listed)")
    }

    /// The transaction id in a bill's marker (`https://expensed.invalid/t/<id>?client_id=…`).
    static func transactionID(ofLink link: String) -> String? {
        guard let range = link.range(of: "/t/") else { return nil }
        return String(link[range.upperBound...].prefix { $0 != "?" })
    }
}
