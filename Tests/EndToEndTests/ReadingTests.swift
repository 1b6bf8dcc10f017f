import ExpenseCore
import ExpenseTestSupport
import Foundation
import Posix
import Testing

/// Receipts read by a real daemon (the sandboxed reader, Tesseract and
/// poppler) and what arrives at a real expense-server: the corpus's clean
/// receipts dropped in the spool reach the server with the fields a person
/// reads on them, in one create each; what a sidecar gives is kept; a
/// receipt with nothing to read costs nothing but its reading; a kill
/// during a reading reads it again.
@Suite struct ReadingTests {
    /// The corpus's receipts that need no setting of the daemon's (no date
    /// order, no merchants the account has): what any install reads right.
    static func cleanReceipts() throws -> [CorpusReceipt] {
        try ReceiptCorpus.load().filter { $0.settings.dateOrder == nil && $0.settings.knownMerchants.isEmpty }
    }

    static func bytes(_ path: String) throws -> [UInt8] {
        guard let data = FileManager.default.contents(atPath: path) else { throw TestFailure("cannot read \(path)") }
        return [UInt8](data)
    }

    static func drop(_ sync: SyncHarness, _ bytes: [UInt8], as name: String) throws {
        try SpoolDrop.byRename(bytes, as: FileName(name)!, in: sync.daemon.spoolDirectory, staging: sync.daemon.directory.path)
    }

    /// The expense made from the spool file `name`, once the daemon lists it.
    static func expense(_ sync: SyncHarness, from name: String, timeout: Double = 30) throws -> JSONValue {
        var found: JSONValue?
        try waitUntil(timeout: timeout, "the expense of '\(name)'") {
            found = try sync.daemon.list().first { $0["source"]?["name"]?.stringValue == name }
            return found != nil
        }
        return found!
    }

    /// The server's expense `id`, once `condition` holds of it.
    static func serverExpense(_ sync: SyncHarness, _ id: String, timeout: Double = 120, _ what: String = "the server to have it",
                              until condition: (JSONValue) -> Bool = { _ in true }) throws -> JSONValue {
        var expense: JSONValue = .null
        try waitUntil(timeout: timeout, what) {
            let answer = try sync.serverRequest("GET", "/v1/expenses/\(id)")
            guard answer.status == 200 else { return false }
            expense = try JSONValue.parse(answer.body)
            return condition(expense)
        }
        return expense
    }

    static func requests(_ sync: SyncHarness, _ method: String, awaiting: Int = 0) -> Int {
        sync.accessLog(awaiting: awaiting) { $0.first == method && !($0.count > 1 && $0[1].hasPrefix("/v1/expenses?")) }.count
    }

    @Test func cleanCorpusReceipts_droppedInTheSpool_reachTheServerWithTheirFields_inOneCreateEach() throws {
        let sync = try SyncHarness(daemonArguments: ["--reading", "on"], spool: true)
        try sync.daemon.start()
        defer { sync.daemon.stop() }
        let receipts = try Self.cleanReceipts()
        #expect(receipts.count >= 4, "\(receipts)")
        for receipt in receipts { try Self.drop(sync, try Self.bytes(receipt.path), as: receipt.file) }
        for receipt in receipts {
            let id = try #require(try Self.expense(sync, from: receipt.file)["transaction_id"]?.stringValue)
            let server = try Self.serverExpense(sync, id, "\(receipt.file) on the server") { $0["amount"] != .null }
            for (field, value) in receipt.fields {
                #expect(server[field]?.stringValue == value, "\(receipt.file): \(field)")
            }
            let shown = try sync.daemon.ctlJSON(["show", id])
            #expect(Set(shown["read"]?.objectValue?.keys ?? [:].keys) == Set(receipt.fields.keys), "\(receipt.file): \(shown.serialized())")
        }
        try sync.waitUntilDrained(timeout: 120)
        // Each read before its create left: one POST, no PATCH.
        #expect(Self.requests(sync, "POST", awaiting: receipts.count) == receipts.count)
        #expect(Self.requests(sync, "PATCH") == 0)
        #expect(sync.daemon.log.contains("Receipt read: filled merchant ("), "\(sync.daemon.log)")

        // An edit of a field read ends its mark; `list` marks the others.
        let id = try #require(try Self.expense(sync, from: receipts[0].file)["transaction_id"]?.stringValue)
        #expect(try sync.daemon.ctl(["edit", id, "--amount", "1.00"]).status == 0)
        let read = try sync.daemon.ctlJSON(["show", id])["read"]?.objectValue ?? [:]
        #expect(read["amount"] == nil && read["merchant"] != nil, "\(read)")
        let listed = try sync.daemon.ctl(["list"])
        #expect(listed.stdout.contains("~ read from the receipt"), "\(listed.stdout)")
        let shown = try sync.daemon.ctl(["show", id])
        #expect(shown.stdout.contains("(read from the receipt, 0.") || shown.stdout.contains("(read from the receipt, 1.00)"), "\(shown.stdout)")
    }

    @Test func aSidecarsFields_areKeptOverTheReadings_andTheReadingFillsTheRest() throws {
        let sync = try SyncHarness(daemonArguments: ["--reading", "on"], spool: true)
        try sync.daemon.start()
        defer { sync.daemon.stop() }
        let hotel = try #require(try ReceiptCorpus.load().first { $0.file == "hotel-ch.pdf" })
        let staging = sync.daemon.directory.path
        try SpoolDrop.byRename([(FileName("stay.json")!, SpoolDrop.sidecar(ExpenseFields(merchant: "Team offsite", amount: "1400.00", currency: "CHF"))),
                                (FileName("stay.pdf")!, try Self.bytes(hotel.path))], in: sync.daemon.spoolDirectory, staging: staging)
        let id = try #require(try Self.expense(sync, from: "stay.pdf")["transaction_id"]?.stringValue)
        let server = try Self.serverExpense(sync, id, "the date read to arrive") { $0["date"] != .null }
        #expect(server["merchant"] == "Team offsite" && server["amount"] == "1400.00" && server["currency"] == "CHF")
        #expect(server["date"]?.stringValue == hotel.fields["date"])
        let read = try sync.daemon.ctlJSON(["show", id])["read"]?.objectValue ?? [:]
        #expect(Array(read.keys) == ["date"], "\(read)")
        #expect(sync.daemon.log.contains("kept merchant, amount, currency as set"), "\(sync.daemon.log)")
    }

    /// A blank page, a photo with no text, and a receipt of 10,000 lines
    /// with nothing a receipt's fields are made of.
    static func nothingToRead(in directory: TemporaryDirectory) throws -> [(name: String, bytes: [UInt8])] {
        try RealReceiptFiles.run(RealReceiptFiles.convert, ["-size", "1200x900", "gradient:white-navy", "-quality", "90", directory.at("sky.jpg")])
        return [("blank.pdf", PDFText.page([], height: 842)),
                ("sky.jpg", try bytes(directory.at("sky.jpg"))),
                ("long.pdf", PDFText.page((1...10_000).map { "line \($0)" }, height: 10_000 * 10 + 100))]
    }

    @Test func nothingToRead_isNoError_andTheExpenseIsSentWithoutSuggestions() throws {
        let sync = try SyncHarness(daemonArguments: ["--reading", "on"], spool: true)
        try sync.daemon.start()
        defer { sync.daemon.stop() }
        for (name, bytes) in try Self.nothingToRead(in: sync.daemon.directory) { try Self.drop(sync, bytes, as: name) }
        for name in ["blank.pdf", "sky.jpg", "long.pdf"] {
            let id = try #require(try Self.expense(sync, from: name)["transaction_id"]?.stringValue)
            let server = try Self.serverExpense(sync, id, "\(name) sent")
            #expect(server["amount"] == .null && server["merchant"] == .null, "\(name): \(server.serialized())")
            #expect(try sync.daemon.ctlJSON(["show", id])["read"] == .object([:]))
        }
        try sync.waitUntilDrained(timeout: 120)
        try waitUntil(timeout: 30, "three readings logged") {
            sync.daemon.log.components(separatedBy: "Receipt read: nothing read").count - 1 == 3
        }
        #expect(!sync.daemon.log.contains("was not read"), "\(sync.daemon.log)")
        #expect(!sync.daemon.log.contains("<3>"), "no error: \(sync.daemon.log)")
    }

    @Test func aReadingThatTimesOut_isLogged_andTheExpenseIsSentWithoutSuggestions() throws {
        let sync = try SyncHarness(daemonArguments: ["--reading", "on", "--reading-timeout", "100ms"], spool: true)
        try sync.daemon.start()
        defer { sync.daemon.stop() }
        let receipt = try #require(try Self.cleanReceipts().first { $0.file.hasSuffix(".png") })
        try Self.drop(sync, try Self.bytes(receipt.path), as: "slow.png")
        let id = try #require(try Self.expense(sync, from: "slow.png")["transaction_id"]?.stringValue)
        try waitUntil(timeout: 60, "the reading to time out") { sync.daemon.log.contains("was not read:") }
        let server = try Self.serverExpense(sync, id, "sent without suggestions")
        #expect(server["amount"] == .null && server["merchant"] == .null)
        try sync.waitUntilDrained(timeout: 60)
        #expect(try sync.daemon.ctlJSON(["show", id])["read"] == .object([:]))
        #expect(sync.daemon.log.contains("its expense goes without suggestions"), "\(sync.daemon.log)")
    }

    @Test func expensectlRead_readsAgain_andSaysWhatWasFilledAndWhatKept() throws {
        let sync = try SyncHarness(daemonArguments: ["--reading", "on"])
        try sync.daemon.start()
        defer { sync.daemon.stop() }
        let receipt = try #require(try Self.cleanReceipts().first { $0.file == "invoice-de-2pages.pdf" })
        let added = try sync.daemon.ctl(["add", "--receipt", receipt.path, "--merchant", "Nordlicht"])
        #expect(added.status == 0, "\(added.stderr)")
        let id = added.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        _ = try Self.serverExpense(sync, id, "the reading's edit to arrive") { $0["amount"] != .null }

        let text = try sync.daemon.ctl(["read", id])
        #expect(text.status == 0, "\(text.stderr)")
        #expect(text.stdout.contains("kept (set by a person or a sidecar)") && text.stdout.contains("filled"), "\(text.stdout)")
        let json = try sync.daemon.ctlJSON(["read", id])
        let fields = json["fields"]?.arrayValue ?? []
        let applied = Dictionary(uniqueKeysWithValues: fields.compactMap { f in f["field"]?.stringValue.map { ($0, f["applied"]) } })
        #expect(applied["merchant"] == false, "\(json.serialized())")
        #expect(applied["amount"] == true, "\(json.serialized())")
        #expect(applied["currency"] == true, "\(json.serialized())")
        // `add` with a field typed dates the expense today: that date is the person's, kept.
        #expect(applied["date"] == false, "\(json.serialized())")
        for field in fields where field["applied"] == true {
            #expect(field["value"]?.stringValue == receipt.fields[field["field"]?.stringValue ?? ""], "\(field.serialized())")
        }
        #expect(sync.daemon.log.contains("Receipt read on request: filled"), "\(sync.daemon.log)")
        try sync.waitUntilDrained(timeout: 60)
        let server = try Self.serverExpense(sync, id)
        #expect(server["merchant"] == "Nordlicht" && server["amount"]?.stringValue == receipt.fields["amount"])

        // No receipt, no expense: a clear error, nothing changed.
        let plain = try sync.daemon.ctl(["add", "--merchant", "M", "--amount", "1.00", "--currency", "EUR", "--date", "2026-11-29"])
        let none = try sync.daemon.ctl(["read", plain.stdout.trimmingCharacters(in: .whitespacesAndNewlines)])
        #expect(none.status == 1 && none.stderr.contains("has no receipt"), "\(none.stderr)")
        let unknown = try sync.daemon.ctl(["read", "cp-ffffffffffffffffffffff"])
        #expect(unknown.status == 1 && unknown.stderr.contains("no expense matches"), "\(unknown.stderr)")
        let bad = try sync.daemon.request(["op": "read", "ref": 5])
        #expect(bad["error"]?["code"] == "invalid_field", "\(bad.serialized())")
    }

    @Test func readingOff_readsNothing_andRefusesRead() throws {
        let sync = try SyncHarness(daemonArguments: ["--reading", "off"])
        try sync.daemon.start()
        defer { sync.daemon.stop() }
        let receipt = try #require(try Self.cleanReceipts().first)
        let added = try sync.daemon.ctl(["add", "--receipt", receipt.path])
        let id = added.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        try sync.waitUntilDrained(timeout: 60)
        let server = try Self.serverExpense(sync, id)
        #expect(server["amount"] == .null)
        let read = try sync.daemon.ctl(["read", id])
        #expect(read.status == 1 && read.stderr.contains("reading = off"), "\(read.stderr)")
        #expect(!sync.daemon.log.contains("Receipt read"))
    }

    @Test(arguments: ["maybe", "", "ON"])
    func aReadingSettingThatIsNotOnOrOff_refusesToStart(_ value: String) throws {
        let daemon = DaemonHarness(arguments: ["--reading", value])
        let child = try daemon.launch()
        let status = child.waitForExit(timeout: 20)
        #expect(status == 64 || status == 78, "\(String(describing: status))")
        #expect(child.standardError.contains("reading") && child.standardError.contains("must be on or off"), "\(child.standardError)")
    }

    /// A daemon whose reader stops at a fault point before it applies what it
    /// read, with one clean corpus receipt dropped and its reading held there.
    struct HeldReading {
        let sync: SyncHarness
        let hold: FaultHold
        let receipt: CorpusReceipt
        let id: String

        init(readingWait: String) throws {
            let sync = try SyncHarness(daemonArguments: ["--reading", "on", "--reading-wait", readingWait], spool: true)
            let hold = try FaultHold("reading-before-apply", on: sync.daemon)
            try sync.daemon.start()
            let receipt = try #require(try ReadingTests.cleanReceipts().first { $0.file.hasSuffix(".png") })
            try ReadingTests.drop(sync, try ReadingTests.bytes(receipt.path), as: receipt.file)
            try hold.waitUntilHeld(sync.daemon, timeout: 60)
            id = try #require(try ReadingTests.expense(sync, from: receipt.file)["transaction_id"]?.stringValue)
            (self.sync, self.hold, self.receipt) = (sync, hold, receipt)
        }

        /// Lets the reader go on.
        func release() throws {
            try hold.release(sync.daemon)
        }
    }

    @Test func aReadingLongerThanTheWait_letsTheCreateGo_andArrivesAsAnEdit() throws {
        let held = try HeldReading(readingWait: "1s")
        let (sync, receipt, id) = (held.sync, held.receipt, held.id)
        defer { sync.daemon.stop() }
        // The wait is over while the reading is held: the create goes as it is.
        let sent = try Self.serverExpense(sync, id, "the create sent after the wait")
        #expect(sent["amount"] == .null && sent["merchant"] == .null)
        try held.release()
        let server = try Self.serverExpense(sync, id, "the reading's edit") { $0["amount"] != .null }
        for (field, value) in receipt.fields { #expect(server[field]?.stringValue == value, "\(field)") }
        try sync.waitUntilDrained(timeout: 60)
        #expect(Self.requests(sync, "POST", awaiting: 1) == 1)
        #expect(Self.requests(sync, "PATCH", awaiting: 1) == 1)
    }

    @Test func whileAReadingIsToDo_statusCountsIt_andShowSaysUntilWhenTheCreateWaits() throws {
        let held = try HeldReading(readingWait: "30m")
        let (sync, receipt, id) = (held.sync, held.receipt, held.id)
        defer { sync.daemon.stop() }

        let shown = try sync.daemon.ctlJSON(["show", id])
        let queued = try #require(shown["reading"]?["queued_at"]?.stringValue.flatMap(Timestamp.parse), "\(shown)")
        let until = try #require(shown["reading"]?["create_waits_until"]?.stringValue.flatMap(Timestamp.parse), "\(shown)")
        #expect(until - queued == 30 * 60_000, "reading_wait after it was queued")
        let text = try sync.daemon.ctl(["show", id])
        #expect(text.stdout.contains("Reading:") && text.stdout.contains("reading_wait"), "\(text.stdout)")
        #expect(try sync.daemon.request(["op": "status"])["result"]?["reading"] == 1)
        let status = try sync.daemon.ctl(["status"])
        #expect(status.stdout.contains("1 receipt being read"), "\(status.stdout)")
        #expect(try sync.serverExpenses().isEmpty, "the create waits for its reading")

        try held.release()
        let server = try Self.serverExpense(sync, id, "the create with the fields read") { $0["amount"] != .null }
        for (field, value) in receipt.fields { #expect(server[field]?.stringValue == value, "\(field)") }
        #expect(try sync.daemon.ctlJSON(["show", id])["reading"] == nil, "read: no reading to do")
        #expect(try sync.daemon.request(["op": "status"])["result"]?["reading"] == 0)
        #expect(Self.requests(sync, "PATCH") == 0)
    }

    /// The pid of a reader (`expensed-decode --read`) the daemon `pid` runs, if one runs.
    static func readerChild(of pid: Int32) -> Int32? {
        guard let entries = try? FileManager.default.contentsOfDirectory(atPath: "/proc") else { return nil }
        for entry in entries {
            guard let child = Int32(entry),
                  let stat = try? String(contentsOfFile: "/proc/\(entry)/stat", encoding: .utf8),
                  let close = stat.lastIndex(of: ")") else { continue }
            let fields = stat[stat.index(after: close)...].split(separator: " ")
            guard fields.count > 2, Int32(fields[1]) == pid,
                  let command = FileManager.default.contents(atPath: "/proc/\(entry)/cmdline") else { continue }
            let arguments = command.split(separator: 0).map { String(decoding: $0, as: UTF8.self) }
            if arguments.first?.hasSuffix("expensed-decode") == true && arguments.contains("--read") { return child }
        }
        return nil
    }

    @Test func killedDuringAReading_readsItAgainAtStart_andTheServerHasOneExpenseWithItsFields() throws {
        let sync = try SyncHarness(daemonArguments: ["--reading", "on"], spool: true)
        try sync.daemon.start()
        defer { sync.daemon.stop() }
        let receipt = try #require(try Self.cleanReceipts().first { $0.source == "recognized" })
        let pid = try sync.daemon.daemonPID()
        try Self.drop(sync, try Self.bytes(receipt.path), as: receipt.file)
        try waitUntil(timeout: 60, "the reader to run") { Self.readerChild(of: pid) != nil }
        sync.daemon.crash()
        #expect(try sync.serverExpenses().isEmpty, "the create waited for its reading")

        try sync.daemon.start()
        let id = try #require(try Self.expense(sync, from: receipt.file)["transaction_id"]?.stringValue)
        let server = try Self.serverExpense(sync, id, "the fields read after the restart") { $0["amount"] != .null }
        for (field, value) in receipt.fields { #expect(server[field]?.stringValue == value, "\(field)") }
        try sync.waitUntilDrained(timeout: 120)
        #expect(try sync.serverExpenses().count == 1)
        #expect(sync.daemon.log.contains("receipt reading(s) interrupted or waiting; reading them now"), "\(sync.daemon.log)")
        #expect(Self.requests(sync, "PATCH") == 0)
    }
}

/// A one-page PDF whose text layer is `lines`, one under another in
/// Helvetica 8, on a page `height` points tall.
enum PDFText {
    static func page(_ lines: [String], height: Int) -> [UInt8] {
        var content = "BT /F1 8 Tf 10 TL 20 \(height - 20) Td\n"
        for line in lines { content += "(\(line)) Tj T*\n" }
        content += "ET\n"
        let stream = Array(content.utf8)
        let objects: [[UInt8]] = [
            Array("<< /Type /Catalog /Pages 2 0 R >>".utf8),
            Array("<< /Type /Pages /Kids [3 0 R] /Count 1 >>".utf8),
            Array("<< /Type /Page /Parent 2 0 R /MediaBox [0 0 595 \(height)] /Contents 4 0 R /Resources << /Font << /F1 5 0 R >> >> >>".utf8),
            Array("<< /Length \(stream.count) >>\nstream\n".utf8) + stream + Array("\nendstream".utf8),
            Array("<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>".utf8),
        ]
        var bytes = Array("%PDF-1.4\n%\u{E2}\u{E3}\u{CF}\u{D3}\n".utf8)
        var offsets: [Int] = []
        for (index, object) in objects.enumerated() {
            offsets.append(bytes.count)
            bytes += Array("\(index + 1) 0 obj\n".utf8) + object + Array("\nendobj\n".utf8)
        }
        let xref = bytes.count
        var table = "xref\n0 \(objects.count + 1)\n0000000000 65535 f \n"
        for offset in offsets { table += String(repeating: "0", count: 10 - String(offset).count) + "\(offset) 00000 n \n" }
        table += "trailer\n<< /Size \(objects.count + 1) /Root 1 0 R >>\nstartxref\n\(xref)\n%%EOF\n"
        return bytes + Array(table.utf8)
    }
}
