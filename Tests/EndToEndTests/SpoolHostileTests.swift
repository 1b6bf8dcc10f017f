import ExpenseCore
import ExpenseTestSupport
import Foundation
import Posix
import Testing

/// What a hostile or careless writer can put in the spool: each is
/// rejected with a reason (or taken, when it is a valid file with an odd
/// name), never read through a link, and never hangs the daemon.
@Suite struct SpoolHostileTests {
    let daemon: DaemonHarness
    var spool: String { daemon.spoolDirectory }
    var staging: String { daemon.directory.at("staging") }

    init() throws {
        daemon = DaemonHarness(arguments: ["--spool-settle", "100ms", "--spool-max-bytes", "64K"], spool: true)
        try daemon.start()
    }

    func name(_ text: String) -> FileName { FileName(text)! }

    func reason(_ file: String) throws -> String { try daemon.rejectionReason(name(file)) }

    func rejectedCount() throws -> Int64? {
        try daemon.request(["op": "status"])["result"]?["spool_rejected"]?.intValue
    }

    /// The status count follows the move into `rejected/` by a moment.
    func waitForRejectedCount(_ count: Int64) throws {
        try waitUntil("status to count \(count) rejected files") {
            try rejectedCount() == count
        }
    }

    /// Stops the daemon for the length of `body` (it reads no events), so a
    /// test can set things up that it must see only afterwards.
    func whilePaused(_ body: () throws -> Void) throws {
        let process = try #require(daemon.process)
        defer { process.thaw() }
        try process.freeze()
        try body()
    }

    /// Sees every open of, or read from, the file at `path` (by anyone).
    final class OpenWatch {
        let inotify: Inotify
        init(_ path: String) throws {
            inotify = try Inotify()
            try inotify.addWatch(path, [.open, .access])
        }
        var events: [Inotify.Event] { (try? inotify.readEvents()) ?? [] }
    }

    @Test func symlinkToAFileOutsideTheSpool_isRejectedAndTheFileIsNeverRead() throws {
        defer { daemon.stop() }
        let outside = daemon.directory.at("outside.jpg")
        SampleReceipt.write(SpoolDrop.receipt(.jpeg, tag: 1), to: outside)
        let sidecar = daemon.directory.at("outside.json")
        SampleReceipt.write(SpoolDrop.sidecar(ExpenseFields(merchant: "M", amount: "1.00", currency: "EUR", date: "2026-01-01")), to: sidecar)
        let watches = [try OpenWatch(outside), try OpenWatch(sidecar)]
        // Made in the spool, and renamed in.
        try FileManager.default.createSymbolicLink(atPath: "\(spool)/made.jpg", withDestinationPath: outside)
        try FileManager.default.createDirectory(atPath: staging, withIntermediateDirectories: true)
        try FileManager.default.createSymbolicLink(atPath: "\(staging)/moved.json", withDestinationPath: sidecar)
        try FileSystem.rename("\(staging)/moved.json", to: "\(spool)/moved.json")
        try daemon.waitForSpool(expenses: 0, rejected: 2)
        #expect(try reason("made.jpg").contains("reason: is a symbolic link\n"))
        #expect(try reason("moved.json").contains("reason: is a symbolic link\n"))
        #expect(try FileSystem.status("\(spool)/rejected/made.jpg", followLinks: false).kind == .symbolicLink, "moved, not copied")
        #expect(watches.allSatisfy { $0.events.isEmpty }, "the daemon never opened what the links point to")
        try waitForRejectedCount(2)
    }

    @Test func fifo_isRejectedUnopenedAndTheDaemonCarriesOn() throws {
        defer { daemon.stop() }
        try FileManager.default.createDirectory(atPath: staging, withIntermediateDirectories: true)
        var watches: [OpenWatch] = []
        try whilePaused {
            #expect(mkfifo("\(spool)/made.jpg", 0o644) == 0)
            #expect(mkfifo("\(staging)/moved.json", 0o644) == 0)
            watches = [try OpenWatch("\(spool)/made.jpg"), try OpenWatch("\(staging)/moved.json")]
            try FileSystem.rename("\(staging)/moved.json", to: "\(spool)/moved.json")
        }
        try daemon.waitForSpool(expenses: 0, rejected: 2)
        #expect(try reason("made.jpg").contains("reason: is a FIFO (named pipe)\n"))
        #expect(try reason("moved.json").contains("reason: is a FIFO (named pipe)\n"))
        #expect(watches.allSatisfy { $0.events.isEmpty }, "never opened")
        // Not hung: it answers and takes the next drop.
        try SpoolDrop.byRename(SpoolDrop.receipt(.jpeg, tag: 2), as: name("after.jpg"), in: spool, staging: staging)
        try daemon.waitForSpool(expenses: 1, rejected: 2)
    }

    @Test func socket_isRejected() throws {
        defer { daemon.stop() }
        let socket = try UnixSocket.listen(path: "\(spool)/listening.pdf", mode: 0o600)
        try daemon.waitForSpool(expenses: 0, rejected: 1)
        #expect(try reason("listening.pdf").contains("reason: is a socket\n"))
        withExtendedLifetime(socket) {}
    }

    @Test func deviceNode_isRejectedUnopened() throws {
        defer { daemon.stop() }
        var watch: OpenWatch?
        try whilePaused {
            // A character device: /dev/null's numbers (1, 3). Needs CAP_MKNOD.
            let rc = mknod("\(spool)/device.png", S_IFCHR | 0o600, 259)
            #expect(rc == 0, "mknod: \(String(cString: strerror(errno)))")
            watch = try OpenWatch("\(spool)/device.png")
        }
        try daemon.waitForSpool(expenses: 0, rejected: 1)
        #expect(try reason("device.png").contains("reason: is a character device\n"))
        #expect(watch?.events.isEmpty == true, "never opened")
    }

    @Test func hardLinkToAFileElsewhere_isRejectedAndNeverRead() throws {
        defer { daemon.stop() }
        let outside = daemon.directory.at("elsewhere.jpg")
        SampleReceipt.write(SpoolDrop.receipt(.jpeg, tag: 3), to: outside)
        let watch = try OpenWatch(outside)
        #expect(link(outside, "\(spool)/linked.jpg") == 0)
        try FileManager.default.createDirectory(atPath: staging, withIntermediateDirectories: true)
        #expect(link(outside, "\(staging)/moved.jpg") == 0)
        try FileSystem.rename("\(staging)/moved.jpg", to: "\(spool)/moved.jpg")
        try daemon.waitForSpool(expenses: 0, rejected: 2)
        #expect(try reason("linked.jpg").contains("hard links; only files with exactly one are taken\n"))
        #expect(try reason("moved.jpg").contains("hard links; only files with exactly one are taken\n"))
        #expect(watch.events.isEmpty, "never opened")
    }

    @Test func oversizeFiles_areRejected() throws {
        defer { daemon.stop() }
        try SpoolDrop.byRename(SpoolDrop.receipt(.jpeg, tag: 4, size: 65 * 1024), as: name("big.jpg"), in: spool, staging: staging)
        var huge = Array(#"{"comment":""#.utf8) + [UInt8](repeating: 0x61, count: 65 * 1024)
        huge += Array(#""}"#.utf8)
        try SpoolDrop.byRename(huge, as: name("huge.json"), in: spool, staging: staging)
        try SpoolDrop.byRename(SpoolDrop.receipt(.jpeg, tag: 5, size: 64 * 1024), as: name("limit.jpg"), in: spool, staging: staging)
        try daemon.waitForSpool(expenses: 1, rejected: 2)
        #expect(try reason("big.jpg").contains("reason: is larger than the limit of 65536 bytes (66560 bytes)\n"))
        #expect(try reason("huge.json").contains("reason: is larger than the limit of 65536 bytes"))
    }

    @Test func theKindComesFromTheBytes_andWhatIsNoReceiptIsRejected() throws {
        defer { daemon.stop() }
        let jpeg = SpoolDrop.receipt(.jpeg, tag: 6)
        try SpoolDrop.byRename(jpeg, as: name("photo.pdf"), in: spool, staging: staging)
        try SpoolDrop.byRename(Array("hello".utf8), as: name("text.jpg"), in: spool, staging: staging)
        try SpoolDrop.byRename([], as: name("empty.png"), in: spool, staging: staging)
        try daemon.waitForSpool(expenses: 1, rejected: 2)
        #expect(daemon.receiptFiles().count == 1 && daemon.receiptFiles()[0].hasSuffix(".jpg"), "a JPEG named .pdf is a JPEG")
        #expect(try reason("text.jpg").contains("reason: is not a JPEG, PNG, PDF, HEIF, WebP, TIFF, PNM or BMP file (by its bytes)\n"))
        #expect(try reason("empty.png").contains("reason: is empty\n"))
        try waitForRejectedCount(2)
    }

    @Test func malformedSidecar_isRejectedWithItsReceipt() throws {
        defer { daemon.stop() }
        try SpoolDrop.byRename([0x7B, 0x22, 0xFF, 0x22, 0x3A, 0x22, 0x22, 0x7D], as: name("a.json"), in: spool, staging: staging)
        try SpoolDrop.byRename(SpoolDrop.receipt(.jpeg, tag: 7), as: name("a.jpg"), in: spool, staging: staging)
        try SpoolDrop.byRename(Array("{\"merchant\": \"Caf".utf8), as: name("b.json"), in: spool, staging: staging)
        try SpoolDrop.byRename(SpoolDrop.receipt(.png, tag: 8), as: name("b.png"), in: spool, staging: staging)
        try daemon.waitForSpool(expenses: 0, rejected: 4)
        #expect(try reason("a.json").contains("reason: sidecar is not valid UTF-8\n"))
        #expect(try reason("a.jpg").contains("reason: its sidecar 'a.json' was rejected\n"))
        #expect(try reason("b.json").contains("reason: sidecar is not valid JSON"))
        #expect(try reason("b.png").contains("reason: its sidecar 'b.json' was rejected\n"))
    }

    @Test func invalidSidecar_isRejectedWithAReasonNamingTheField() throws {
        defer { daemon.stop() }
        let drops: [(String, String)] = [
            ("unknown.json", #"{"merchant":"M","amount":"1.00","currency":"EUR","date":"2026-01-01","vat":"VAT"}"#),
            ("currency.json", #"{"merchant":"M","amount":"1.00","currency":"XXY","date":"2026-01-01"}"#),
            ("nodate.json", #"{"merchant":"M","amount":"1.00","currency":"EUR"}"#),
            ("number.json", #"{"merchant":"M","amount":1,"currency":"EUR","date":"2026-01-01"}"#),
        ]
        for (file, text) in drops { try SpoolDrop.byRename(Array(text.utf8), as: name(file), in: spool, staging: staging) }
        try daemon.waitForSpool(expenses: 0, rejected: 4)
        #expect(try reason("unknown.json").contains("reason: sidecar field 'vat' is not an expense field"))
        #expect(try reason("currency.json").contains("reason: sidecar field currency: 'XXY' is not an ISO 4217 currency code\n"))
        #expect(try reason("nodate.json").contains("reason: sidecar field date: required for an expense without a receipt\n"))
        #expect(try reason("number.json").contains("reason: sidecar field 'amount' must be a string, got a number\n"))
        #expect(!daemon.log.contains("1.00"), "no amounts in the log")
    }

    @Test func unknownExtensions_areRejected() throws {
        defer { daemon.stop() }
        for file in ["notes.txt", "no-extension", "archive.tar.gz", "photo.jpg.part"] {
            try SpoolDrop.inPlace(Array("data".utf8), as: name(file), in: spool)
        }
        try daemon.waitForSpool(expenses: 0, rejected: 4)
        #expect(try reason("notes.txt").contains("reason: has an unknown extension '.txt'; taken are .jpg, .jpeg, .png, .pdf and .json\n"))
        #expect(try reason("no-extension").contains("reason: has no extension;"))
        #expect(try reason("photo.jpg.part").contains("unknown extension '.part'"))
    }

    @Test func namesWithNewlines_areTakenAndLoggedOnOneLine() throws {
        defer { daemon.stop() }
        try SpoolDrop.byRename(SpoolDrop.receipt(.jpeg, tag: 9), as: name("two\nlines.jpg"), in: spool, staging: staging)
        try SpoolDrop.byRename(Array("x".utf8), as: name("fake\n<3>forged.gif"), in: spool, staging: staging)
        try daemon.waitForSpool(expenses: 1, rejected: 1)
        #expect(try daemon.rejectedEntries().contains(name("fake\n<3>forged.gif")), "the file keeps its name")
        #expect(try reason("fake\n<3>forged.gif").hasPrefix("name: fake\\x0a<3>forged.gif\nreason: "))
        #expect(daemon.log.contains("Rejected spool file 'fake\\x0a<3>forged.gif'"))
        #expect(!daemon.log.contains("\n<3>forged"), "no forged log line")
        #expect(daemon.log.contains("Queued expense from spool file 'two\\x0alines.jpg'"))
    }

    @Test func namesThatAreNotUTF8_areTakenPairedAndRejectedSafely() throws {
        defer { daemon.stop() }
        let stem: [UInt8] = [0xFF, 0xFE, 0x80]
        let fields = ExpenseFields(merchant: "Raw", amount: "2.00", currency: "USD", date: "2026-02-02")
        try SpoolDrop.byRename([(FileName(bytes: stem + Array(".json".utf8))!, SpoolDrop.sidecar(fields)),
                                (FileName(bytes: stem + Array(".pdf".utf8))!, SpoolDrop.receipt(.pdf, tag: 10))], in: spool, staging: staging)
        let bad = FileName(bytes: [0xC3, 0x28] + Array(".gif".utf8))!
        try SpoolDrop.byRename(Array("x".utf8), as: bad, in: spool, staging: staging)
        try daemon.waitForSpool(expenses: 1, rejected: 1)
        #expect(try daemon.queuedExpenses().map(\.fields) == [fields], "paired by their raw stem")
        #expect(try daemon.rejectedEntries().contains(bad))
        #expect(try daemon.rejectionReason(bad).hasPrefix("name: \\xc3(.gif\n"))
    }

    @Test func namesWithLeadingDashes_areOrdinaryNames() throws {
        defer { daemon.stop() }
        try SpoolDrop.byRename(SpoolDrop.receipt(.jpeg, tag: 11), as: name("-rf.jpg"), in: spool, staging: staging)
        let fields = ExpenseFields(merchant: "Dash", amount: "3.00", currency: "EUR", date: "2026-03-03")
        try SpoolDrop.byRename(SpoolDrop.sidecar(fields), as: name("--help.json"), in: spool, staging: staging)
        try SpoolDrop.byRename(Array("x".utf8), as: name("-x.gif"), in: spool, staging: staging)
        try daemon.waitForSpool(expenses: 2, rejected: 1)
        #expect(try reason("-x.gif").hasPrefix("name: -x.gif\n"))
    }

    @Test func longestNames_areTakenOrRejectedUnderAShortenedName() throws {
        defer { daemon.stop() }
        let long = String(repeating: "n", count: 251)
        try SpoolDrop.byRename(SpoolDrop.receipt(.jpeg, tag: 12), as: name(long + ".jpg"), in: spool, staging: staging)
        try SpoolDrop.byRename(Array("x".utf8), as: name(long + ".gif"), in: spool, staging: staging)
        try SpoolDrop.byRename(Array("y".utf8), as: name(long + ".txt"), in: spool, staging: staging)
        try daemon.waitForSpool(expenses: 1, rejected: 2)
        let rejected = try daemon.rejectedEntries().filter { $0.lowercasedExtension != "reason" }
        #expect(rejected.map(\.displayName).sorted() == [String(repeating: "n", count: 244), String(repeating: "n", count: 244) + ".1"].sorted(),
                "shortened to leave room for '.reason', and told apart by a suffix")
        let reasons = try rejected.map { try daemon.rejectionReason($0) }
        #expect(reasons.contains { $0.hasPrefix("name: \(long).gif\n") }, "the reason has the whole name")
        #expect(reasons.contains { $0.hasPrefix("name: \(long).txt\n") })
    }

    @Test func namesThatCollideInRejected_getNumericSuffixesAndNothingIsOverwritten() throws {
        defer { daemon.stop() }
        for round in 0..<3 {
            try SpoolDrop.byRename(Array("round \(round)".utf8), as: name("same.gif"), in: spool, staging: staging)
            try daemon.waitForSpool(expenses: 0, rejected: round + 1)
        }
        #expect(try daemon.rejectedEntries().map(\.displayName) == [
            "same.gif", "same.gif.1", "same.gif.1.reason", "same.gif.2", "same.gif.2.reason", "same.gif.reason",
        ])
        for (file, round) in [("same.gif", 0), ("same.gif.1", 1), ("same.gif.2", 2)] {
            #expect(FileManager.default.contents(atPath: "\(spool)/rejected/\(file)") == Data("round \(round)".utf8))
        }
        try waitForRejectedCount(3)
    }
}

/// Spool directories the daemon must refuse, saying why.
@Suite struct SpoolDirectoryCheckTests {
    /// Starts expensed on `daemon`'s configuration and waits for it to exit.
    static func exitStatus(_ daemon: DaemonHarness) throws -> (Int32, String) {
        let child = try ChildProcess(BuiltProducts.path("expensed"), daemon.arguments, outputDirectory: daemon.directory.path)
        guard let status = child.waitForExit(timeout: 20) else {
            child.crash()
            throw TestFailure("expensed started on a spool it must refuse")
        }
        return (status, child.standardError)
    }

    @Test func worldWritableWithoutTheStickyBit_isRefused() throws {
        let daemon = DaemonHarness(spool: true)
        chmod(daemon.spoolDirectory, 0o777)
        let (status, log) = try Self.exitStatus(daemon)
        #expect(status == 78)
        #expect(log.contains("Refusing spool directory '\(daemon.spoolDirectory)': it is world-writable without the sticky bit (mode 777)"))
    }

    @Test func worldWritableWithTheStickyBit_isUsed() throws {
        let daemon = DaemonHarness(arguments: ["--spool-settle", "50ms"], spool: true)
        chmod(daemon.spoolDirectory, 0o1777)
        try daemon.start()
        defer { daemon.stop() }
        try SpoolDrop.inPlace(SpoolDrop.receipt(.png, tag: 1), as: FileName("a.png")!, in: daemon.spoolDirectory)
        try daemon.waitForSpool(expenses: 1, rejected: 0)
    }

    @Test func rejectedThatIsALink_isRefused() throws {
        let daemon = DaemonHarness(spool: true)
        try FileManager.default.createDirectory(atPath: daemon.directory.at("elsewhere"), withIntermediateDirectories: true)
        try FileManager.default.createSymbolicLink(atPath: "\(daemon.spoolDirectory)/rejected", withDestinationPath: daemon.directory.at("elsewhere"))
        let (status, log) = try Self.exitStatus(daemon)
        #expect(status == 78)
        #expect(log.contains("rejected' is not a directory (a link or a file); move it away"))
    }

    @Test func spoolThatIsAFile_isRefused() throws {
        let daemon = DaemonHarness()
        SampleReceipt.write([1], to: daemon.directory.at("file"))
        daemon.arguments += ["--spool-dir", daemon.directory.at("file")]
        let (status, log) = try Self.exitStatus(daemon)
        #expect(status == 78)
        #expect(log.contains("Spool directory '\(daemon.directory.at("file"))' is not a directory"))
    }

    @Test func fileTheDaemonCannotRead_isRejectedSayingSo() throws {
        // expensed as an unprivileged user (nobody) that owns its folders.
        let daemon = DaemonHarness(arguments: ["--spool-settle", "50ms"], spool: true)
        for path in [daemon.directory.path, daemon.spoolDirectory] { #expect(chown(path, 65534, 65534) == 0) }
        chmod(daemon.spoolDirectory, 0o1730)
        let child = try ChildProcess("/usr/bin/setpriv", ["--reuid=65534", "--regid=65534", "--clear-groups", "--",
                                                          BuiltProducts.path("expensed")] + daemon.arguments,
                                     outputDirectory: daemon.directory.path, name: "expensed")
        defer { child.stop() }
        try waitUntil(timeout: 20, "expensed to answer") {
            guard child.isRunning else { throw TestFailure("expensed exited: \(child.standardError)") }
            return (try? daemon.request(["op": "status"])) != nil
        }
        let staging = daemon.directory.at("staging")
        try SpoolDrop.byRename(SpoolDrop.receipt(.jpeg, tag: 1), as: FileName("readable.jpg")!, in: daemon.spoolDirectory, staging: staging)
        try FileManager.default.createDirectory(atPath: staging, withIntermediateDirectories: true)
        SampleReceipt.write(SpoolDrop.receipt(.jpeg, tag: 2), to: "\(staging)/private.jpg")
        chmod("\(staging)/private.jpg", 0o600)
        try FileSystem.rename("\(staging)/private.jpg", to: "\(daemon.spoolDirectory)/private.jpg")
        try waitUntil(timeout: 20, "both files to be taken") {
            (try? daemon.request(["op": "status"])["result"]?["queued"]?.intValue) == 2
                && FileSystem.exists("\(daemon.spoolDirectory)/rejected/private.jpg")
        }
        let reason = try String(contentsOfFile: "\(daemon.spoolDirectory)/rejected/private.jpg.reason", encoding: .utf8)
        #expect(reason.contains("reason: cannot be read by expensed (uid 65534, mode 600, owner uid 0): Permission denied\n"))
        // The taken file leaves the spool a moment after its job is queued.
        try? waitUntil(timeout: 5, "the spool to empty") { try daemon.spoolEntries().isEmpty }
        #expect(try daemon.spoolEntries().isEmpty, "the daemon, owning the sticky directory, removed root's file it took")
    }

    @Test func missingSpool_isCreated() throws {
        let daemon = DaemonHarness()
        let path = daemon.directory.at("new/spool")
        daemon.arguments += ["--spool-dir", path]
        try daemon.start()
        defer { daemon.stop() }
        #expect(try FileSystem.status(path).mode == 0o1730)
        #expect(daemon.log.contains("Created spool directory '\(path)' with mode 1730"))
    }
}
