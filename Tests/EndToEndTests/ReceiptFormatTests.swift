import ExpenseCore
import ExpenseTestSupport
import Foundation
import Posix
import SQLite
import Testing

/// Receipts as phones and scanners make them (ImageMagick writes each
/// here), through `add` and the spool, against the real expense-server:
/// what the server receives is one legible JPEG (a PDF for a multi-page
/// scan) at most `receipt_max_edge` on its long edge, upright, without
/// location; the original stays with the daemon. Hostile files cost their
/// own upload, never the daemon.
@Suite struct ReceiptFormatTests {
    static let maxEdge = 600

    /// What ImageMagick's `identify` says of a file: width, height, format, and its EXIF tags.
    static func identify(_ path: String) throws -> (width: Int, height: Int, format: String, exif: String) {
        let result = try runCommand("/usr/bin/identify", ["-format", "%w %h %m|%[EXIF:*]\\n", path], timeout: 60)
        guard result.status == 0, let line = result.stdout.split(separator: "\n").first else { throw TestFailure("identify \(path): \(result.stderr)") }
        let halves = line.split(separator: "|", maxSplits: 1, omittingEmptySubsequences: false)
        let words = halves[0].split(separator: " ")
        return (Int(words[0]) ?? 0, Int(words[1]) ?? 0, String(words[2]), halves.count > 1 ? String(halves[1]) : "")
    }

    /// The server's receipt file of `id`, and its content type.
    static func serverReceipt(_ sync: SyncHarness, _ id: String) throws -> (path: String, type: String)? {
        let db = try Connection(path: "\(sync.serverData)/expense-server.db", readOnly: true)
        return try db.queryFirst("SELECT receipt_file, receipt_type FROM expenses WHERE transaction_id = ? AND receipt_file IS NOT NULL",
                                 [.text(id)]) { ("\(sync.serverData)/receipts/\($0.string(0))", $0.string(1)) }
    }

    @Test func everyFormat_throughAdd_reachesTheServerAsOneLegibleCopy_andTheOriginalStays() throws {
        let files = TemporaryDirectory(prefix: "formats")
        let made = try RealReceiptFiles.make(in: files)
        let located = try RealReceiptFiles.makeLocated(in: files)
        let sync = try SyncHarness(daemonArguments: ["--receipt-max-edge", "\(Self.maxEdge)"])
        try sync.daemon.start()
        defer { sync.daemon.stop() }
        let chosen = ["phone.heic", "phone.webp", "alpha.png", "scan.tif", "pages.tif", "scan.pbm", "scan16.pgm", "phone.ppm",
                      "phone.bmp", "phone.jpg", "printer.pdf"]
        var ids: [String: String] = [:]
        for name in chosen + ["located.jpg"] {
            let path = name == "located.jpg" ? located : files.at(name)
            let added = try sync.daemon.ctlJSON(["add", "--merchant", name, "--receipt", path])
            ids[name] = try #require(added["transaction_id"]?.stringValue, "\(name): \(added)")
        }
        #expect(made.contains { $0.name == "pages.tif" })
        try sync.waitUntilDrained(timeout: 120)
        for (name, id) in ids {
            let (path, type) = try #require(try Self.serverReceipt(sync, id), "\(name) has a receipt on the server")
            let bytes = [UInt8](try #require(FileManager.default.contents(atPath: path)))
            switch name {
            case "pages.tif":
                #expect(type == "application/pdf" && ReceiptValidator.check(bytes) == .complete(.pdf), "\(name): \(type)")
                let pages = try runCommand("/usr/bin/vipsheader", ["-f", "n-pages", path], timeout: 60)
                #expect(pages.stdout.trimmingCharacters(in: .whitespacesAndNewlines) == "3", "a page per image: \(pages.stdout) \(pages.stderr)")
            case "printer.pdf":
                #expect(type == "application/pdf" && Data(bytes) == FileManager.default.contents(atPath: files.at(name)), "a PDF goes as it is")
            default:
                #expect(type == "image/jpeg" && ReceiptValidator.check(bytes) == .complete(.jpeg), "\(name): \(type)")
                let info = try Self.identify(path)
                #expect(max(info.width, info.height) <= Self.maxEdge, "\(name): \(info)")
                #expect(info.exif.isEmpty, "\(name) keeps no EXIF: \(info.exif)")
            }
        }
        // Turned upright: the 1200 × 900 photo whose EXIF says "turn 90°" is portrait now.
        let upright = try Self.identify(try #require(try Self.serverReceipt(sync, ids["located.jpg"]!)).path)
        #expect(upright.width == 450 && upright.height == 600, "\(upright)")
        #expect(try Self.identify(located).exif.contains("GPS"), "the original tells where it was taken")
        // The bytes as received stay with the daemon.
        let db = try Connection(path: "\(sync.daemon.stateDirectory)/expensed.db", readOnly: true)
        for name in ["phone.heic", "located.jpg", "pages.tif"] {
            let file = try #require(try db.queryFirst("SELECT file FROM receipt_originals WHERE transaction_id = ?", [.text(ids[name]!)]) { $0.string(0) })
            let kept = FileManager.default.contents(atPath: "\(sync.daemon.stateDirectory)/receipts/\(file)")
            let original = name == "located.jpg" ? located : files.at(name)
            #expect(kept == FileManager.default.contents(atPath: original), "\(name)'s original is kept byte for byte")
        }
        // `receipt --original` hands them back; without it, the copy the server has.
        for name in ["phone.heic", "located.jpg", "printer.pdf"] {
            let original = name == "located.jpg" ? located : files.at(name)
            let out = files.at("back-\(name)")
            let answer = try sync.daemon.ctlJSON(["receipt", ids[name]!, "--original", "-o", out])
            #expect(answer["source"] == (name == "printer.pdf" ? "server" : "original"), "\(name): \(answer)")
            #expect(FileManager.default.contents(atPath: out) == FileManager.default.contents(atPath: original), "\(name) byte for byte")
        }
        let copy = files.at("copy-heic")
        #expect(try sync.daemon.ctlJSON(["receipt", ids["phone.heic"]!, "-o", copy])["kind"] == "jpeg")
        #expect(sync.daemon.log.contains("Receipt copy made: JPEG"), "\(sync.daemon.log)")
    }

    /// Dropped in the spool, a phone's HEIC and a scanner's TIFF become one
    /// expense each whose server receipt is a JPEG, and a BMP sidecar pair
    /// takes its fields.
    @Test func phoneAndScannerFiles_throughTheSpool_reachTheServerAsJPEGs() throws {
        let files = TemporaryDirectory(prefix: "spool-formats")
        _ = try RealReceiptFiles.make(in: files)
        let sync = try SyncHarness(daemonArguments: ["--spool-settle", "100ms", "--receipt-max-edge", "\(Self.maxEdge)"], spool: true)
        let daemon = sync.daemon
        try daemon.start()
        defer { daemon.stop() }
        for name in ["phone.heic", "scan.tif", "phone.bmp"] {
            let bytes = [UInt8](try #require(FileManager.default.contents(atPath: files.at(name))))
            try SpoolDrop.byRename(bytes, as: FileName(name)!, in: daemon.spoolDirectory, staging: daemon.directory.at("staging"))
        }
        try SpoolDrop.byRename(Array(#"{"merchant": "Bitmap Bakery", "amount": "4.20", "currency": "EUR"}"#.utf8), as: FileName("phone.json")!,
                               in: daemon.spoolDirectory, staging: daemon.directory.at("staging"))
        try waitUntil(timeout: 60, "the spool to be taken") { try daemon.spoolEntries().isEmpty }
        try sync.waitUntilDrained(timeout: 120)
        #expect(try daemon.rejectedEntries().isEmpty)
        let expenses = try daemon.list()
        #expect(expenses.count == 3, "\(expenses)")
        #expect(expenses.contains { $0["merchant"] == "Bitmap Bakery" }, "the sidecar's fields")
        for expense in expenses {
            let id = try #require(expense["transaction_id"]?.stringValue)
            let (path, type) = try #require(try Self.serverReceipt(sync, id), "\(expense.serialized())")
            let info = try Self.identify(path)
            #expect(type == "image/jpeg" && info.format == "JPEG" && max(info.width, info.height) <= Self.maxEdge, "\(info)")
        }
    }

    /// kill -9 while the decoder reads a receipt: the decoder dies with
    /// the daemon; after the restart the copy is made once, the expense
    /// created once and its receipt uploaded once.
    @Test func killedWhileTheCopyIsBeingMade_thenRestarted_isOneCopyOneCreateOneUpload() throws {
        let files = TemporaryDirectory(prefix: "copy-crash")
        _ = try RealReceiptFiles.make(in: files)
        let sync = try SyncHarness(daemonArguments: ["--receipt-decode-timeout", "1h"],
                                   environment: ["EXPENSED_DECODER_FAULT": "hang", "EXPENSED_DEBUG": "1"])
        let daemon = sync.daemon
        try daemon.start()
        defer { daemon.stop() }
        let id = try #require(try daemon.ctlJSON(["add", "--merchant", "Crash Café", "--amount", "8.40", "--currency", "EUR",
                                                  "--receipt", files.at("phone.heic")])["transaction_id"]?.stringValue)
        let pid = try daemon.daemonPID()
        var decoder: Int32 = 0
        try waitUntil(timeout: 60, "the decoder to run") {
            decoder = Self.children(of: pid).first { Self.command(of: $0) == "expensed-decode" } ?? 0
            return decoder != 0 && daemon.log.contains("Making the copy of receipt")
        }
        // The create does not wait for the copy: it is on the server, and recorded, before the kill.
        try waitUntil(timeout: 60, "the create applied") { try daemon.ctlJSON(["show", id])["jobs"]?.arrayValue?.contains { $0["kind"] == "create" } == false }
        daemon.crash()
        try waitUntil(timeout: 30, "the decoder to die with the daemon") { !FileManager.default.fileExists(atPath: "/proc/\(decoder)/status") || Self.isZombie(decoder) }
        daemon.environment["EXPENSED_DECODER_FAULT"] = nil
        try daemon.start()
        try sync.waitUntilDrained(timeout: 120)
        let db = try Connection(path: "\(daemon.stateDirectory)/expensed.db", readOnly: true)
        #expect(try db.scalarInt("SELECT count(*) FROM receipt_originals WHERE transaction_id = ?", [.text(id)]) == 1, "one copy recorded")
        let creates = sync.accessLog(awaiting: 1) { $0.first == "POST" && $0.count > 1 && $0[1] == "/v1/expenses" }
        #expect(creates.count == 1, "one create: \(creates)")
        #expect(try sync.serverRecords().filter { $0.transactionID == id }.count == 1)
        let uploads = sync.accessLog(awaiting: 1) { $0.first == "PUT" && $0.count > 1 && $0[1] == "/v1/expenses/\(id)/receipt" }
        #expect(uploads.count == 1, "one upload: \(uploads)")
        let (path, type) = try #require(try Self.serverReceipt(sync, id))
        let format = try Self.identify(path).format
        #expect(type == "image/jpeg" && format == "JPEG")
        // What is left in receipts/: the original alone (the copy goes once
        // uploaded, a moment after the commit that removed its job).
        var left: [String] = []
        try? waitUntil("receipts/ to hold the original alone") {
            left = try FileManager.default.contentsOfDirectory(atPath: "\(daemon.stateDirectory)/receipts")
            return left.count == 1
        }
        #expect(left.count == 1 && left[0].hasSuffix(".heic"), "\(left)")
    }

    static func children(of pid: Int32) -> [Int32] {
        let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task")) ?? []
        return tasks.flatMap { task in
            ((try? String(contentsOfFile: "/proc/\(pid)/task/\(task)/children", encoding: .utf8)) ?? "").split(separator: " ").compactMap { Int32($0) }
        }
    }

    static func command(of pid: Int32) -> String {
        ((try? String(contentsOfFile: "/proc/\(pid)/comm", encoding: .utf8)) ?? "").trimmingCharacters(in: .whitespacesAndNewlines)
    }

    static func isZombie(_ pid: Int32) -> Bool {
        ((try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8)) ?? "").split(separator: " ").dropFirst(2).first == "Z"
    }

    /// A PNG of a few hundred bytes that claims 60,000 × 60,000 pixels, and
    /// a decoder that crashes, hangs or tries the network: each costs its
    /// own upload (it needs attention, with the reason), never the daemon,
    /// and the expense itself is created.
    @Test(arguments: [("bomb", "", "claims 60000 × 60000 pixels, more than the"),
                      ("crash", "crash", "the decoder crashed (signal 11)"),
                      ("hang", "hang", "the decoder took longer than 1 s (receipt_decode_timeout) and was stopped"),
                      ("network", "network", "socket: Operation not permitted"),
                      ("write", "write", "open for writing: Operation not permitted")])
    func aHostileReceipt_costsItsUploadAlone(_ what: String, _ fault: String, _ reason: String) throws {
        let files = TemporaryDirectory(prefix: "hostile")
        // Only the hanging decoder meets the short timeout: the others must
        // fail for their own reason, however slowly a loaded machine starts them.
        let sync = try SyncHarness(daemonArguments: ["--receipt-decode-timeout", fault == "hang" ? "1s" : "2m"],
                                   environment: fault.isEmpty ? [:] : ["EXPENSED_DECODER_FAULT": fault])
        try sync.daemon.start()
        defer { sync.daemon.stop() }
        let path = files.at("\(what).png")
        let bytes = what == "bomb" ? Self.pngClaiming(width: 60_000, height: 60_000) : [UInt8](try {
            try RealReceiptFiles.run(RealReceiptFiles.convert, ["-size", "700x700", "xc:white", "-alpha", "set", files.at("big.png")])
            return FileManager.default.contents(atPath: files.at("big.png"))!
        }())
        #expect(ReceiptValidator.check(bytes) == .complete(.png))
        SampleReceipt.write(bytes, to: path)
        let id = try #require(try sync.daemon.ctlJSON(["add", "--merchant", what, "--amount", "3.00", "--currency", "EUR", "--receipt", path])["transaction_id"]?.stringValue)
        try waitUntil(timeout: 60, "the upload needs attention") {
            try sync.daemon.ctlJSON(["show", id])["jobs"]?.arrayValue?.contains { $0["state"] == "needs_attention" } == true
        }
        let shown = try sync.daemon.ctl(["show", id]).stdout
        #expect(shown.contains(reason), "\(shown)")
        try waitUntil(timeout: 60, "the expense created on the server") { try sync.serverRecords().contains { $0.transactionID == id } }
        #expect(try sync.serverRecords().first { $0.transactionID == id }?.receiptDigest == nil, "nothing was uploaded")
        // Still serving: another expense goes through.
        let other = try #require(try sync.daemon.ctlJSON(["add", "--merchant", "after \(what)", "--amount", "1.00", "--currency", "EUR"])["transaction_id"]?.stringValue)
        try waitUntil(timeout: 60, "the next expense on the server") { try sync.serverRecords().contains { $0.transactionID == other } }
        #expect(!FileManager.default.fileExists(atPath: "/tmp/expensed-decode-escape"))
    }

    /// A whole PNG (valid CRCs, one tiny IDAT) whose IHDR claims `width` × `height`.
    static func pngClaiming(width: Int, height: Int) -> [UInt8] {
        func be32(_ v: Int) -> [UInt8] { [UInt8(v >> 24 & 0xFF), UInt8(v >> 16 & 0xFF), UInt8(v >> 8 & 0xFF), UInt8(v & 0xFF)] }
        func chunk(_ type: String, _ data: [UInt8]) -> [UInt8] {
            var crc = CRC32()
            (Array(type.utf8) + data).withUnsafeBytes { crc.update($0) }
            return be32(data.count) + Array(type.utf8) + data + be32(Int(crc.value))
        }
        let header = be32(width) + be32(height) + [8, 2, 0, 0, 0]
        let data: [UInt8] = [0x78, 0x01, 0x01, 0x00, 0x00, 0xFF, 0xFF, 0x00, 0x00, 0x00, 0x01]
        return [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A] + chunk("IHDR", header) + chunk("IDAT", data) + chunk("IEND", [])
    }
}
