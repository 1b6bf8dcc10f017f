import Digest
import ExpenseCore
import ExpenseTestSupport
import Foundation
import Posix
import SQLite
import Testing

/// The randomized crash torture (SQLite's crash tests and FoundationDB's
/// simulation are the models; docs/testing.md, "Torture"): kill -9 at
/// random moments, during start-up recovery, and at the fault points, while
/// several clients add expenses with and without receipts, files are
/// dropped into the spool, and the queue drains against an expense-server
/// that loses answers after committing and answers 503. After a last clean
/// drain and restart, the server's database must hold every acknowledged
/// add and every file that left the spool exactly once, with the receipt's
/// very bytes, and the daemon's state must be empty.
///
/// Each run prints its seed; `EXPENSED_TORTURE_SEED` runs that seed again
/// (the same decisions; the machine's timing still varies).
/// `EXPENSED_TORTURE_KILLS` sets the number of kills (default 50, or 110
/// at `EXPENSED_TEST_SCALE=large`, within `EXPENSED_TORTURE_SECONDS` of
/// killing, default 45, or 95 at the large scale, unless the kills are
/// set): `EXPENSED_TORTURE_KILLS=500` runs it larger still.
/// Serialized: the heaviest test of all (three writers, a dropper, a faulty server, a kill every second); beside itself it would halve its own kills.
@Suite(.serialized) struct TortureTests {
    static let settleMilliseconds = 600.0
    static let faultPoints = ["after-receipt-staged", "before-send", "after-response", "between-upsert-and-job-removal", "after-job-removed",
                              "spool-after-open", "spool-after-stage", "spool-after-commit", "spool-after-rename", "spool-after-unlink",
                              "spool-after-sync"]

    /// What the run did, printed at its end.
    struct Figures: CustomStringConvertible {
        var seed: UInt64 = 0
        var killsAtRandom = 0, killsInRecovery = 0, killsAtFaultPoints = 0, cleanStops = 0
        var adds = 0, acknowledged = 0, unacknowledgedOnServer = 0
        var drops = 0, files = 0, rejected = 0, splitPairs = 0
        var serverExpenses = 0
        var seconds = 0.0

        var kills: Int { killsAtRandom + killsInRecovery + killsAtFaultPoints }

        var description: String {
            """
            TortureTests: seed \(seed): \(kills) kills (\(killsAtRandom) at random while running, \(killsInRecovery) during start-up \
            recovery, \(killsAtFaultPoints) at fault points), \(cleanStops) clean stops; \(adds) adds, \(acknowledged) acknowledged, \
            \(unacknowledgedOnServer) unacknowledged ones on the server; \(files) spool files in \(drops) drops, \(rejected) rejected, \
            \(splitPairs) pairs taken apart; \(serverExpenses) expenses on the server; \(String(format: "%.0f", seconds)) s
            """
        }
    }

    @Test func killedAtRandomWhileEverythingHappens_losesNothingAndDoublesNothing() throws {
        let environment = ProcessInfo.processInfo.environment
        let seed = environment["EXPENSED_TORTURE_SEED"].flatMap { UInt64($0) } ?? UInt64.random(in: 1...UInt64(Int64.max))
        let kills = TestScale.count(quick: 50, large: 110, variable: "EXPENSED_TORTURE_KILLS")
        let seconds = environment["EXPENSED_TORTURE_SECONDS"].flatMap { Double($0) }
            ?? (environment["EXPENSED_TORTURE_KILLS"] == nil ? (TestScale.isLarge ? 95 : 45) : .infinity)
        print("TortureTests: seed \(seed) (EXPENSED_TORTURE_SEED=\(seed) runs it again), up to \(kills) kills in \(seconds) s")
        let began = Date()
        var figures = Figures(seed: seed)
        var random = SeededRandom(seed: seed)

        let sync = try SyncHarness(daemonArguments: ["--concurrency", "4", "--spool-settle", "\(Int(Self.settleMilliseconds))ms"],
                                   serverArguments: ["--fault-drop-response", "0.15", "--fault-error-rate", "0.15",
                                                     "--fault-drop-request", "0.05", "--fault-seed", String(seed % 1_000_000_007)],
                                   spool: true)
        let daemon = sync.daemon
        let ledger = TortureLedger()
        let writers = TortureWriters(daemon: daemon, ledger: ledger, receipts: try WholeReceipts(directory: daemon.directory.at("images")))
        try writers.start(socketClients: 2, ctlClients: 1, random: random.derived(1))
        defer { try? writers.stop() }

        let deadline = began.addingTimeInterval(seconds)
        var problems: [String] = []
        while figures.kills < kills && Date() < deadline {
            let roll = random.next(100)
            if roll < 20 {
                // Within milliseconds of a restart: the recovery itself is killed.
                try daemon.launch()
                usleep(UInt32(random.next(40_000)))
                problems += Self.kill(daemon, "during start-up recovery")
                figures.killsInRecovery += 1
            } else if roll < 50 {
                let point = Self.faultPoints[random.next(Self.faultPoints.count)]
                daemon.environment["EXPENSED_FAULT"] = "\(point)@\(1 + random.next(4))"
                let child = try daemon.launch()
                daemon.environment["EXPENSED_FAULT"] = nil
                if child.waitForExit(timeout: 0.3 + Double(random.next(2_700)) / 1000) != nil {
                    if child.termination == .signaled(SIGKILL) {
                        figures.killsAtFaultPoints += 1
                    } else {
                        problems.append("armed at \(point), expensed \(child.termination?.description ?? "exited"): \(Self.tail(child))")
                    }
                } else {
                    problems += Self.kill(daemon, "armed at \(point), not reached")
                    figures.killsAtRandom += 1
                }
            } else {
                let child = try daemon.launch()
                do {
                    try daemon.waitUntilAnswering(child, timeout: 120)
                } catch {
                    problems.append("start-up failed: \(error)")
                    break
                }
                // Running for a random while; it must not stop by itself.
                if child.waitForExit(timeout: 0.05 + Double(random.next(2_000)) / 1000) != nil {
                    problems.append("expensed exited by itself, \(child.termination?.description ?? "exited"): \(Self.tail(child))")
                } else if random.chance(0.05) {
                    if daemon.stop(timeout: 60) != 0 { problems.append("a clean stop did not exit 0: \(Self.tail(child))") }
                    figures.cleanStops += 1
                } else {
                    problems += Self.kill(daemon, "while running")
                    figures.killsAtRandom += 1
                }
            }
            // Down for a while, or restarted at once.
            usleep(UInt32(random.next(200_000)))
        }
        try writers.stop()
        #expect(problems.isEmpty, "seed \(seed): \(problems.joined(separator: "\n"))")
        #expect(ledger.problems.isEmpty, "seed \(seed): \(ledger.problems.joined(separator: "\n"))")

        let verdict: TortureVerdict
        do {
            try Self.drainCleanly(sync)
            verdict = try Self.judge(sync, ledger: ledger, figures: &figures)
        } catch {
            Self.keep(daemon.directory, seed: seed)
            throw TestFailure("seed \(seed): \(error)")
        }
        figures.seconds = Date().timeIntervalSince(began)
        print(figures)
        if !verdict.failures.isEmpty || !problems.isEmpty { Self.keep(daemon.directory, seed: seed) }
        #expect(verdict.failures.isEmpty, """
            seed \(seed): \(verdict.failures.count) failure(s)\
            \(verdict.recycledInode > 0 ? ", \(verdict.recycledInode) of them the spool trusting a recycled inode" : ""):
            \(verdict.failures.joined(separator: "\n"))
            """)
        #expect(figures.kills >= min(kills, 10), "seed \(seed): only \(figures.kills) kills")
        #expect(figures.acknowledged > 0 && figures.files > 0, "seed \(seed): the writers did nothing: \(figures)")
    }

    /// The torture's receipts are whole files: ImageMagick reads the JPEG
    /// (with comment segments of filler over more than one segment's
    /// length) and the PNG without a warning, Ghostscript renders the PDF
    /// without repairing it; and no two are alike.
    @Test func wholeReceipts_areReadWithoutComplaintAndUnique() throws {
        let folder = TemporaryDirectory(prefix: "whole")
        let receipts = try WholeReceipts(directory: folder.at("images"))
        let files = [("a.jpg", receipts.jpeg(tag: 1, size: 150_000)), ("b.jpg", receipts.jpeg(tag: 2, size: 3_000)),
                     ("c.png", try receipts.png()), ("d.png", try receipts.png()),
                     ("e.pdf", receipts.pdf(tag: 1, size: 80_000)), ("f.pdf", receipts.pdf(tag: 2, size: 700))]
        #expect(Set(files.map(\.1)).count == files.count, "every receipt has bytes of its own")
        for (name, bytes) in files {
            let path = folder.at(name)
            SampleReceipt.write(bytes, to: path)
            let result = name.hasSuffix(".pdf")
                ? try runCommand("/usr/bin/gs", ["-q", "-dSAFER", "-dBATCH", "-dNOPAUSE", "-sDEVICE=nullpage", path])
                : try runCommand("/usr/bin/identify", ["-regard-warnings", path])
            #expect(result.status == 0 && !result.stdout.contains("rror") && result.stderr.isEmpty,
                    "\(name): \(result.status) \(result.stdout) \(result.stderr)")
        }
    }

    /// Keeps a failed run's folder (daemon logs, state, spool, server data)
    /// for a look afterwards: moved out of the way of its removal.
    static func keep(_ directory: TemporaryDirectory, seed: UInt64) {
        let kept = "\(URL(fileURLWithPath: directory.path).deletingLastPathComponent().path)/expensed-torture-\(seed)"
        if rename(directory.path, kept) == 0 { print("TortureTests: the run's folder is kept in \(kept)") }
    }

    /// kill -9, and what is wrong if the daemon had already gone by itself.
    static func kill(_ daemon: DaemonHarness, _ when: String) -> [String] {
        guard let child = daemon.process else { return [] }
        let wasRunning = child.isRunning
        daemon.crash()
        if !wasRunning && child.termination != .signaled(SIGKILL) {
            return ["\(when): expensed had \(child.termination?.description ?? "exited") before the kill: \(tail(child))"]
        }
        return []
    }

    static func tail(_ child: ChildProcess) -> String {
        child.standardError.split(separator: "\n").suffix(8).joined(separator: " | ")
    }

    /// With the server's faults off and the writers stopped: the daemon
    /// takes the whole spool, drains, removes what it sent, and stops
    /// cleanly; one more start finds nothing to do.
    static func drainCleanly(_ sync: SyncHarness) throws {
        let daemon = sync.daemon
        sync.stopServer()
        try sync.startServer()
        try daemon.start(timeout: 120)
        do {
            try waitUntil(timeout: 120, "the spool to be taken") { try daemon.spoolEntries().isEmpty }
        } catch {
            throw TestFailure("the spool still holds \(try daemon.spoolEntries().map(\.displayName)) 120 s after the last start")
        }
        try sync.waitUntilDrained(timeout: 300)
        let status = try daemon.request(["op": "status"])["result"]
        if status?["needs_attention"] != 0 {
            Issue.record("jobs need attention: \(try daemon.ctl(["list"]).stdout)")
        }
        try daemon.waitUntilNoReceiptFiles(timeout: 30)
        try waitUntil(timeout: 30, "the intake records to be forgotten") {
            try QueuedExpense.intakeRecords(stateDirectory: daemon.stateDirectory) == 0
        }
        #expect(daemon.stop(timeout: 60) == 0, "the last stop: \(daemon.log)")
        try daemon.start(timeout: 120)
        #expect(try daemon.request(["op": "status"])["result"]?["queued"] == 0)
        #expect(daemon.stop(timeout: 60) == 0)
    }

    /// The end state: the daemon's empty, the server's judged against the ledger.
    static func judge(_ sync: SyncHarness, ledger: TortureLedger, figures: inout Figures) throws -> TortureVerdict {
        let daemon = sync.daemon
        let rows = try sync.daemonRows()
        #expect(rows.jobs == 0, "the outbox is empty")
        #expect(daemon.receiptFiles().isEmpty, "no receipt file left: \(daemon.receiptFiles())")
        #expect(try QueuedExpense.intakeRecords(stateDirectory: daemon.stateDirectory) == 0, "no spool_intake row left")
        #expect(try daemon.spoolEntries().isEmpty, "the spool holds nothing but rejected/")

        let server = try sync.serverRecords()
        #expect(rows.cache == server.map(\.transactionID).sorted(), "the cache holds what the server holds, once each")
        var rejected: [TortureVerdict.Rejection] = []
        for entry in try daemon.rejectedEntries() where entry.lowercasedExtension != "reason" {
            let text = try daemon.rejectionReason(entry)
            let field = { (key: String) in
                text.split(separator: "\n").first { $0.hasPrefix("\(key): ") }.map { String($0.dropFirst(key.count + 2)) } ?? ""
            }
            let bytes = FileManager.default.contents(atPath: "\(daemon.spoolDirectory)/rejected/\(entry.displayName)").map { [UInt8]($0) } ?? []
            rejected.append(.init(name: field("name"), reason: field("reason"), digest: Hex.encode(SHA256.hash(bytes))))
        }
        let log = daemon.logPaths.compactMap { try? String(contentsOfFile: $0, encoding: .utf8) }.joined(separator: "\n")
        let verdict = TortureVerdict(ledger: ledger, server: server, rejected: rejected, settleMilliseconds: settleMilliseconds, log: log)

        let adds = ledger.adds, drops = ledger.drops
        figures.adds = adds.count
        figures.acknowledged = adds.filter(\.acknowledged).count
        figures.unacknowledgedOnServer = verdict.unacknowledgedOnServer
        figures.drops = drops.count
        figures.files = drops.reduce(0) { $0 + ($1.receiptName == nil ? 0 : 1) + ($1.sidecarName == nil ? 0 : 1) }
        figures.rejected = rejected.count
        figures.splitPairs = verdict.splitPairs
        figures.serverExpenses = server.count
        return verdict
    }
}
