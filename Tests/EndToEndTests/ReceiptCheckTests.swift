import Digest
import ExpenseCore
import ExpenseTestSupport
import Foundation
import Posix
import SQLite
import Testing

/// Only a whole receipt is a receipt, by `expensectl add` and by the spool
/// alike, and its kind comes from its bytes, never from its name.
@Suite struct ReceiptCheckTests {
    static let jpeg = SampleReceipt.jpeg(size: 50_000, seed: 9)

    /// Cut receipts, and what `add` says of each.
    static let cut: [(String, [UInt8], String)] = [
        ("three bytes of a JPEG", [0xFF, 0xD8, 0xFF], "receipt is truncated: a JPEG that ends before its end-of-image marker"),
        ("half a JPEG", Array(jpeg.prefix(25_000)), "receipt is truncated: a JPEG that ends before its end-of-image marker"),
        ("a PNG without IEND", Array(SampleReceipt.png(size: 5000).dropLast(12)), "receipt is truncated: a PNG that ends before its IEND chunk"),
        ("a PDF without %%EOF", Array(SampleReceipt.pdf(size: 5000).dropLast(7)), "receipt is truncated: a PDF without %%EOF in its last kilobyte"),
        ("a PNG with a damaged chunk", Array(SampleReceipt.png(size: 5000).prefix(100)) + [0x00] + Array(SampleReceipt.png(size: 5000).dropFirst(101)),
         "receipt is a damaged PNG: chunk 'exPd' fails its CRC"),
    ]

    @Test(arguments: cut.indices)
    func add_ofACutOrDamagedReceipt_exits65_sayingWhy_andStoresNothing(_ index: Int) throws {
        let (what, bytes, reason) = Self.cut[index]
        let daemon = DaemonHarness()
        try daemon.start()
        defer { daemon.stop() }
        let file = daemon.directory.at("receipt.jpg")
        SampleReceipt.write(bytes, to: file)
        let result = try daemon.ctl(["add", "--receipt", file, "--merchant", "Taxi"])
        #expect(result.status == 65, "\(what): \(result.stderr)")
        #expect(result.stderr.contains(reason), "\(what): \(result.stderr)")
        #expect(try daemon.list().isEmpty)
        #expect(daemon.receiptFiles().isEmpty, "no copy left")
    }

    /// An upload is checked against the digest recorded when its bytes were
    /// staged, not against what is on disk when it is sent: a copy damaged
    /// on disk in between is refused by the server and needs attention; it
    /// never becomes the expense's receipt.
    @Test func aStagedCopyDamagedBeforeItsUpload_isRefusedByTheServer_andNeverStored() throws {
        let sync = try SyncHarness(startServer: false)
        try sync.daemon.start()
        defer { sync.daemon.stop() }
        let file = sync.daemon.directory.at("scan.jpg")
        SampleReceipt.write(Self.jpeg, to: file)
        let added = try sync.daemon.ctl(["add", "--receipt", file, "--merchant", "Taxi"])
        #expect(added.status == 0, "\(added.stderr)")
        let id = added.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        guard let staged = sync.daemon.receiptFiles().first else { throw TestFailure("no receipt copy in the state directory") }
        // One byte changed in the middle: the same size, still a whole JPEG.
        let handle = try #require(FileHandle(forWritingAtPath: "\(sync.daemon.stateDirectory)/receipts/\(staged)"))
        handle.seek(toFileOffset: 25_000)
        handle.write(Data([Self.jpeg[25_000] ^ 0xFF]))
        handle.closeFile()

        try sync.startServer()
        try waitUntil(timeout: 60, "the upload to need attention") {
            try sync.daemon.ctlJSON(["show", id])["jobs"]?.arrayValue?.contains { $0["state"] == "needs_attention" } == true
        }
        let job = try sync.daemon.ctlJSON(["show", id])["jobs"]?.arrayValue?.first { $0["kind"] == "receipt" }
        #expect(job?["last_error"]?.stringValue?.contains("digest_mismatch") == true, "\(job?.serialized() ?? "no receipt job")")
        let records = try sync.serverRecords()
        #expect(records.map(\.transactionID) == [id], "the expense itself is there")
        #expect(records.first?.receiptDigest == nil, "and no receipt: the damaged bytes were never stored")
    }

    @Test func realFilesFromAPhoneAScannerAndAPDFPrinter_areTakenByAddAndSpool_andTheServerTakesThemToo() throws {
        let sync = try SyncHarness(daemonArguments: ["--spool-settle", "100ms"], spool: true)
        let daemon = sync.daemon
        let files = try RealReceiptFiles.make(in: daemon.directory)
        try daemon.start()
        defer { daemon.stop() }
        var expected: [String: (bytes: [UInt8], kind: ReceiptKind)] = [:]  // transaction id or spool name
        for (name, kind) in files {
            let path = daemon.directory.at(name)
            let result = try daemon.ctl(["add", "--receipt", path])
            #expect(result.status == 0, "\(name): \(result.stderr)")
            let bytes = [UInt8](FileManager.default.contents(atPath: path) ?? Data())
            expected[result.stdout.trimmingCharacters(in: .whitespacesAndNewlines)] = (bytes, kind)
            try SpoolDrop.byRename(bytes, as: FileName("spool-\(name)")!, in: daemon.spoolDirectory, staging: daemon.directory.at("staging"))
        }
        try waitUntil(timeout: 60, "the spool to be taken") { try daemon.spoolEntries().isEmpty }
        let held = try daemon.retrySameReceipts()
        #expect(held == files.count, "each spool file is a receipt added before, held until sent anyway: \(held) of \(files.count)")
        try sync.waitUntilDrained()
        #expect(try daemon.rejectedEntries().isEmpty)
        let expenses = try daemon.list()
        #expect(expenses.count == 2 * files.count)
        // JPEG, PNG and PDF files this small and upright go as they are;
        // the other kinds as their legible copy (ReceiptFormatTests).
        var served: [String] = []
        for expense in expenses {
            #expect(expense["receipt"] == "uploaded", "the server took it: \(expense.serialized())")
            let receipt = try sync.serverRequest("GET", try #require(expense["receipt_url"]?.stringValue))
            guard let added = expected[expense["transaction_id"]?.stringValue ?? ""] else {
                served.append(Hex.encode(SHA256.hash(receipt.body)))
                continue
            }
            if added.kind.isSendable {
                #expect(Hex.encode(SHA256.hash(receipt.body)) == Hex.encode(SHA256.hash(added.bytes)), "\(added.kind) byte for byte")
                #expect(receipt.header("Content-Type") == added.kind.contentType)
            } else {
                let verdict = ReceiptValidator.check(receipt.body)
                #expect(verdict == .complete(.jpeg) || verdict == .complete(.pdf), "\(added.kind) as a copy: \(verdict)")
            }
        }
        // Each sent as it is by add came the same way from the spool.
        let asTheyAre = expected.values.filter { $0.kind.isSendable }.map { Hex.encode(SHA256.hash($0.bytes)) }
        #expect(Set(asTheyAre).isSubset(of: Set(served)), "every byte of each, by the spool too")
    }

    @Test func aJPEGNamedPNG_isAJPEG_byAddAndBySpool_andUploadedAsOne() throws {
        let sync = try SyncHarness(daemonArguments: ["--spool-settle", "100ms"], spool: true)
        try sync.daemon.start()
        defer { sync.daemon.stop() }
        let file = sync.daemon.directory.at("photo.png")
        SampleReceipt.write(Self.jpeg, to: file)
        let added = try sync.daemon.ctl(["add", "--receipt", file, "--merchant", "Taxi"])
        #expect(added.status == 0, "\(added.stderr)")
        try SpoolDrop.byRename(Self.jpeg, as: FileName("scan.png")!, in: sync.daemon.spoolDirectory, staging: sync.daemon.directory.at("staging"))
        try waitUntil(timeout: 30, "the spool to be taken") { try sync.daemon.spoolEntries().isEmpty }
        #expect(try sync.daemon.retrySameReceipts() == 1, "the same bytes, held until sent anyway")
        try sync.waitUntilDrained()
        #expect(try sync.daemon.rejectedEntries().isEmpty)
        let expenses = try sync.daemon.list()
        #expect(expenses.count == 2)
        for expense in expenses {
            let url = try #require(expense["receipt_url"]?.stringValue)
            let receipt = try sync.serverRequest("GET", url)
            #expect(receipt.status == 200)
            #expect(receipt.header("Content-Type") == "image/jpeg", "the content type follows the bytes")
            #expect(receipt.body == Self.jpeg)
        }
    }

    @Test func aJPEGWrittenHalf_closed_andFinishedAfterTheSettleTime_isOneWholeReceipt() throws {
        let daemon = DaemonHarness(arguments: ["--spool-settle", "100ms"], spool: true)
        try daemon.start()
        defer { daemon.stop() }
        let spool = try FileDescriptor.open(daemon.spoolDirectory, [.readOnly, .directory])
        do {
            let file = try spool.openAt(FileName("slow.jpg")!, [.writeOnly, .create, .exclusive], mode: 0o644)
            try file.writeAll(Self.jpeg.prefix(20_000))
        }
        // Taken once it settled, found truncated, and left: it may be
        // being written (its change time is recent).
        try waitUntil(timeout: 20, "the file to be looked at") {
            try daemon.log.contains("Spool file 'slow.jpg' is truncated") || daemon.spoolEntries().isEmpty
        }
        #expect(try daemon.queuedExpenses().isEmpty)
        #expect(try daemon.spoolEntries().map(\.displayName) == ["slow.jpg"])
        do {
            let file = try spool.openAt(FileName("slow.jpg")!, [.writeOnly])
            _ = lseek(file.rawValue, 0, SEEK_END)
            try file.writeAll(Self.jpeg.dropFirst(20_000))
        }
        try daemon.waitForSpool(expenses: 1, rejected: 0)
        #expect(try daemon.queuedExpenses().map(\.receiptDigest) == [Hex.encode(SHA256.hash(Self.jpeg))], "all of it, once")
    }

    @Test func aReceiptThatStaysTruncated_isRejectedOnceLeftAloneLongEnough_sayingSo() throws {
        // Settle 100 ms: truncated receipts wait 20 times that, 2 s.
        let daemon = DaemonHarness(arguments: ["--spool-settle", "100ms"], spool: true)
        try daemon.start()
        defer { daemon.stop() }
        let staging = daemon.directory.at("staging")
        try SpoolDrop.byRename([(FileName("cut.json")!, SpoolDrop.sidecar(ExpenseFields(merchant: "Cut", amount: "1.00", currency: "EUR", date: "2026-01-01"))),
                                (FileName("cut.jpg")!, Array(Self.jpeg.prefix(30_000)))], in: daemon.spoolDirectory, staging: staging)
        try daemon.waitForSpool(expenses: 0, rejected: 2)
        let reason = try daemon.rejectionReason(FileName("cut.jpg")!)
        #expect(reason.contains("reason: is truncated: a JPEG that ends before its end-of-image marker, and stayed so for 2 s\n"), "\(reason)")
        #expect(try daemon.rejectionReason(FileName("cut.json")!).contains("reason: its receipt 'cut.jpg' was rejected\n"))
        #expect(daemon.receiptFiles().isEmpty)
        let looks = daemon.log.components(separatedBy: "Spool file 'cut.jpg' is truncated").count - 1
        #expect((1...3).contains(looks), "looked at again after a wait, not over and over: \(looks) times")
    }
}
