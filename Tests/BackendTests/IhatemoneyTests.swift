import ExpenseCore
import ExpenseTestSupport
import Foundation
import Posix
import Testing

/// expensed against the real ihatemoney 7.2.1 (from the test venv), each
/// test with its own project in the test process's ihatemoney, and its own
/// daemon; the test that restarts ihatemoney starts one of its own.
@Suite struct IhatemoneyTests {
    @Test func add_makesOneBillCarryingTheMarker() throws {
        let h = try IhatemoneyHarness()
        try h.daemon.start()
        let id = try h.add(merchant: "Bakery", amount: "12.50", comment: "bread")
        try h.waitUntilDrained()
        let bills = try h.bills()
        #expect(bills.count == 1)
        let bill = try #require(bills.first)
        #expect(bill.externalLink.hasPrefix("https://expensed.invalid/t/\(id)"))
        #expect(bill.amount == 12.5)
        #expect(bill.date == "2026-11-29")
        #expect(bill.what == "Bakery — bread")
        #expect(bill.payer == "Alice")
        #expect(bill.owers == ["Alice", "Bob", "Carol"])
        #expect(bill.currency == "EUR")
        let shown = try h.show(id)
        #expect(shown["state"] == "synced")
        #expect(shown["amount"] == "12.50")
    }

    @Test func payedFor_namesTheMembers() throws {
        let h = try IhatemoneyHarness(configuration: "ihatemoney_payed_for = Bob, Carol")
        try h.daemon.start()
        try h.add(merchant: "Taxi", amount: "30.00")
        try h.waitUntilDrained()
        #expect(try h.bills().map(\.owers) == [["Bob", "Carol"]])
    }

    @Test func addWithReceipt_keepsTheReceiptLocally() throws {
        let h = try IhatemoneyHarness()
        try h.daemon.start()
        let bytes = SampleReceipt.jpeg(size: 5000, seed: 7)
        let path = h.directory.at("r.jpg")
        SampleReceipt.write(bytes, to: path)
        let id = try h.add(merchant: "Hardware", amount: "40.00", receipt: path)
        try h.waitUntilDrained()
        try h.daemon.waitUntilNoReceiptFiles()
        #expect(try h.bills().count == 1)
        let kept = "\(h.daemon.stateDirectory)/kept-receipts/\(id).jpg"
        #expect(FileManager.default.contents(atPath: kept).map(Array.init) == bytes)
        let shown = try h.show(id)
        #expect(shown["receipt"] == "kept locally", "\(shown.serialized())")
        #expect(shown["receipt_url"]?.stringValue == "file://\(kept)")
        let text = try h.daemon.ctl(["show", id])
        #expect(text.stdout.contains("kept locally"), "\(text.stdout)")
        // Read back through expensectl, checked against the recorded digest.
        let out = h.directory.at("back.jpg")
        let back = try h.daemon.ctlJSON(["receipt", id, "-o", out])
        #expect(back["source"] == "kept locally")
        #expect(FileManager.default.contents(atPath: out).map(Array.init) == bytes)
    }

    /// A kept receipt replaced: the new one is kept and read back, the old
    /// one moved aside, never deleted.
    @Test func editReceipt_replacesTheKeptReceipt_andKeepsTheOldOneAside() throws {
        let h = try IhatemoneyHarness()
        try h.daemon.start()
        let first = SampleReceipt.jpeg(size: 5000, seed: 3)
        let second = SampleReceipt.png(size: 6000)
        SampleReceipt.write(first, to: h.directory.at("a.jpg"))
        SampleReceipt.write(second, to: h.directory.at("b.png"))
        let id = try h.add(merchant: "Hardware", amount: "40.00", receipt: h.directory.at("a.jpg"))
        try h.waitUntilDrained()
        let edited = try h.daemon.ctl(["edit", id, "--receipt", h.directory.at("b.png")])
        #expect(edited.status == 0, "\(edited.stderr)")
        try h.waitUntilDrained()
        try h.daemon.waitUntilNoReceiptFiles()
        let folder = "\(h.daemon.stateDirectory)/kept-receipts"
        #expect(FileManager.default.contents(atPath: "\(folder)/\(id).png").map(Array.init) == second)
        let names = try FileManager.default.contentsOfDirectory(atPath: folder)
        let aside = names.filter { $0.hasPrefix("\(id).replaced-") && $0.hasSuffix(".jpg") }
        #expect(aside.count == 1, "\(names)")
        #expect(aside.first.flatMap { FileManager.default.contents(atPath: "\(folder)/\($0)") }.map(Array.init) == first)
        #expect(try h.bills().count == 1)
        let out = h.directory.at("back.png")
        #expect(try h.daemon.ctlJSON(["receipt", id, "-o", out])["kind"] == "png")
        #expect(FileManager.default.contents(atPath: out).map(Array.init) == second)
    }

    @Test func spoolDrop_becomesABill() throws {
        let h = try IhatemoneyHarness(spool: true)
        try h.daemon.start()
        let stem = "scan-1"
        SampleReceipt.write(Array(#"{"merchant":"Pharmacy","amount":"8.20","currency":"EUR","date":"2026-11-28"}"#.utf8),
                            to: h.directory.at("\(stem).json.tmp"))
        try FileManager.default.moveItem(atPath: h.directory.at("\(stem).json.tmp"), toPath: "\(h.daemon.spoolDirectory)/\(stem).json")
        try waitUntil(timeout: 60, "the spool file to become a bill") { try h.bills().count == 1 }
        try h.waitUntilDrained()
        let bill = try #require(try h.bills().first)
        #expect(bill.what == "Pharmacy")
        #expect(bill.amount == 8.2)
        #expect(bill.date == "2026-11-28")
    }

    /// A receipt and its sidecar dropped into the spool: one bill with the
    /// sidecar's fields, and the receipt kept locally, byte for byte.
    @Test func spoolDropWithReceipt_makesOneBillAndKeepsTheReceipt() throws {
        let h = try IhatemoneyHarness(spool: true)
        try h.daemon.start()
        let bytes = SpoolDrop.receipt(.png, tag: 12, size: 7000)
        let fields = ExpenseFields(merchant: "Pharmacy", amount: "8.20", currency: "EUR", date: "2026-11-28")
        let staging = h.directory.at("staging")
        try SpoolDrop.byRename(SpoolDrop.sidecar(fields), as: FileName("scan-2.json")!, in: h.daemon.spoolDirectory, staging: staging)
        try SpoolDrop.byRename(bytes, as: FileName("scan-2.png")!, in: h.daemon.spoolDirectory, staging: staging)
        try waitUntil(timeout: 60, "the spool drop to be taken") { try h.daemon.list().count == 1 }
        let id = try #require(try h.daemon.list().first?["transaction_id"]?.stringValue)
        try h.waitUntilDrained()
        let bills = try h.bills()
        #expect(bills.count == 1)
        #expect(bills.first?.what == "Pharmacy" && bills.first?.amount == 8.2 && bills.first?.date == "2026-11-28")
        #expect(bills.first?.externalLink.hasPrefix("https://expensed.invalid/t/\(id)") == true)
        let kept = "\(h.daemon.stateDirectory)/kept-receipts/\(id).png"
        #expect(FileManager.default.contents(atPath: kept).map(Array.init) == bytes)
        #expect(try h.show(id)["receipt"] == "kept locally")
    }

    @Test func editThenDelete_changeAndRemoveTheBill() throws {
        let h = try IhatemoneyHarness()
        try h.daemon.start()
        let id = try h.add(merchant: "Cafe", amount: "4.00", comment: "coffee")
        try h.waitUntilDrained()
        let edited = try h.daemon.ctl(["edit", id, "--amount", "5.50", "--comment", "two coffees"])
        #expect(edited.status == 0, "\(edited.stderr)")
        try waitUntil(timeout: 60, "the edit to reach ihatemoney") { try h.bills().first?.amount == 5.5 }
        try h.waitUntilDrained()
        let bill = try #require(try h.bills().first)
        #expect(bill.what == "Cafe — two coffees")
        #expect(bill.externalLink.hasPrefix("https://expensed.invalid/t/\(id)"), "the edit keeps the marker")
        #expect(try h.show(id)["amount"] == "5.50")

        let deleted = try h.daemon.ctl(["delete", id])
        #expect(deleted.status == 0, "\(deleted.stderr)")
        try waitUntil(timeout: 60, "the delete to reach ihatemoney") { try h.bills().isEmpty }
        try h.waitUntilDrained()
        #expect(try h.daemon.list().allSatisfy { $0["transaction_id"]?.stringValue != id || $0["state"] == "deleted" })
    }

    @Test func deleteOfABillAlreadyGone_isDone() throws {
        let h = try IhatemoneyHarness()
        try h.daemon.start()
        let id = try h.add(merchant: "Kiosk", amount: "2.00")
        try h.waitUntilDrained()
        let bill = try #require(try h.bills().first)
        let removed = try h.ihatemoney.request("DELETE", "\(h.project.path)/bills/\(bill.id)", headers: [h.project.basicAuthorization])
        #expect(removed.status == 200)
        #expect(try h.daemon.ctl(["delete", id]).status == 0)
        try h.daemon.waitForQueue("the delete to be done")
        #expect(try h.daemon.ctlJSON(["status"])["needs_attention"] == 0, "already gone counts as done")
        #expect(try h.daemon.list().allSatisfy { $0["transaction_id"]?.stringValue != id })
    }

    @Test func offlineThenOnline_billsArriveOnce() throws {
        let dir = TemporaryDirectory(prefix: "ihm-offline")
        let port = try ServerProcess.unusedPort()
        SampleReceipt.write(Array("household-private-code".utf8), to: dir.at("token"))
        SampleReceipt.write(Array("""
            backend = ihatemoney
            server = http://127.0.0.1:\(port)/api/projects/household
            token_file = \(dir.at("token"))
            ihatemoney_payer = Alice
            """.utf8), to: dir.at("expensed.conf"))
        // The project exists before the daemon first reaches ihatemoney
        // (a missing project is refused credentials, 401).
        try FileManager.default.createDirectory(atPath: dir.at("ihatemoney"), withIntermediateDirectories: true)
        let ihatemoney = try IhatemoneyProcess(directory: dir.at("ihatemoney"), port: port)
        defer { ihatemoney.stop() }
        _ = try ihatemoney.makeProject(members: ["Alice", "Bob"])
        #expect(ihatemoney.stop() != nil, "ihatemoney stopped")
        let daemon = DaemonHarness(arguments: ["--drain-interval", "200ms", "--backoff-base", "50ms", "--backoff-cap", "500ms"], directory: dir)
        try daemon.start()
        defer { daemon.stop() }
        for n in 0..<5 {
            _ = try daemon.ctl(["add", "--merchant", "Shop \(n)", "--amount", "\(n + 1).00", "--currency", "EUR", "--date", "2026-11-29"])
        }
        do {
            try waitUntil(timeout: 20, "the daemon to find ihatemoney unreachable") {
                try daemon.ctlJSON(["status"])["server"] == "unreachable"
            }
        } catch {
            Issue.record("\(error): \(try daemon.ctlJSON(["status"]).serialized()) \(daemon.log.suffix(2000))")
        }
        #expect(try daemon.list().count == 5)
        #expect(try daemon.list().allSatisfy { $0["state"] != "synced" })
        try ihatemoney.restart()
        do {
            try waitUntil(timeout: 60, "the queue to drain") { try daemon.list().allSatisfy { $0["state"] == "synced" } }
        } catch {
            Issue.record("\(error): \(daemon.log.suffix(3000))")
        }
        let bills = try ihatemoney.storedBills()
        #expect(bills.count == 5)
        #expect(Set(bills.map(\.externalLink)).count == 5)
    }

    @Test func refresh_showsABillChangedInIhatemoneyItself() throws {
        let h = try IhatemoneyHarness()
        try h.daemon.start()
        let id = try h.add(merchant: "Market", amount: "10.00")
        try h.waitUntilDrained()
        let bill = try #require(try h.bills().first)
        let members = h.project.members
        var form = FormBody([("date", "2026-11-30"), ("what", "Market — changed on the web"), ("payer", String(members["Bob"]!)),
                             ("amount", "11.25"), ("original_currency", "EUR"), ("external_link", bill.externalLink), ("bill_type", "Expense")])
        form.fields.append(("payed_for", String(members["Alice"]!)))
        let changed = try h.ihatemoney.request("PUT", "\(h.project.path)/bills/\(bill.id)",
                                               headers: [h.project.basicAuthorization, ("Content-Type", "application/x-www-form-urlencoded")],
                                               body: form.bytes)
        #expect(changed.status == 200, "\(changed.text)")
        let sync = try h.daemon.ctl(["sync", "--refresh", "--wait"])
        #expect(sync.status == 0, "\(sync.stderr)")
        try waitUntil(timeout: 30, "the refresh to show the change") { try h.show(id)["amount"] == "11.25" }
        let shown = try h.show(id)
        #expect(shown["date"] == "2026-11-30")
        #expect(shown["comment"] == "changed on the web")
    }
}
