import ExpenseCore
import ExpenseTestSupport
import Foundation
import Posix
import Testing

/// The spool's main path into backends that need fields: scans dropped in
/// the spool are read on this machine, and what arrives at the real
/// ihatemoney and the real fava is the expense a person reads on the
/// receipt (the corpus's truth), sent once; a photo with nothing to read
/// is held as incomplete, never a `0` bill or a refused entry.
@Suite struct ReadingIntoBackendsTests {
    /// Drops `photo` (nothing to read) first, then `receipts`, and returns
    /// the transaction ids by spool name once the daemon lists each.
    static func drop(_ daemon: DaemonHarness, _ directory: TemporaryDirectory, photo: String,
                     receipts: [CorpusReceipt]) throws -> [String: String] {
        let staging = directory.at("staging")
        try FileManager.default.createDirectory(atPath: staging, withIntermediateDirectories: true)
        let files = [(name: "no-text.jpg", path: photo)] + receipts.map { (name: $0.file, path: $0.path) }
        for file in files {
            let bytes = [UInt8](try #require(FileManager.default.contents(atPath: file.path)))
            try SpoolDrop.byRename(bytes, as: FileName(file.name)!, in: daemon.spoolDirectory, staging: staging)
        }
        var ids: [String: String] = [:]
        try waitUntil(timeout: 60, "the daemon to list every drop") {
            for expense in try daemon.list() {
                if let name = expense["source"]?["name"]?.stringValue, let id = expense["transaction_id"]?.stringValue { ids[name] = id }
            }
            return ids.count == files.count
        }
        return ids
    }

    /// The photo with nothing to read: held as incomplete, lacking `missing`.
    static func expectHeld(_ daemon: DaemonHarness, _ id: String, missing: [String]) throws {
        try waitUntil(timeout: 120, "the photo's reading") { daemon.log.contains("\(id): Receipt read: ") }
        try waitUntil(timeout: 60, "the photo to be held as incomplete") {
            try daemon.ctlJSON(["show", id])["missing"] == .array(missing.map(JSONValue.string))
        }
        #expect(try daemon.ctlJSON(["status"])["incomplete"] == 1)
        let held = try daemon.ctlJSON(["list", "--incomplete"]).arrayValue ?? []
        #expect(held.contains { $0["transaction_id"]?.stringValue == id }, "\(held)")
    }

    @Test func ihatemoney_aScanReadHere_isABillWithItsFields_andAPhotoOfNoTextIsHeld() throws {
        // ihatemoney takes only its project's currency (EUR here): the corpus's clean EUR receipt.
        let receipts = try ReceiptCorpus.load().filter { $0.file == "invoice-de-2pages.pdf" }
        #expect(receipts.count == 1)
        let h = try IhatemoneyHarness(daemonArguments: ["--reading", "on"], spool: true)
        try h.daemon.start()
        defer { h.daemon.stop() }
        let ids = try Self.drop(h.daemon, h.directory, photo: try RealReceiptFiles.makeLocated(in: h.directory), receipts: receipts)
        for receipt in receipts {
            let id = try #require(ids[receipt.file])
            try waitUntil(timeout: 180, "\(receipt.file) to become a bill") { try !h.bills(for: id).isEmpty }
            let bills = try h.bills(for: id)
            #expect(bills.count == 1, "\(bills)")
            let bill = try #require(bills.first)
            #expect(bill.amount == Double(receipt.fields["amount"] ?? ""), "\(bill)")
            #expect(bill.date == receipt.fields["date"] && bill.currency == receipt.fields["currency"], "\(bill)")
            #expect(bill.what == receipt.fields["merchant"], "\(bill)")
        }
        let photo = try #require(ids["no-text.jpg"])
        try Self.expectHeld(h.daemon, photo, missing: ["amount", "date"])
        #expect(try h.bills(for: photo).isEmpty)
        #expect(try h.bills().count == receipts.count, "no 0 bill")
    }

    @Test func fava_scansReadHere_areTransactionsWithTheirFields_andAPhotoOfNoTextIsHeld() throws {
        let receipts = try ReceiptCorpus.load().filter { $0.settings.dateOrder == nil && $0.settings.knownMerchants.isEmpty }
        #expect(receipts.count >= 4, "\(receipts)")
        // A household ledger whose accounts take the receipts' currencies.
        let currencies = Set(receipts.compactMap { $0.fields["currency"] }).sorted()
        let h = try FavaHarness(spool: true, daemonArguments: ["--reading", "on"], ledger: FavaProcess.Ledger(currencies: currencies))
        try h.daemon.start()
        defer { h.daemon.stop() }
        let ids = try Self.drop(h.daemon, h.directory, photo: try RealReceiptFiles.makeLocated(in: h.directory), receipts: receipts)
        for receipt in receipts {
            let id = try #require(ids[receipt.file])
            try waitUntil(timeout: 180, "\(receipt.file) to be in the ledger") { try !h.fava.loadLedger().transactions(linked: id).isEmpty }
            let ledger = try h.fava.loadLedger()
            #expect(ledger.errors.isEmpty, "\(ledger.errors)")
            let entries = ledger.transactions(linked: id)
            #expect(entries.count == 1, "\(receipt.file): \(entries.count) entries")
            let entry = try #require(entries.first)
            #expect(entry.date == receipt.fields["date"], "\(receipt.file)")
            #expect(entry.payee == receipt.fields["merchant"], "\(receipt.file): \(entry.payee ?? "no payee")")
            #expect(entry.postings.contains { $0.number == receipt.fields["amount"] && $0.currency == receipt.fields["currency"] },
                    "\(receipt.file): \(entry.postings)")
        }
        let photo = try #require(ids["no-text.jpg"])
        try Self.expectHeld(h.daemon, photo, missing: ["amount", "currency", "date"])
        #expect(try h.fava.loadLedger().transactions(linked: photo).isEmpty)
        #expect(try h.fava.loadLedger().transactions.count == receipts.count, "nothing for the photo")
    }
}
