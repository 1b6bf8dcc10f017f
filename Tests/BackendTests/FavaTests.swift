import Digest
import ExpenseCore
import ExpenseTestSupport
import Foundation
import Posix
import Testing

/// A real fava with a ledger of its own, optionally behind a fault proxy,
/// and an expensed sending to it.
final class FavaHarness: @unchecked Sendable {
    let directory = TemporaryDirectory(prefix: "fava")
    let fava: FavaProcess
    let proxy: FaultProxy?
    let daemon: DaemonHarness

    init(odds: FaultProxy.Odds? = nil, environment: [String: String] = [:], spool: Bool = false, daemonArguments: [String] = [],
         ledger: FavaProcess.Ledger = FavaProcess.Ledger()) throws {
        try FileManager.default.createDirectory(atPath: directory.at("fava"), withIntermediateDirectories: true)
        let fava = try FavaProcess(directory: directory.at("fava"), ledger: ledger)
        let proxy = try odds.map { try FaultProxy(backendPort: fava.port, odds: $0, seed: 17) }
        self.fava = fava
        self.proxy = proxy
        let base = (proxy?.baseURL ?? "http://127.0.0.1:\(fava.port)") + "/\(fava.slug)"
        SampleReceipt.write(Array("""
            backend = fava
            server = \(base)
            fava_expense_account = Expenses:{category}
            fava_funding_account = Assets:Cash
            """.utf8), to: directory.at("expensed.conf"))
        daemon = DaemonHarness(arguments: ["--drain-interval", "200ms", "--backoff-base", "50ms", "--backoff-cap", "500ms", "--request-timeout", "30s"]
                                   + daemonArguments, environment: environment, spool: spool, directory: directory)
    }

    deinit {
        daemon.stop()
        proxy?.stop()
        fava.stop()
    }

    /// A harness whose daemon died once fava answered a create, before it
    /// recorded the answer (`after-response:kill`), with the entry committed
    /// in the ledger; its next start runs without the fault.
    /// - Returns: the harness and the create's transaction id.
    static func crashedWithACreateInFlight() throws -> (FavaHarness, String) {
        let h = try FavaHarness(environment: ["EXPENSED_FAULT": "after-response:kill"], daemonArguments: IhatemoneyHarness.shortRequests)
        try h.daemon.start()
        // The drainer is woken before the add is answered: the daemon may
        // die at the fault point first, and the add's answer with it.
        let clientID = ClientID.make()
        let id = TransactionID.derive(from: clientID)
        _ = try? h.add(merchant: "Garage", amount: "99.00", clientID: clientID)
        let crashed = try #require(h.daemon.process)
        #expect(crashed.waitForExit(timeout: 60) != nil, "the daemon died at the fault point")
        #expect(try h.fava.loadLedger().transactions(linked: id).count == 1, "fava committed before the crash")
        h.daemon.environment = [:]
        return (h, id)
    }

    /// Adds an expense with `expensectl add`; returns its transaction id.
    @discardableResult
    func add(merchant: String, amount: String, category: String = "Meals", comment: String? = nil, receipt: String? = nil,
             clientID: String? = nil) throws -> String {
        var arguments = ["add", "--merchant", merchant, "--amount", amount, "--currency", "EUR", "--date", "2026-11-29", "--category", category, "--json"]
        if let clientID { arguments += ["--client-id", clientID] }
        if let comment { arguments += ["--comment", comment] }
        if let receipt { arguments += ["--receipt", receipt] }
        let result = try daemon.ctl(arguments)
        guard result.status == 0, let id = (try? JSONValue.parse(Array(result.stdout.utf8)))?["transaction_id"]?.stringValue else {
            throw TestFailure("add failed (\(result.status)): \(result.stdout) \(result.stderr)")
        }
        return id
    }

    func waitUntilDrained(timeout: Double = 60) throws {
        try daemon.waitForQueue(timeout: timeout, "the daemon to drain into fava")
    }
}

/// expensed against the real fava 1.30.16 and beancount 3.2.3 (from the
/// test venv); the verdict is beancount's own loader reading the ledger.
@Suite struct FavaTests {
    @Test func add_makesOneTransactionWithItsLinkAndMetadata() throws {
        let h = try FavaHarness()
        try h.daemon.start()
        let id = try h.add(merchant: "Bakery", amount: "12.50", category: "travel", comment: "bread")
        try h.waitUntilDrained()
        let ledger = try h.fava.loadLedger()
        #expect(ledger.errors.isEmpty, "\(ledger.errors)")
        let entries = ledger.transactions(linked: id)
        #expect(entries.count == 1)
        let entry = try #require(entries.first)
        #expect(entry.meta["transaction_id"] == id)
        #expect(entry.meta["client_id"]?.count == 36)
        #expect(entry.payee == "Bakery" && entry.narration == "bread" && entry.date == "2026-11-29")
        #expect(entry.postings.map(\.account) == ["Expenses:Travel", "Assets:Cash"])
        #expect(entry.postings.first?.number == "12.50")
        #expect(try h.daemon.ctlJSON(["show", id])["state"] == "synced")
    }

    @Test func addWithReceipt_uploadsADocumentLinkedToTheEntry() throws {
        let h = try FavaHarness()
        try h.daemon.start()
        let bytes = SampleReceipt.jpeg(size: 6000, seed: 3)
        SampleReceipt.write(bytes, to: h.directory.at("r.jpg"))
        let id = try h.add(merchant: "Hardware", amount: "40.00", receipt: h.directory.at("r.jpg"))
        try h.waitUntilDrained()
        let ledger = try h.fava.loadLedger()
        #expect(ledger.errors.isEmpty, "\(ledger.errors)")
        let documents = ledger.documentEntries.filter { $0.filename.contains(id) }
        let shown = try h.daemon.ctlJSON(["show", id])
        #expect(documents.count == 1, "\(shown.serialized()) \(h.daemon.log.suffix(1500))")
        #expect(documents.first?.sha256 == Hex.encode(SHA256.hash(bytes)))
        #expect(ledger.transactions(linked: id).first?.meta["document"]?.contains(id) == true, "the entry links the document")
    }

    /// A receipt and its sidecar dropped into the spool (the sidecar
    /// renamed in first, as docs/spool.md says): one transaction with the
    /// sidecar's fields, and the receipt as its document, byte for byte.
    @Test func spoolDrop_makesOneEntryWithItsDocument() throws {
        let h = try FavaHarness(spool: true)
        try h.daemon.start()
        let bytes = SpoolDrop.receipt(.jpeg, tag: 11, size: 9000)
        let fields = ExpenseFields(merchant: "Pharmacy", amount: "8.20", currency: "EUR", date: "2026-11-28", category: "travel")
        let staging = h.directory.at("staging")
        try SpoolDrop.byRename(SpoolDrop.sidecar(fields), as: FileName("scan-1.json")!, in: h.daemon.spoolDirectory, staging: staging)
        try SpoolDrop.byRename(bytes, as: FileName("scan-1.jpg")!, in: h.daemon.spoolDirectory, staging: staging)
        try waitUntil(timeout: 60, "the spool drop to be taken") { try h.daemon.list().count == 1 }
        let id = try #require(try h.daemon.list().first?["transaction_id"]?.stringValue)
        try h.waitUntilDrained()
        let ledger = try h.fava.loadLedger()
        #expect(ledger.errors.isEmpty, "\(ledger.errors)")
        #expect(ledger.transactions.count == 1)
        let entry = try #require(ledger.transactions(linked: id).first)
        #expect(entry.payee == "Pharmacy" && entry.date == "2026-11-28" && entry.postings.first?.number == "8.20")
        #expect(entry.postings.map(\.account) == ["Expenses:Travel", "Assets:Cash"])
        let documents = ledger.documentEntries.filter { $0.filename.contains(id) }
        #expect(documents.count == 1 && ledger.documentEntries.count == 1, "\(ledger.documentEntries.map(\.filename))")
        #expect(documents.first?.sha256 == Hex.encode(SHA256.hash(bytes)))
        #expect(entry.meta["document"]?.contains(id) == true, "the entry links the document")
        #expect(try h.daemon.ctlJSON(["show", id])["state"] == "synced")
    }

    /// fava down when the expenses are added (one with a receipt), started
    /// later on the same port: each arrives once, with its document.
    @Test func offlineThenOnline_entriesArriveOnce() throws {
        let h = try FavaHarness()
        #expect(h.fava.stop() != nil, "fava stopped")
        try h.daemon.start()
        let bytes = SampleReceipt.jpeg(size: 5000, seed: 9)
        SampleReceipt.write(bytes, to: h.directory.at("r.jpg"))
        var ids = [try h.add(merchant: "Shop 0", amount: "1.00", receipt: h.directory.at("r.jpg"))]
        for n in 1..<4 { ids.append(try h.add(merchant: "Shop \(n)", amount: "\(n + 1).00")) }
        do {
            try waitUntil(timeout: 30, "the daemon to find fava unreachable") { try h.daemon.ctlJSON(["status"])["server"] == "unreachable" }
        } catch {
            Issue.record("\(error): \(try h.daemon.ctlJSON(["status"]).serialized()) \(h.daemon.log.suffix(2000))")
        }
        #expect(try h.daemon.list().allSatisfy { $0["state"] != "synced" })
        try h.fava.restart()
        do {
            try waitUntil(timeout: 90, "the queue to drain into fava") { try h.daemon.list().allSatisfy { $0["state"] == "synced" } }
            try h.waitUntilDrained()
        } catch {
            Issue.record("\(error): \(h.daemon.log.suffix(3000))")
        }
        let ledger = try h.fava.loadLedger()
        #expect(ledger.errors.isEmpty, "\(ledger.errors)")
        #expect(ledger.transactions.count == 4)
        for id in ids { #expect(ledger.transactions(linked: id).count == 1, "\(id)") }
        #expect(ledger.documentEntries.count == 1)
        #expect(ledger.documentEntries.first { $0.filename.contains(ids[0]) }?.sha256 == Hex.encode(SHA256.hash(bytes)))
    }

    /// fava 1.30 rereads its ledger without the lock its writes hold, so a
    /// reread of a half-written file (its page asks every 5 s) loses the
    /// title, and fava serves the ledger under the slug of no title,
    /// answering 404 pages at ours until it reads the file again. Made
    /// here by a reread of the ledger without its title, then the title
    /// written back: the daemon finds fava under the other slug, has it
    /// read the file again (nothing else asks it to), and the expense
    /// arrives once.
    @Test func ledgerServedUnderAnotherSlug_isReadAgain_andTheExpenseArrivesOnce() throws {
        let h = try FavaHarness()
        let original = try String(contentsOfFile: h.fava.ledgerPath, encoding: .utf8)
        let untitled = original.split(separator: "\n", omittingEmptySubsequences: false).filter { !$0.hasPrefix("option \"title\"") }
        #expect(untitled.count < original.split(separator: "\n", omittingEmptySubsequences: false).count, "the ledger had a title")
        try untitled.joined(separator: "\n").write(toFile: h.fava.ledgerPath, atomically: false, encoding: .utf8)
        func served() throws -> String? { try h.fava.connect().request("GET", "/").header("Location") }
        try waitUntil(timeout: 60, "fava to serve the ledger without its title") {
            _ = try h.fava.connect().request("GET", "\(h.fava.apiPath)/changed")
            return try served()?.contains("/beancount/") == true
        }
        try original.write(toFile: h.fava.ledgerPath, atomically: false, encoding: .utf8)
        // Later than the reread, whatever the clock's grain: fava's watcher goes by it.
        try FileManager.default.setAttributes([.modificationDate: Date(timeIntervalSinceNow: 2)], ofItemAtPath: h.fava.ledgerPath)
        #expect(try h.fava.connect().request("GET", "\(h.fava.apiPath)/changed").status == 404, "fava answers nothing at the ledger's slug")

        try h.daemon.start()
        let id = try h.add(merchant: "Bakery", amount: "3.00")
        try waitUntil(timeout: 90, "the expense to reach fava") { try h.daemon.ctlJSON(["show", id])["state"] == "synced" }
        #expect(try served()?.contains("/\(h.fava.slug)/") == true, "fava serves the ledger under its title again")
        let ledger = try h.fava.loadLedger()
        #expect(ledger.transactions(linked: id).count == 1 && ledger.transactions.count == 1, "\(ledger.transactions.count)")
        #expect(h.daemon.log.contains("its ledger under /beancount, not /\(h.fava.slug)"), "\(h.daemon.log.suffix(2000))")
    }

    /// A `server` naming a slug fava does not serve (a typo, or a title
    /// changed) needs attention, its error naming the `server` to set;
    /// fava's `beancount` slug is not involved, so nothing is retried.
    @Test func aServerNamingAnotherLedger_needsAttentionNamingTheOneFavaServes() throws {
        let h = try FavaHarness()
        let configuration = h.directory.at("expensed.conf")
        let text = try String(contentsOfFile: configuration, encoding: .utf8)
        try text.replacingOccurrences(of: "/\(h.fava.slug)\n", with: "/househld\n").write(toFile: configuration, atomically: true, encoding: .utf8)
        try h.daemon.start()
        let id = try h.add(merchant: "Cafe", amount: "4.00")
        try waitUntil(timeout: 60, "the create to need attention") { try h.daemon.ctlJSON(["show", id])["state"] == "needs_attention" }
        let job = try #require(try h.daemon.ctlJSON(["show", id])["jobs"]?.arrayValue?.first)
        #expect(job["last_error_class"] == "rejected")
        #expect(job["last_error"]?.stringValue?.contains("set server = http://127.0.0.1:\(h.fava.port)/\(h.fava.slug)") == true, "\(job.serialized())")
        #expect(try h.fava.loadLedger().transactions.isEmpty)
    }

    @Test func editAndDelete_needAttentionSayingToChangeTheLedgerByHand() throws {
        let h = try FavaHarness()
        try h.daemon.start()
        let id = try h.add(merchant: "Cafe", amount: "4.00")
        try h.waitUntilDrained()
        #expect(try h.daemon.ctl(["edit", id, "--amount", "5.00"]).status == 0)
        try waitUntil(timeout: 30, "the edit to need attention") { try h.daemon.ctlJSON(["status"])["needs_attention"] == 1 }
        let job = try #require(try h.daemon.ctlJSON(["show", id])["jobs"]?.arrayValue?.first)
        #expect(job["last_error_class"] == "unsupported")
        #expect(job["last_error"]?.stringValue?.contains("by hand") == true, "\(job.serialized())")
        #expect(try h.fava.loadLedger().transactions(linked: id).first?.postings.first?.number == "4.00", "the ledger is not changed")
    }

    /// 80 expenses, 20 with receipts (200 and 50 at `EXPENSED_TEST_SCALE=large`),
    /// through a proxy that drops 20% of answers after fava committed,
    /// resets 10% and answers 503 to 5%: each kind of fault happens, on
    /// the transactions' writes and on the documents' uploads alike.
    @Test func lostAnswersResetsAnd503s_leaveExactlyOneEntryAndDocumentEach() throws {
        let h = try FavaHarness(odds: FaultProxy.Odds(dropAfterCommit: 0.2, resetAfterCommit: 0.1, unavailable: 0.05))
        try h.daemon.start()
        var ids: [String] = []
        var receipts: [String: [UInt8]] = [:]
        // 80 expenses, a receipt on every fourth (200 at `EXPENSED_TEST_SCALE=large`):
        // fava reads the whole ledger again on every write, so each entry costs more than the last.
        let count = TestScale.count(quick: 80, large: 200)
        for n in 0..<count {
            var receipt: String?
            if n % 4 == 0 {
                let bytes = SampleReceipt.jpeg(size: 2000 + n * 13, seed: UInt8(n % 251))
                receipt = h.directory.at("r\(n).jpg")
                SampleReceipt.write(bytes, to: receipt!)
                let id = try h.add(merchant: "Shop \(n)", amount: "\(n + 1).25", receipt: receipt)
                receipts[id] = bytes
                ids.append(id)
            } else {
                ids.append(try h.add(merchant: "Shop \(n)", amount: "\(n + 1).25"))
            }
        }
        try h.waitUntilDrained(timeout: 600)
        let ledger = try h.fava.loadLedger()
        #expect(ledger.errors.isEmpty, "\(ledger.errors.prefix(3))")
        let ours = ledger.transactions.filter { $0.meta["transaction_id"] != nil }
        #expect(ours.count == count)
        #expect(Set(ours.compactMap { $0.meta["transaction_id"] }) == Set(ids))
        #expect(ledger.documentEntries.count == receipts.count)
        let proxy = try #require(h.proxy)
        for fault in [FaultProxy.Action.droppedAfterCommit, .resetAfterCommit, .unavailable] {
            #expect(proxy.count(fault) > 0, "no request was \(fault.rawValue): \(proxy.log.count) requests")
        }
        let uploads = proxy.log.filter { $0.path.hasSuffix("/api/add_document") }
        #expect(uploads.contains { $0.action != .forwarded }, "no upload met a fault: \(uploads.map(\.description))")
        for (id, bytes) in receipts {
            let docs = ledger.documentEntries.filter { $0.filename.contains(id) }
            #expect(docs.count == 1 && docs.first?.sha256 == Hex.encode(SHA256.hash(bytes)), "\(id)")
        }
        #expect(try h.daemon.ctlJSON(["status"])["needs_attention"] == 0)
    }

    @Test func killWithACreateInFlight_leavesOneEntry() throws {
        let (h, id) = try FavaHarness.crashedWithACreateInFlight()
        try h.daemon.start()
        try h.waitUntilDrained()
        #expect(try h.fava.loadLedger().transactions(linked: id).count == 1)
        #expect(h.daemon.log.contains("replayed"))
    }

    /// An amount changed in the ledger file itself: after `sync --refresh`
    /// (which asks fava to reload first) `show` has the new amount.
    @Test func refresh_showsAnEntryChangedInTheLedgerItself() throws {
        let h = try FavaHarness()
        try h.daemon.start()
        let id = try h.add(merchant: "Market", amount: "10.00")
        try h.waitUntilDrained()
        let text = try String(contentsOfFile: h.fava.ledgerPath, encoding: .utf8)
        #expect(text.contains("10.00 EUR"))
        // Replaced whole, as an editor saves: the daemon's refreshes go on
        // meanwhile, and fava rereading a half-written file would lose its title.
        try text.replacingOccurrences(of: "-10.00 EUR", with: "-11.25 EUR").replacingOccurrences(of: " 10.00 EUR", with: " 11.25 EUR")
            .write(toFile: h.fava.ledgerPath, atomically: true, encoding: .utf8)
        #expect(try h.daemon.ctl(["sync", "--refresh", "--wait"]).status == 0)
        try waitUntil(timeout: 30, "the refresh to show the change") { try h.daemon.ctlJSON(["show", id])["amount"] == "11.25" }
    }

    /// A 200 that is not fava's JSON as the answer to `add_entries` (a
    /// proxy's page): transient, and the next send looks the link up
    /// (after `changed`) before sending again; nothing is lost.
    @Test func unreadableAddEntriesAnswer_isTransientAndLooksUpFirst() throws {
        let fake = try LoopbackHTTPServer { request in
            if request.path.hasSuffix("/api/add_entries") {
                return .respond(status: 200, headers: ["Content-Type": "text/html"], body: Array("<html>Proxy error</html>".utf8))
            }
            if request.path.contains("/api/changed") {
                return .respond(status: 200, headers: ["Content-Type": "application/json"], body: Array(#"{"data": false}"#.utf8))
            }
            return .respond(status: 200, headers: ["Content-Type": "application/json"], body: Array(#"{"data": {"t": "table", "types": [], "rows": []}}"#.utf8))
        }
        defer { fake.stop() }
        let dir = TemporaryDirectory(prefix: "fava-fake")
        SampleReceipt.write(Array("backend = fava\nserver = \(fake.baseURL)/household\n".utf8), to: dir.at("expensed.conf"))
        let daemon = DaemonHarness(arguments: ["--drain-interval", "200ms", "--backoff-base", "50ms", "--backoff-cap", "200ms"], directory: dir)
        try daemon.start()
        defer { daemon.stop() }
        let added = try daemon.ctl(["add", "--merchant", "Shop", "--amount", "3.00", "--currency", "EUR", "--date", "2026-11-29", "--json"])
        let id = try #require(try JSONValue.parse(Array(added.stdout.utf8))["transaction_id"]?.stringValue)
        try waitUntil(timeout: 30, "two sends") { fake.requests.count { $0.path.hasSuffix("/api/add_entries") } >= 2 }
        let job = try #require(try daemon.ctlJSON(["show", id])["jobs"]?.arrayValue?.first)
        #expect(job["last_error_class"] == "transient")
        #expect(job["last_error"]?.stringValue?.contains("not fava's JSON") == true, "\(job.serialized())")
        let paths = fake.requests.map(\.path)
        let first = try #require(paths.firstIndex { $0.hasSuffix("/api/add_entries") })
        let second = try #require(paths[(first + 1)...].firstIndex { $0.hasSuffix("/api/add_entries") })
        let between = paths[first..<second]
        #expect(between.contains { $0.contains("/api/changed") } && between.contains { $0.contains("/api/query") }, "\(paths)")
        #expect(try daemon.list().count == 1)
    }
}
