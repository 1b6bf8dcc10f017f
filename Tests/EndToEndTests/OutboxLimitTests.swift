import Digest
import ExpenseCore
import ExpenseTestSupport
import Foundation
import Posix
import Testing

/// The bounded outbox end to end (docs/sync.md, "A bounded outbox"): a
/// real daemon, `expensectl`, the spool and `expense-server`. At its
/// limits an add is refused with exit 75 and a message naming the limit,
/// and a spool drop waits where it is; a state directory on a small file
/// system filled to `ENOSPC` refuses adds the same way, loses nothing
/// acknowledged, and does not stop the drain, which frees the room.
@Suite struct OutboxLimitTests {
    static let MiB = 1 << 20

    /// `add` arguments for a complete expense under `clientID`.
    static func add(_ merchant: String, clientID: String, receipt: String? = nil) -> [String] {
        ["add", "--merchant", merchant, "--amount", "1.00", "--currency", "EUR", "--date", "2026-11-29", "--client-id", clientID]
            + (receipt.map { ["--receipt", $0] } ?? [])
    }

    /// A PDF receipt of `size` bytes of its own (`tag`), written to `path`.
    /// - Returns: its SHA-256 (hex), as the server must have it: PDFs go as they are.
    @discardableResult
    static func receipt(_ path: String, tag: Int, size: Int) -> String {
        let bytes = SpoolDrop.receipt(.pdf, tag: tag, size: size)
        SampleReceipt.write(bytes, to: path)
        return Hex.encode(SHA256.hash(bytes))
    }

    @Test func atItsLimits_addsAreRefusedWithExit75_spoolDropsWaitInPlace_andAllIsTakenOnceTheServerIsBack() throws {
        let outside = TemporaryDirectory(prefix: "metrics")
        let metricsPath = outside.at("expensed.prom")
        let sync = try SyncHarness(daemonArguments: [
            "--outbox-max-jobs", "5", "--outbox-max-receipt-bytes", "3M", "--receipt-max-bytes", "2M", "--spool-max-bytes", "2M",
            "--disk-reserve", "0", "--metrics-file", metricsPath, "--spool-settle", "100ms",
        ], startServer: false, spool: true)
        let daemon = sync.daemon
        try daemon.start()
        defer { daemon.stop() }

        // Receipt bytes: 2 MiB held, 1.5 MiB more would pass 3 MiB.
        let ids = (0..<5).map { _ in ClientID.make() }
        let digestA = Self.receipt(daemon.directory.at("a.pdf"), tag: 1, size: 2 * Self.MiB)
        Self.receipt(daemon.directory.at("b.pdf"), tag: 2, size: 3 * Self.MiB / 2)
        let digestC = Self.receipt(daemon.directory.at("c.pdf"), tag: 3, size: Self.MiB / 2)
        #expect(try daemon.ctl(Self.add("A", clientID: ids[0], receipt: daemon.directory.at("a.pdf"))).status == 0)
        let b = try daemon.ctl(Self.add("B", clientID: ids[1], receipt: daemon.directory.at("b.pdf")))
        #expect(b.status == 75)
        #expect(b.stderr == "expensectl: the outbox is full: receipts held use 2.0 MiB of 3.0 MiB (outbox_max_receipt_bytes), and this receipt is 1.5 MiB; they leave as the server takes them; nothing was stored, try again later\n")
        #expect(try daemon.ctl(Self.add("C", clientID: ids[2], receipt: daemon.directory.at("c.pdf"))).status == 0)
        #expect(try daemon.ctl(Self.add("D", clientID: ids[3])).status == 0)
        // Jobs: A and C are two each, D one: five of five.
        let e = try daemon.ctl(Self.add("E", clientID: ids[4]))
        #expect(e.status == 75)
        #expect(e.stderr == "expensectl: the outbox is full: 5 jobs queued (limit 5, outbox_max_jobs), and this needs 1 more; they leave as the server takes them; nothing was stored, try again later\n")
        #expect(daemon.receiptFiles().count == 2, "nothing of the refused receipt was left: \(daemon.receiptFiles())")
        // A receipt attached by an edit is refused the same way, before it is copied.
        let attach = try daemon.ctl(["edit", TransactionID.derive(from: ids[3]), "--receipt", daemon.directory.at("c.pdf")])
        #expect(attach.status == 75)
        #expect(attach.stderr.hasPrefix("expensectl: the outbox is full: 5 jobs queued (limit 5, outbox_max_jobs), and this needs 1 more;"), "\(attach.stderr)")
        #expect(daemon.receiptFiles().count == 2)
        // A retry of A, whose answer a client may have lost, with its receipt: answered as its first try, full or not.
        let aAgain = try daemon.ctl(Self.add("A", clientID: ids[0], receipt: daemon.directory.at("a.pdf")) + ["--json"])
        #expect(aAgain.status == 0, "\(aAgain.stderr)")
        #expect(try JSONValue.parse(Array(aAgain.stdout.utf8))["duplicate"] == true, "\(aAgain.stdout)")
        #expect(daemon.receiptFiles().count == 2)
        #expect(try daemon.list().count == 3)
        let outbox = try #require(try daemon.ctlJSON(["status"])["outbox"])
        #expect(outbox["jobs"] == 5 && outbox["max_jobs"] == 5)
        #expect(outbox["receipt_bytes"] == .integer(Int64(5 * Self.MiB / 2)) && outbox["max_receipt_bytes"] == .integer(Int64(3 * Self.MiB)))

        // Spool drops beyond the limit stay where they are, not rejected.
        let staging = daemon.directory.at("staging")
        let scanBytes = SpoolDrop.receipt(.pdf, tag: 4, size: 100_000)
        try SpoolDrop.byRename(scanBytes, as: FileName("scan-1.pdf")!, in: daemon.spoolDirectory, staging: staging)
        try SpoolDrop.byRename(SpoolDrop.sidecar(ExpenseFields(merchant: "Lunch", amount: "9.50", currency: "EUR", date: "2026-11-30")),
                               as: FileName("lunch.json")!, in: daemon.spoolDirectory, staging: staging)
        try waitUntil(timeout: 20, "both spool files to wait for room") { try daemon.ctlJSON(["status"])["spool_waiting"] == 2 }
        let spooled = try FileManager.default.contentsOfDirectory(atPath: daemon.spoolDirectory).sorted()
        #expect(spooled == ["lunch.json", "rejected", "scan-1.pdf"])
        #expect(try FileManager.default.contentsOfDirectory(atPath: "\(daemon.spoolDirectory)/rejected").isEmpty)
        let status = try daemon.ctl(["status"])
        #expect(status.stdout.contains("Spool waiting:    2 files wait for room in the outbox; they are taken as room frees"), "\(status.stdout)")
        #expect(status.stdout.contains("Outbox:           5 of 5 jobs; receipts 2.5 MiB of 3.0 MiB; "), "\(status.stdout)")
        #expect(daemon.log.components(separatedBy: "waits for room in the outbox, and so will others").count == 2, "said once: \(daemon.log)")

        // Counted: two adds, an edit and two drops.
        let stats = try daemon.ctlJSON(["stats"])
        #expect(stats["since_start"]?["refusals"] == ["jobs": 4, "receipt_bytes": 1])
        #expect(stats["total"]?["refusals"] == ["jobs": 4, "receipt_bytes": 1])
        #expect(try daemon.ctl(["stats"]).stdout.contains("refused for room: jobs 4, receipt_bytes 1"))
        try waitUntil(timeout: 20, "the metrics file to count them") {
            let text = (try? String(contentsOfFile: metricsPath, encoding: .utf8)) ?? ""
            return text.contains("expensed_outbox_refusals_total{reason=\"jobs\"} 4\n") && text.contains("expensed_outbox_refusals_total{reason=\"receipt_bytes\"} 1\n")
                && text.contains("expensed_spool_waiting 2\n") && text.contains("expensed_jobs{state=\"queued\"} 5\n")
        }
        let metrics = try String(contentsOfFile: metricsPath, encoding: .utf8)
        #expect(metrics.contains("# TYPE expensed_outbox_refusals_total counter\n") && metrics.contains("expensed_outbox_jobs_limit 5\n"))
        #expect(metrics.contains("expensed_outbox_refusals_total{reason=\"disk_full\"} 0\n"))
        #expect(try FileManager.default.contentsOfDirectory(atPath: outside.path) == ["expensed.prom"], "written whole under another name, renamed")

        // The server is back: sending frees room, and the spool files are taken.
        try sync.startServer()
        try waitUntil(timeout: 60, "the spool files to be taken and everything sent") {
            let now = try daemon.ctlJSON(["status"])
            let spool = try FileManager.default.contentsOfDirectory(atPath: daemon.spoolDirectory)
            return now["spool_waiting"] == 0 && now["queued"] == 0 && now["sending"] == 0 && spool == ["rejected"]
        }
        #expect(daemon.log.contains("The outbox has room again: the spool files that waited for it are taken"))
        var records = try sync.serverRecords()
        #expect(Set(records.compactMap(\.merchant)) == ["A", "C", "D", "Lunch"] && records.count == 5, "\(records.map(\.merchant))")
        #expect(records.first { $0.merchant == "A" }?.receiptDigest == digestA)
        #expect(records.first { $0.merchant == "C" }?.receiptDigest == digestC)
        #expect(records.contains { $0.merchant == nil && $0.receiptDigest == Hex.encode(SHA256.hash(scanBytes)) }, "the spool's receipt alone")

        // Nothing of the refused adds was kept: under the same client ids they are new now.
        let bAgain = try daemon.ctlJSON(Self.add("B", clientID: ids[1], receipt: daemon.directory.at("b.pdf")))
        #expect(bAgain["duplicate"] == false)
        #expect(try daemon.ctlJSON(Self.add("E", clientID: ids[4]))["duplicate"] == false)
        try sync.waitUntilDrained()
        records = try sync.serverRecords()
        #expect(records.count == 7)
        for (index, clientID) in ids.enumerated() {
            #expect(records.filter { $0.transactionID == TransactionID.derive(from: clientID) }.count == 1, "\(index)")
        }
        #expect(try daemon.ctlJSON(["stats"])["total"]?["refusals"] == ["jobs": 4, "receipt_bytes": 1])
        try waitUntil(timeout: 20, "the metrics file to show the queue empty") {
            ((try? String(contentsOfFile: metricsPath, encoding: .utf8)) ?? "").contains("expensed_jobs{state=\"queued\"} 0\n")
        }
    }

    /// No server (nothing else writes): an add on a full file system meets
    /// `ENOSPC` at its commit, one with a receipt is refused before it is
    /// copied; both exit 75 naming the state directory, and nothing of
    /// them remains. Room made, the same adds are taken.
    @Test func aFullStateFileSystem_refusesAddsWithExit75_andTakesThemOnceThereIsRoom() throws {
        let daemon = DaemonHarness(arguments: ["--disk-reserve", "0"])
        let state = try SmallFileSystem.start(daemon, megabytes: 16)
        defer { daemon.stop() }
        #expect(daemon.log.contains("set aside for the drain"))
        #expect(try daemon.ctl(Self.add("Before", clientID: ClientID.make())).status == 0)

        let foreignPath = "\(state)/foreign.bin"
        do {
            let foreign = try FileDescriptor.open(foreignPath, [.writeOnly, .create, .exclusive], mode: 0o600)
            try SmallFileSystem.fill(with: foreign)
        }
        #expect(try FileSystem.space(of: state).availableBytes == 0)
        let plain = ClientID.make(), withReceipt = ClientID.make()
        let receipt = daemon.directory.at("r.pdf")
        Self.receipt(receipt, tag: 7, size: 200_000)
        let committed = try daemon.ctl(Self.add("Plain", clientID: plain))
        #expect(committed.status == 75)
        #expect(committed.stderr.hasPrefix("expensectl: the outbox is full: the file system of \(daemon.stateDirectory) is full (the database could not commit: "),
                "\(committed.stderr)")
        let copied = try daemon.ctl(Self.add("Receipt", clientID: withReceipt, receipt: receipt))
        #expect(copied.status == 75)
        #expect(copied.stderr.hasPrefix("expensectl: the outbox is full: the file system of \(daemon.stateDirectory) has 0 bytes free; this receipt's 195.3 KiB would leave less than the reserve of 0 bytes (disk_reserve); "),
                "\(copied.stderr)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: "\(state)/receipts").isEmpty, "no staged copy left")
        #expect(try daemon.list().count == 1)
        let status = try daemon.ctlJSON(["status"])
        #expect(status["queued"] == 1 && status["outbox"]?["disk_free"] == 0)
        #expect(try daemon.ctlJSON(["stats"])["since_start"]?["refusals"] == ["disk_full": 1, "disk_reserve": 1])

        // Room again: the same adds, under the same client ids, are new.
        try FileSystem.remove(foreignPath)
        #expect(try daemon.ctlJSON(Self.add("Plain", clientID: plain))["duplicate"] == false)
        #expect(try daemon.ctlJSON(Self.add("Receipt", clientID: withReceipt, receipt: receipt))["duplicate"] == false)
        #expect(try daemon.list().count == 3)
        #expect(daemon.log.contains("The outbox has room again: adds are taken"))
    }

    /// Adds, and a foreign file growing between them until the file system
    /// is full, with the server down: each add is acknowledged or refused
    /// with exit 75, the daemon answers throughout, and once the server is
    /// back every acknowledged add is on it, with its receipt, and no
    /// refused one is.
    @Test func aStateFileSystemFilledWhileAdding_losesNothingAcknowledged() throws {
        let sync = try SyncHarness(daemonArguments: ["--disk-reserve", "0"], startServer: false)
        let daemon = sync.daemon
        let state = try SmallFileSystem.start(daemon, megabytes: 24)
        defer { daemon.stop() }
        let foreign = try FileDescriptor.open("\(state)/foreign.bin", [.writeOnly, .create, .exclusive], mode: 0o600)

        var acknowledged: [(clientID: String, digest: String?)] = []
        var refused: [String] = []
        var full = false, refusedSinceFull = 0, n = 0
        while refusedSinceFull < 4 && n < 200 {
            if !full { full = try SmallFileSystem.write(768 << 10, to: foreign) }
            n += 1
            let clientID = ClientID.make()
            var digest: String?
            var receipt: String?
            if n % 2 == 1 {
                receipt = daemon.directory.at("r\(n).pdf")
                digest = Self.receipt(receipt!, tag: 100 + n, size: 256 << 10)
            }
            let result = try daemon.ctl(Self.add("Fill \(n)", clientID: clientID, receipt: receipt))
            if result.status == 0 {
                acknowledged.append((clientID, digest))
            } else {
                #expect(result.status == 75, "\(result.stderr)")
                #expect(result.stderr.hasPrefix("expensectl: the outbox is full: the file system of \(daemon.stateDirectory) "), "\(result.stderr)")
                refused.append(clientID)
                if full { refusedSinceFull += 1 }
            }
            #expect(try daemon.request(["op": "status"])["result"]?["queued"] != nil, "the daemon answers")
        }
        #expect(full && refusedSinceFull == 4)
        #expect(acknowledged.count >= 5, "\(acknowledged.count) acknowledged before the file system filled")

        // The server is back: the drain sends over a full file system.
        try sync.startServer()
        try sync.waitUntilDrained(timeout: 120)
        let records = try sync.serverRecords()
        for (clientID, digest) in acknowledged {
            let found = records.filter { $0.transactionID == TransactionID.derive(from: clientID) }
            #expect(found.count == 1, "acknowledged \(clientID)")
            #expect(found.first?.receiptDigest == digest, "its receipt, byte for byte")
        }
        for clientID in refused {
            #expect(!records.contains { $0.transactionID == TransactionID.derive(from: clientID) }, "refused \(clientID)")
        }
        #expect(records.count == acknowledged.count)
        #expect(try daemon.request(["op": "status"])["result"]?["queued"] == 0)
    }

    /// Jobs queued, the server up but paused (the token refused), the file
    /// system filled by a foreign file: once the token is right again, the
    /// drain gives itself the headroom, sends and records every job, and
    /// the receipts it removes free room, so the headroom is set aside
    /// again. Meanwhile adds are refused.
    @Test func aFullStateFileSystem_doesNotStopTheDrain() throws {
        let sync = try SyncHarness(daemonArguments: ["--disk-reserve", "auto"])
        let daemon = sync.daemon
        sync.writeToken("not-the-token")
        let state = try SmallFileSystem.start(daemon, megabytes: 24)
        defer { daemon.stop() }

        // Queued while the server refuses the token: all sending pauses.
        var queued: [(clientID: String, digest: String?)] = []
        for n in 0..<12 {
            let clientID = ClientID.make()
            var receipt: String?
            var digest: String?
            if n % 2 == 0 {
                receipt = daemon.directory.at("q\(n).pdf")
                digest = Self.receipt(receipt!, tag: 200 + n, size: Self.MiB)
            }
            let result = try daemon.ctl(Self.add("Queued \(n)", clientID: clientID, receipt: receipt))
            #expect(result.status == 0, "\(result.stderr)")
            queued.append((clientID, digest))
        }
        // The first refusal pauses the account; creates sent beside it are
        // put back as their own refusals come, or when the pass ends.
        try daemon.waitForQueue(queued: 18, server: "needs_credentials", timeout: 20,
                                "sending to pause for the refused token, with twelve creates and six uploads queued")

        // A foreign file takes every byte left.
        let foreignPath = "\(state)/foreign.bin"
        do {
            let foreign = try FileDescriptor.open(foreignPath, [.writeOnly, .create, .exclusive], mode: 0o600)
            try SmallFileSystem.fill(with: foreign)
        }
        #expect(try FileSystem.space(of: state).availableBytes == 0)
        #expect(try daemon.ctl(Self.add("Refused", clientID: ClientID.make())).status == 75)

        // The token is right again: `sync` ends the pause, and the drain goes on over the full disk.
        sync.writeToken(sync.token)
        #expect(try daemon.ctl(["sync"]).status == 0)
        try sync.waitUntilDrained(timeout: 120)
        let records = try sync.serverRecords()
        #expect(records.count == queued.count)
        for (clientID, digest) in queued {
            let found = records.filter { $0.transactionID == TransactionID.derive(from: clientID) }
            #expect(found.count == 1 && found.first?.receiptDigest == digest, "\(clientID)")
        }
        #expect(daemon.log.contains("is full: gave the drain the 1.0 MiB set aside in '\(daemon.stateDirectory)/expensed.headroom'"), "\(daemon.log)")
        // The sent receipts' files are gone: room for the headroom again, and for adds.
        try daemon.waitUntilNoReceiptFiles(timeout: 20)
        try waitUntil(timeout: 20, "the headroom to be set aside again") {
            try daemon.ctlJSON(["status"])["outbox"]?["headroom_held"] == true
        }
        #expect(daemon.log.contains("Set aside 1.0 MiB for the drain again"))
        #expect(FileManager.default.fileExists(atPath: "\(state)/expensed.headroom"))
        #expect(FileManager.default.fileExists(atPath: foreignPath), "the foreign file is not the daemon's to remove")
        #expect(try daemon.ctl(Self.add("After", clientID: ClientID.make())).status == 0)
    }

    /// A receipt whose legible copy cannot be stored for lack of room
    /// (a binary PPM, which no backend takes as it is) does not make its
    /// upload need attention: the upload waits for its copy, made once
    /// there is room, and then goes.
    @Test func aCopyWithoutRoom_waitsForRoom_andIsMadeOnceThereIsSome() throws {
        let files = TemporaryDirectory(prefix: "copy-room")
        _ = try RealReceiptFiles.make(in: files)
        let ppm = files.at("phone.ppm")
        let size = try FileSystem.status(ppm).size
        let sync = try SyncHarness(daemonArguments: ["--disk-reserve", "0"])
        let daemon = sync.daemon
        sync.writeToken("not-the-token")
        let state = try SmallFileSystem.start(daemon, megabytes: 24)
        defer { daemon.stop() }
        try waitUntil(timeout: 20, "the first pass to pause for the token") {
            try daemon.request(["op": "status"])["result"]?["server"] == "needs_credentials"
        }

        // The file system is left with room for the receipt and its commit, a little more at a time, and no more.
        let foreignPath = "\(state)/foreign.bin"
        let clientID = ClientID.make()
        do {
            let foreign = try FileDescriptor.open(foreignPath, [.writeOnly, .create, .exclusive], mode: 0o600)
            try SmallFileSystem.fill(with: foreign)
            let filled = try foreign.status().size
            var margin: Int64 = 32 << 10
            var added = false
            while !added && margin < 1 << 20 {
                try foreign.truncate(to: filled - size - margin)
                let result = try daemon.ctl(Self.add("Copy later", clientID: clientID, receipt: ppm))
                added = result.status == 0
                if !added { #expect(result.status == 75, "\(result.stderr)") }
                margin += 32 << 10
            }
            #expect(added, "taken with \(margin >> 10) KiB to spare")
        }  // closed: its room is freed once it is removed
        try waitUntil(timeout: 60, "the copy to find no room") { daemon.log.contains("No room to store the copy of receipt") }
        let transactionID = TransactionID.derive(from: clientID)
        let jobs = try #require(try daemon.ctlJSON(["show", transactionID])["jobs"]?.arrayValue)
        #expect(jobs.allSatisfy { $0["state"] == "queued" }, "nothing needs attention for a full disk: \(jobs)")

        // Room again; the token right: the create goes, and with it the copy is made and the upload sent.
        try FileSystem.remove(foreignPath)
        sync.writeToken(sync.token)
        #expect(try daemon.ctl(["sync"]).status == 0)
        try sync.waitUntilDrained(timeout: 120)
        let record = try #require(try sync.serverRecords().first { $0.transactionID == transactionID })
        let original = Hex.encode(SHA256.hash([UInt8](try #require(FileManager.default.contents(atPath: ppm)))))
        #expect(record.receiptDigest != nil && record.receiptDigest != original, "the legible copy was sent")
        #expect(daemon.log.contains("Receipt copy made"))
        // Had the drain been given the headroom, the copy waited for it to be set aside again: it is never written into it.
        let log = daemon.log
        if let given = log.range(of: "gave the drain the") {
            let again = try #require(log.range(of: "for the drain again", range: given.upperBound..<log.endIndex), "the headroom set aside again")
            #expect(log.range(of: "Receipt copy made", range: again.upperBound..<log.endIndex) != nil)
        }
    }
}
