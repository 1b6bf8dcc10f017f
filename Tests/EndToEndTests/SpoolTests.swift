import Digest
import ExpenseCore
import ExpenseTestSupport
import Foundation
import Posix
import Synchronization
import Testing

/// The spool end to end: real daemons, real files, several writers.
@Suite struct SpoolTests {
    /// What one drop must become.
    enum Expected {
        case expense(ExpenseFields, receipt: [UInt8]?)
        case rejected([String])
    }

    /// One drop: what a writer does, in how many files, and what must come of it.
    struct Drop: Sendable {
        let files: Int
        let expected: Expected
        let act: @Sendable (_ spool: String, _ staging: String) throws -> Void
    }

    static func fields(_ i: Int) -> ExpenseFields {
        ExpenseFields(merchant: "Drop \(i)", amount: "\(i).50", currency: "EUR", date: String(format: "2026-01-%02d", i % 28 + 1),
                      category: i % 2 == 0 ? "Travel" : nil, comment: i % 3 == 0 ? "line one\nline two" : nil)
    }

    /// The thirteen kinds of drop, by `i % 13`: valid ones first (cp in
    /// place, written in place, renamed in; sidecar before and after its
    /// receipt; a sidecar alone), then invalid ones.
    static func drop(_ i: Int) -> Drop {
        @Sendable func name(_ text: String) -> FileName { FileName(text)! }
        let f = fields(i)
        switch i % 13 {
        case 0:
            let bytes = SpoolDrop.receipt(.jpeg, tag: i)
            return Drop(files: 1, expected: .expense(ExpenseFields(), receipt: bytes)) { spool, staging in
                try SpoolDrop.byRename(bytes, as: name("d\(i).jpg"), in: spool, staging: staging)
            }
        case 1:
            let bytes = SpoolDrop.receipt(.png, tag: i)
            return Drop(files: 1, expected: .expense(ExpenseFields(), receipt: bytes)) { spool, _ in
                try SpoolDrop.inPlace(bytes, as: name("d\(i).png"), in: spool)
            }
        case 2:
            let bytes = SpoolDrop.receipt(.pdf, tag: i)
            return Drop(files: 1, expected: .expense(ExpenseFields(), receipt: bytes)) { spool, staging in
                let source = "\(staging)/source-\(i).pdf"
                SampleReceipt.write(bytes, to: source)
                try SpoolDrop.withCp(source, as: "d\(i).pdf", in: spool)
            }
        case 3:
            let bytes = SpoolDrop.receipt(.jpeg, tag: i)
            return Drop(files: 2, expected: .expense(f, receipt: bytes)) { spool, staging in
                try SpoolDrop.byRename(SpoolDrop.sidecar(f), as: name("d\(i).json"), in: spool, staging: staging)
                try SpoolDrop.byRename(bytes, as: name("d\(i).JPEG"), in: spool, staging: staging)
            }
        case 4:
            let bytes = SpoolDrop.receipt(.pdf, tag: i)
            return Drop(files: 2, expected: .expense(f, receipt: bytes)) { spool, staging in
                try SpoolDrop.byRename(bytes, as: name("d\(i).pdf"), in: spool, staging: staging)
                try SpoolDrop.byRename(SpoolDrop.sidecar(f), as: name("d\(i).json"), in: spool, staging: staging)
            }
        case 5:
            let bytes = SpoolDrop.receipt(.jpeg, tag: i)
            return Drop(files: 2, expected: .expense(f, receipt: bytes)) { spool, staging in
                try SpoolDrop.inPlace(SpoolDrop.sidecar(f), as: name("d\(i).json"), in: spool)
                let source = "\(staging)/source-\(i).jpg"
                SampleReceipt.write(bytes, to: source)
                try SpoolDrop.withCp(source, as: "d\(i).jpg", in: spool)
            }
        case 6:
            return Drop(files: 1, expected: .expense(f, receipt: nil)) { spool, staging in
                try SpoolDrop.byRename(SpoolDrop.sidecar(f), as: name("d\(i).json"), in: spool, staging: staging)
            }
        case 7:
            return Drop(files: 1, expected: .rejected(["d\(i).jpg"])) { spool, staging in
                try SpoolDrop.byRename(Array("not an image".utf8), as: name("d\(i).jpg"), in: spool, staging: staging)
            }
        case 8:
            return Drop(files: 1, expected: .rejected(["d\(i).gif"])) { spool, _ in
                try SpoolDrop.inPlace(Array("GIF89a".utf8), as: name("d\(i).gif"), in: spool)
            }
        case 9:
            return Drop(files: 2, expected: .rejected(["d\(i).json", "d\(i).jpg"])) { spool, staging in
                try SpoolDrop.byRename(Array("{\"merchant\":".utf8), as: name("d\(i).json"), in: spool, staging: staging)
                try SpoolDrop.byRename(SpoolDrop.receipt(.jpeg, tag: i), as: name("d\(i).jpg"), in: spool, staging: staging)
            }
        case 10:
            return Drop(files: 1, expected: .rejected(["d\(i).json"])) { spool, staging in
                try SpoolDrop.byRename(SpoolDrop.sidecar(ExpenseFields(merchant: "Drop \(i)")), as: name("d\(i).json"), in: spool, staging: staging)
            }
        case 11:
            return Drop(files: 2, expected: .rejected(["d\(i).json", "d\(i).png"])) { spool, staging in
                try SpoolDrop.byRename(Array(#"{"merchant":"Drop","vendor":"x"}"#.utf8), as: name("d\(i).json"), in: spool, staging: staging)
                try SpoolDrop.byRename(SpoolDrop.receipt(.png, tag: i), as: name("d\(i).png"), in: spool, staging: staging)
            }
        default:
            return Drop(files: 1, expected: .rejected(["d\(i).png"])) { spool, _ in
                try SpoolDrop.inPlace([], as: name("d\(i).png"), in: spool)
            }
        }
    }

    static func key(_ fields: ExpenseFields, _ digest: String?) -> String {
        ExpenseFields.names.map { fields[$0] ?? "-" }.joined(separator: "|") + "|" + (digest ?? "-")
    }

    static func digest(_ bytes: [UInt8]?) -> String? {
        bytes.map { Hex.encode(SHA256.hash($0)) }
    }

    @Test func severalWriters_200MixedFiles_eachValidDropIsOneJobAndEachInvalidOneIsRejected() throws {
        // A settle time long enough for a sidecar renamed right after its
        // receipt on a loaded machine.
        let daemon = DaemonHarness(arguments: ["--spool-settle", "1s"], spool: true)
        try daemon.start()
        defer { daemon.stop() }
        var drops: [Drop] = []
        var files = 0
        while files < 200 {
            var next = drops.count
            // The last slots take one-file drops, to land on 200 exactly.
            if files + Self.drop(next).files > 200 { next = drops.count / 13 * 13 + 13 }
            let drop = Self.drop(next)
            drops.append(drop)
            files += drop.files
        }
        #expect(files == 200)

        let writers = 4
        let failures = Mutex<[String]>([])
        let all = drops
        DispatchQueue.concurrentPerform(iterations: writers) { writer in
            let staging = daemon.directory.at("staging-\(writer)")
            try? FileManager.default.createDirectory(atPath: staging, withIntermediateDirectories: true)
            for index in stride(from: writer, to: all.count, by: writers) {
                do { try all[index].act(daemon.spoolDirectory, staging) } catch { failures.withLock { $0.append("\(index): \(error)") } }
            }
        }
        #expect(failures.withLock { $0 }.isEmpty)

        var expectedKeys: [String] = []
        var expectedRejected: [String] = []
        for drop in drops {
            switch drop.expected {
            case .expense(let fields, let receipt): expectedKeys.append(Self.key(fields, Self.digest(receipt)))
            case .rejected(let names): expectedRejected += names
            }
        }
        try daemon.waitForSpool(expenses: expectedKeys.count, rejected: expectedRejected.count, timeout: 60)
        let queued = try daemon.queuedExpenses()
        #expect(queued.map { Self.key($0.fields, $0.receiptDigest) }.sorted() == expectedKeys.sorted(),
                "every valid drop is exactly one job, with its fields and its receipt's bytes")
        let rejected = try daemon.rejectedEntries()
        #expect(rejected.filter { $0.lowercasedExtension != "reason" }.map(\.displayName).sorted() == expectedRejected.sorted())
        for name in expectedRejected {
            #expect(try daemon.rejectionReason(FileName(name)!).contains("reason: "), "\(name) has a reason")
        }
        #expect(try daemon.spoolEntries().isEmpty, "the spool is otherwise empty")
        // Forgotten after the file's removal and the spool's fsync.
        try waitUntil(timeout: 10, "the intake records to be forgotten") {
            try QueuedExpense.intakeRecords(stateDirectory: daemon.stateDirectory) == 0
        }
        #expect(daemon.receiptFiles().count == queued.filter { $0.receiptDigest != nil }.count, "no stray receipt copy")
        // The status count follows the move into `rejected/` by a moment.
        try waitUntil("status to count \(expectedRejected.count) rejected files") {
            try daemon.request(["op": "status"])["result"]?["spool_rejected"]?.intValue == Int64(expectedRejected.count)
        }
    }

    @Test func filesDroppedWhileTheDaemonIsStopped_areTakenAtStartUp() throws {
        let daemon = DaemonHarness(arguments: ["--spool-settle", "200ms"], spool: true)
        try daemon.start()
        #expect(daemon.stop() == 0)
        let staging = daemon.directory.at("staging")
        let pair = SpoolDrop.receipt(.jpeg, tag: 1), alone = SpoolDrop.receipt(.pdf, tag: 2)
        try SpoolDrop.byRename(SpoolDrop.sidecar(Self.fields(1)), as: FileName("pair.json")!, in: daemon.spoolDirectory, staging: staging)
        try SpoolDrop.byRename(pair, as: FileName("pair.jpg")!, in: daemon.spoolDirectory, staging: staging)
        try SpoolDrop.inPlace(alone, as: FileName("alone.pdf")!, in: daemon.spoolDirectory)
        try SpoolDrop.inPlace(SpoolDrop.sidecar(Self.fields(3)), as: FileName("fields.json")!, in: daemon.spoolDirectory)
        try SpoolDrop.inPlace(Array("GIF89a".utf8), as: FileName("bad.gif")!, in: daemon.spoolDirectory)
        #expect(mkfifo("\(daemon.spoolDirectory)/pipe.jpg", 0o644) == 0)

        try daemon.start()
        defer { daemon.stop() }
        try daemon.waitForSpool(expenses: 3, rejected: 2)
        #expect(try daemon.queuedExpenses().map { Self.key($0.fields, $0.receiptDigest) }.sorted() == [
            Self.key(Self.fields(1), Self.digest(pair)), Self.key(ExpenseFields(), Self.digest(alone)), Self.key(Self.fields(3), nil),
        ].sorted())
        #expect(try daemon.rejectionReason(FileName("pipe.jpg")!).contains("reason: is a FIFO"))
    }

    @Test func contribSpoolDrop_dropsPairsTogetherLoneFilesAloneAndNeverReplaces() throws {
        let daemon = DaemonHarness(arguments: ["--spool-settle", "100ms"], spool: true)
        let outbox = daemon.directory.at("outbox")
        try FileManager.default.createDirectory(atPath: outbox, withIntermediateDirectories: true)
        let script = "\(BuiltProducts.packageRoot)/contrib/spool-drop"
        func write(_ bytes: [UInt8], _ name: String) { SampleReceipt.write(bytes, to: "\(outbox)/\(name)") }
        func run(_ arguments: [String]) throws {
            let result = try runCommand("/bin/sh", [script, "-d", daemon.spoolDirectory] + arguments)
            #expect(result.status == 0, "\(result.stderr)")
        }
        // While the daemon is stopped, the same name twice: the second is renamed, not replaced.
        let first = SpoolDrop.receipt(.jpeg, tag: 1), second = SpoolDrop.receipt(.jpeg, tag: 2)
        write(first, "-same.jpg")
        try run(["--", "\(outbox)/-same.jpg"])
        write(second, "-same.jpg")
        try run(["-m", "--", "\(outbox)/-same.jpg"])
        #expect(try daemon.spoolEntries().map(\.displayName) == ["-same-2.jpg", "-same.jpg"])

        try daemon.start()
        defer { daemon.stop() }
        let pair = SpoolDrop.receipt(.pdf, tag: 3), lone = SpoolDrop.receipt(.png, tag: 4)
        write(pair, "a b.pdf")
        write(SpoolDrop.sidecar(Self.fields(5)), "a b.json")
        write(lone, "lone.png")
        write(SpoolDrop.sidecar(Self.fields(6)), "fields.json")
        let names = try FileManager.default.contentsOfDirectory(atPath: outbox).sorted().map { "\(outbox)/\($0)" }
        try run(["-m"] + names)
        try daemon.waitForSpool(expenses: 5, rejected: 0)
        #expect(try daemon.queuedExpenses().map { Self.key($0.fields, $0.receiptDigest) }.sorted() == [
            Self.key(ExpenseFields(), Self.digest(first)), Self.key(ExpenseFields(), Self.digest(second)),
            Self.key(Self.fields(5), Self.digest(pair)), Self.key(ExpenseFields(), Self.digest(lone)), Self.key(Self.fields(6), nil),
        ].sorted())
        #expect(try FileManager.default.contentsOfDirectory(atPath: outbox).isEmpty, "-m removed what was dropped")
    }

    @Test func watchdog_stopsPingingWhenTheSpoolWatcherIsWedged() throws {
        let dir = TemporaryDirectory()
        let listener = try NotifyListener(path: dir.at("notify"))
        // The fifth liveness probe of the spool watcher hangs its thread forever.
        let daemon = DaemonHarness(environment: ["NOTIFY_SOCKET": listener.path, "WATCHDOG_USEC": "200000",
                                                 "EXPENSED_FAULT": "spool-probe:hang@5"], spool: true)
        try daemon.start()
        defer { daemon.crash() }
        try daemon.waitForWithheldPings(hangingAt: "spool-probe")
        // What it sent before is queued on the socket, read here at once.
        let pings = listener.collect(timeout: 0.3).filter { $0 == "WATCHDOG=1" }.count
        #expect(pings >= 1 && pings <= 5, "\(pings) pings before the wedge: one at start, more at healthy ticks, the fifth probe hangs")
        let later = listener.collect(timeout: 1).filter { $0 == "WATCHDOG=1" }
        #expect(later.isEmpty, "no pings once the spool watcher is wedged")
    }

    @Test func inotifyQueueOverflow_losesNothing() throws {
        let daemon = DaemonHarness(arguments: ["--spool-settle", "100ms"], spool: true)
        try daemon.start()
        defer { daemon.stop() }
        let process = try #require(daemon.process)
        let limit = Int((try? String(contentsOfFile: "/proc/sys/fs/inotify/max_queued_events", encoding: .utf8))?
            .trimmingCharacters(in: .whitespacesAndNewlines) ?? "") ?? 16384

        // Stopped, the daemon reads nothing: the kernel's queue fills with
        // the events of files it ignores (two each: created, closed), and
        // the real drops after them are lost from it.
        var resumed = false
        defer { if !resumed { process.thaw() } }
        try process.freeze()
        let spool = try FileDescriptor.open(daemon.spoolDirectory, [.readOnly, .directory])
        var ignored: Set<FileName> = []
        for n in 0..<(limit / 2 + 100) {
            let name = FileName(".writing-\(n)")!
            _ = try spool.openAt(name, [.writeOnly, .create, .exclusive], mode: 0o644)
            ignored.insert(name)
        }
        var expected: [String] = []
        for n in 0..<40 {
            let bytes = SpoolDrop.receipt(.jpeg, tag: n)
            try SpoolDrop.byRename(bytes, as: FileName("r\(n).jpg")!, in: daemon.spoolDirectory, staging: daemon.directory.at("staging"))
            expected.append(Self.key(ExpenseFields(), Self.digest(bytes)))
        }
        process.thaw()
        resumed = true

        try daemon.waitForSpool(expenses: 40, rejected: 0, keeping: ignored, timeout: 60)
        #expect(daemon.log.contains("inotify queue overflow"), "the queue did overflow")
        #expect(try daemon.queuedExpenses().map { Self.key($0.fields, $0.receiptDigest) }.sorted() == expected.sorted())
        #expect(Set(try daemon.spoolEntries()) == ignored, "dot names, being written, are left alone")
    }

    @Test func statusCountsTheFilesInRejected_afterARestartToo_andLessOnceSomeAreRemoved() throws {
        let daemon = DaemonHarness(arguments: ["--spool-settle", "100ms"], spool: true)
        try daemon.start()
        let staging = daemon.directory.at("staging")
        // Rejected as 'notes.reason.1': still one file, not a reason.
        for name in ["a.gif", "b.txt", "notes.reason"] {
            try SpoolDrop.byRename(Array("x".utf8), as: FileName(name)!, in: daemon.spoolDirectory, staging: staging)
        }
        try daemon.waitForSpool(expenses: 0, rejected: 3)
        func count() throws -> Int64? { try daemon.request(["op": "status"])["result"]?["spool_rejected"]?.intValue }
        try waitUntil("status to count 3 rejected files") { try count() == 3 }
        #expect(daemon.stop() == 0)

        try daemon.start()
        defer { daemon.stop() }
        // Counted before the socket answers: read once.
        #expect(try count() == 3, "what rejected/ holds, not what was rejected since start")
        let text = try daemon.ctl(["status"]).stdout
        #expect(text.contains("Spool rejected:   3 (files in \(daemon.spoolDirectory)/rejected/, each with a .reason file)"), "\(text)")
        // The user deals with two of them.
        for name in ["a.gif", "a.gif.reason", "notes.reason.1", "notes.reason.1.reason"] {
            #expect(unlink("\(daemon.spoolDirectory)/rejected/\(name)") == 0, "\(name)")
        }
        try waitUntil("status to count 1 rejected file") { try count() == 1 }
        try SpoolDrop.byRename(Array("y".utf8), as: FileName("c.gif")!, in: daemon.spoolDirectory, staging: staging)
        try waitUntil("status to count 2 rejected files") { try count() == 2 }
    }
}
