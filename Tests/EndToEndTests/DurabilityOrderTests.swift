import ExpenseCore
import ExpenseTestSupport
import Foundation
import Posix
import SQLite
import Testing

/// Durable before acknowledged, under the power-loss model (docs/testing.md,
/// "Durability order"): a kill -9 keeps the page cache, so only the order of
/// the system calls can show that an acknowledgement waited for the fsyncs
/// it depends on. The daemon runs under strace; for a plain add, an add
/// with a receipt and a spool intake, every acknowledgement (the answer
/// written on the control socket, the spool file taken from its name) must
/// come after the database's WAL, the receipt file and the receipt's name
/// in its directory are on stable storage. The same check, with one fsync
/// turned into a no-op by an LD_PRELOAD shim, must name what is missing.
/// Serialized: each test runs the daemon under strace, which stops every thread at every system call; one at a time bounds that load.
@Suite(.serialized) struct DurabilityOrderTests {
    enum Scenario: String, CaseIterable, Sendable {
        case plainAdd, addWithReceipt, spoolIntake
    }

    /// What one traced run found.
    struct Run {
        /// The acknowledgements checked, and what each would lose.
        var checked: [(acknowledgement: TracedCall, losses: [String])] = []
        var log = ""
    }

    static let traced = ["openat", "open", "creat", "mkdir", "mkdirat", "write", "pwrite64", "writev", "pwritev", "pwritev2",
                         "sendfile", "copy_file_range", "ftruncate", "fallocate", "fsync", "fdatasync",
                         "rename", "renameat", "renameat2", "unlink", "unlinkat", "sendmsg", "sendto"]

    @Test(arguments: Scenario.allCases)
    func everyAcknowledgement_comesAfterTheFsyncsItDependsOn(_ scenario: Scenario) throws {
        let run = try Self.run(scenario)
        #expect(!run.checked.isEmpty, "no acknowledgement found in the trace")
        for (acknowledgement, losses) in run.checked {
            #expect(losses.isEmpty, "\(scenario): a power cut at \(acknowledgement) would lose: \(losses.joined(separator: "; "))")
        }
    }

    /// One fsync skipped: the checker must say which, at the acknowledgement.
    @Test(arguments: [
        (Scenario.plainAdd, "*/state/expensed.db-wal", "expensed.db-wal' has"),
        (Scenario.addWithReceipt, "*/state/receipts/.*.tmp", "write(s) not fsynced"),
        (Scenario.addWithReceipt, "*/state/receipts", "/state/receipts' is not durable"),
        (Scenario.spoolIntake, "*/state/expensed.db-wal", "expensed.db-wal' has"),
    ])
    func oneFsyncSkipped_isReportedAtTheAcknowledgement(_ scenario: Scenario, skipping pattern: String, expected: String) throws {
        let run = try Self.run(scenario, skipping: pattern)
        #expect(run.log.contains("skip-fsync: skipped"), "the shim skipped nothing matching \(pattern)")
        #expect(!run.checked.isEmpty, "no acknowledgement found in the trace")
        for (acknowledgement, losses) in run.checked {
            #expect(losses.contains { $0.contains(expected) }, "\(scenario) without the fsync of \(pattern): at \(acknowledgement) the checker said \(losses)")
        }
    }

    /// The first start makes the state directory itself: its name in the
    /// directory above must be durable before the first add is answered.
    @Test func firstStart_makesTheStateDirectoryDurableBeforeTheFirstAnswer() throws {
        let run = try Self.run(.plainAdd, makeStateDirectory: false)
        #expect(!run.checked.isEmpty, "no acknowledgement found in the trace")
        for (acknowledgement, losses) in run.checked {
            #expect(losses.isEmpty, "a power cut at \(acknowledgement) would lose: \(losses.joined(separator: "; "))")
        }
    }

    /// The model on a trace written by hand: an fsync counts only once it
    /// returned, for the writes that returned before it was called, and a
    /// call strace split in two (another thread came between) is one call.
    @Test func model_countsAnFsyncOnlyOnceItReturned() {
        let trace = """
            100 10:00:00.000001 openat(AT_FDCWD</d>, "/d/f", O_WRONLY|O_CREAT|O_CLOEXEC, 0600) = 3</d/f>
            100 10:00:00.000002 write(3</d/f>, "abc", 3) = 3
            100 10:00:00.000003 fsync(3</d/f> <unfinished ...>
            101 10:00:00.000004 write(7<socket:[42]>, "{\\"id\\":1}", 8) = 8
            100 10:00:00.000005 <... fsync resumed>) = 0
            100 10:00:00.000006 openat(AT_FDCWD</d>, "/d", O_RDONLY|O_DIRECTORY) = 4</d>
            100 10:00:00.000007 fsync(4</d>) = 0
            101 10:00:00.000008 write(7<socket:[42]>, "{\\"id\\":2}", 8) = 8
            100 10:00:00.000009 +++ exited with 0 +++
            """
        let calls = SyscallTrace.parse(trace)
        #expect(calls.map(\.name) == ["openat", "write", "fsync", "write", "openat", "fsync", "write"])
        #expect(calls[2].entryLine == 3 && calls[2].exitLine == 5 && calls[2].result == "0")
        let model = PowerLossModel(calls, existedBefore: ["/", "/d"], workingDirectory: "/")
        let replies = model.replies(containing: "id")
        #expect(replies.map(\.entryLine) == [4, 8])
        let early = model.losses(at: replies[0], dependingOn: ["/d/f"])
        #expect(early.count == 2 && early[0].contains("1 write(s) not fsynced") && early[1].contains("the name 'f' in '/d' is not durable"), "\(early)")
        #expect(model.losses(at: replies[1], dependingOn: ["/d/f"]).isEmpty)
    }

    // MARK: Running a scenario under strace

    /// Starts the daemon under strace (and the shim, when `pattern` is
    /// given), plays `scenario`, stops it, and checks the trace.
    static func run(_ scenario: Scenario, skipping pattern: String? = nil, makeStateDirectory: Bool = true) throws -> Run {
        let daemon = DaemonHarness(arguments: ["--spool-settle", "200ms"], spool: scenario == .spoolIntake)
        // As systemd's StateDirectory= does, unless the daemon is to make it.
        if makeStateDirectory { try FileSystem.makeDirectory(daemon.stateDirectory) }
        let trace = daemon.directory.at("trace")
        daemon.launcher = SyscallTrace.command(output: trace, calls: traced)
        if let pattern {
            daemon.launcher += ["-E", "LD_PRELOAD=\(try Shim.skipFsync(in: daemon.directory.path))"]
            daemon.environment["SKIP_FSYNC_PATTERN"] = pattern
        }
        let before = try Self.paths(under: daemon.directory.path)
        try daemon.start(timeout: 60)

        let clientID = ClientID.make()
        let transactionID = TransactionID.derive(from: clientID)
        var spoolFiles: [String] = []
        switch scenario {
        case .plainAdd, .addWithReceipt:
            let client = try RawClient(path: daemon.socketPath)
            let line = #"{"id":1,"op":"add","client_id":"\#(clientID)","receipt":\#(scenario == .addWithReceipt),"expense":{"merchant":"Order","amount":"4.20","currency":"EUR","date":"2026-11-29"}}"# + "\n"
            if scenario == .addWithReceipt {
                let file = daemon.directory.at("receipt.jpg")
                SampleReceipt.write(try WholeReceipts(directory: daemon.directory.at("images")).jpeg(tag: 1, size: 20_000), to: file)
                try client.send(line, passingFileAt: file)
            } else {
                try client.send(line)
            }
            let answer = try client.readJSONLine()
            #expect(answer["result"]?["transaction_id"]?.stringValue == transactionID, "\(answer.serialized())")
        case .spoolIntake:
            let staging = daemon.directory.at("staging")
            let fields = ExpenseFields(merchant: "Order", amount: "4.20", currency: "EUR", date: "2026-11-29")
            let receipt = try WholeReceipts(directory: daemon.directory.at("images")).jpeg(tag: 2, size: 20_000)
            try SpoolDrop.byRename([(FileName("order.json")!, SpoolDrop.sidecar(fields)), (FileName("order.jpg")!, receipt)],
                                   in: daemon.spoolDirectory, staging: staging)
            try daemon.waitForSpool(expenses: 1, rejected: 0, timeout: 60)
            spoolFiles = ["\(daemon.spoolDirectory)/order.json", "\(daemon.spoolDirectory)/order.jpg"]
        }

        // Stop the daemon itself (strace passes a signal on and detaches);
        // strace ends when the daemon does, with the whole trace written.
        let pid = try daemon.daemonPID()
        kill(pid, SIGTERM)
        guard daemon.process?.waitForExit(timeout: 60) != nil else {
            daemon.crash()
            throw TestFailure("expensed under strace did not stop: \(daemon.log)")
        }

        let state = PowerLossModel.normalize(daemon.stateDirectory)
        var dependencies = ["\(state)/expensed.db-wal", "\(state)/expensed.db"]
        let db = try Connection(path: "\(state)/expensed.db", readOnly: true)
        let receiptFiles = try db.query("SELECT receipt_file FROM jobs WHERE kind = 'receipt'") { $0.string(0) }
        if scenario != .plainAdd {
            #expect(receiptFiles.count == 1, "one receipt job: \(receiptFiles)")
            dependencies += receiptFiles.map { "\(state)/receipts/\($0)" }
        }

        let calls = SyscallTrace.parse(try String(contentsOfFile: trace, encoding: .utf8))
        let model = PowerLossModel(calls, existedBefore: before, workingDirectory: FileManager.default.currentDirectoryPath)
        let acknowledgements = scenario == .spoolIntake
            ? spoolFiles.compactMap { model.removals(of: PowerLossModel.normalize($0)).first }
            : model.replies(containing: clientID)
        #expect(acknowledgements.count == (scenario == .spoolIntake ? 2 : 1), "acknowledgements found: \(acknowledgements)")
        var run = Run(log: daemon.log)
        for acknowledgement in acknowledgements {
            // Not vacuous: the trace shows the writes the acknowledgement depends on.
            #expect(!model.writes { $0 == "\(state)/expensed.db-wal" }.filter { $0.entryLine < acknowledgement.entryLine }.isEmpty,
                    "no WAL write before \(acknowledgement)")
            if scenario != .plainAdd {
                #expect(!model.writes { $0.hasPrefix("\(state)/receipts/") }.filter { $0.entryLine < acknowledgement.entryLine }.isEmpty,
                        "no receipt write before \(acknowledgement)")
            }
            run.checked.append((acknowledgement, model.losses(at: acknowledgement, dependingOn: dependencies)))
        }
        return run
    }

    /// Every path under `directory`, and the directory's ancestors: what
    /// exists before the daemon starts, taken as durable.
    static func paths(under directory: String) throws -> Set<String> {
        let root = PowerLossModel.normalize(directory)
        var paths: Set<String> = [root]
        var ancestor = root
        while ancestor != "/" {
            ancestor = PowerLossModel.parent(ancestor)
            paths.insert(ancestor)
        }
        for relative in FileManager.default.enumerator(atPath: root)?.allObjects as? [String] ?? [] {
            paths.insert("\(root)/\(relative)")
        }
        return paths
    }
}
