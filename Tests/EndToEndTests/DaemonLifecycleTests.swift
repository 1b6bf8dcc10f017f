import ExpenseCore
import ExpenseTestSupport
import Foundation
@testable import Posix
import SQLite
import Testing

/// expensed as a process: start-up, refusal, notification, shutdown.
@Suite struct DaemonLifecycleTests {
    @Test func addList_survivesARestart() throws {
        let daemon = DaemonHarness()
        try daemon.start()
        let receipt = daemon.directory.at("lunch.jpg")
        SampleReceipt.write(SampleReceipt.jpeg(size: 10_000), to: receipt)
        let plain = try daemon.ctl(["add", "--merchant", "Blue Bottle", "--amount", "12.50", "--currency", "EUR", "--date", "2026-11-29", "--category", "Meals"])
        #expect(plain.status == 0, "\(plain.stderr)")
        let withReceipt = try daemon.ctl(["add", "--receipt", receipt, "--merchant", "Taxi", "--amount", "30.00", "--currency", "EUR", "--date", "2026-11-29"])
        #expect(withReceipt.status == 0, "\(withReceipt.stderr)")
        let ids = [plain.stdout, withReceipt.stdout].map { $0.trimmingCharacters(in: .whitespacesAndNewlines) }
        #expect(ids.allSatisfy(TransactionID.isValid))

        func check() throws {
            let list = try daemon.ctlJSON(["list"]).arrayValue ?? []
            #expect(list.compactMap { $0["transaction_id"]?.stringValue } == ids)
            #expect(list.allSatisfy { $0["state"] == "queued" })
            #expect(list.map { $0["receipt"] } == ["none", "pending"])
            #expect(list[0]["merchant"] == "Blue Bottle")
            #expect(list[0]["category"] == "Meals")
            #expect(list[1]["amount"] == "30.00")
            #expect(TransactionID.derive(from: list[0]["client_id"]?.stringValue ?? "") == ids[0])
        }
        try check()
        #expect(daemon.stop() == 0)
        try daemon.start()
        defer { daemon.stop() }
        try check()
        let stored = daemon.receiptFiles()
        #expect(stored.count == 1)
        let bytes = FileManager.default.contents(atPath: "\(daemon.stateDirectory)/receipts/\(stored[0])")
        #expect(bytes == Data(SampleReceipt.jpeg(size: 10_000)))
    }

    @Test func discardAndRetry_changeWhatListShows() throws {
        let daemon = DaemonHarness()
        try daemon.start()
        defer { daemon.stop() }
        let receipt = daemon.directory.at("r.png")
        SampleReceipt.write(SampleReceipt.png(), to: receipt)
        let first = try daemon.ctl(["add", "--receipt", receipt]).stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        let second = try daemon.ctl(["add", "--merchant", "B", "--amount", "2.00", "--currency", "USD", "--date", "2026-01-02"]).stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(daemon.receiptFiles().count == 1)

        let retried = try daemon.ctl(["retry", String(second.prefix(10))])
        #expect(retried.status == 0, "\(retried.stderr)")
        #expect(retried.stdout.contains(second))

        let discarded = try daemon.ctl(["discard", first])
        #expect(discarded.status == 0, "\(discarded.stderr)")
        #expect(discarded.stdout.contains("discarded 2 pending job(s)"))
        #expect(daemon.receiptFiles().isEmpty)
        let list = try daemon.ctlJSON(["list"]).arrayValue ?? []
        #expect(list.compactMap { $0["transaction_id"]?.stringValue } == [second])

        let again = try daemon.ctl(["discard", first])
        #expect(again.status == 1)
        #expect(again.stderr.contains("no expense matches"))
    }

    @Test func addWithAClientIDAgain_isTheSameExpenseAndSaysSo() throws {
        let daemon = DaemonHarness()
        try daemon.start()
        defer { daemon.stop() }
        let clientID = ClientID.make()
        let first = try daemon.ctl(["add", "--merchant", "A", "--amount", "1.00", "--currency", "EUR", "--date", "2026-01-01", "--client-id", clientID.uppercased()])
        #expect(first.status == 0, "\(first.stderr)")
        #expect(first.stderr.isEmpty)
        let again = try daemon.ctl(["add", "--merchant", "B", "--amount", "2.00", "--currency", "EUR", "--date", "2026-01-02", "--client-id", clientID])
        #expect(again.status == 0)
        #expect(again.stdout == first.stdout)
        #expect(again.stderr.contains("was added before (queued); the fields given now were not used"))
        #expect(try daemon.list().map { $0["merchant"] } == ["A"])
        #expect(try daemon.ctl(["show", first.stdout.trimmingCharacters(in: .whitespacesAndNewlines).uppercased()]).status == 0, "ids are case-insensitive")
        let bad = try daemon.ctl(["show", "cp-zzz"])
        #expect(bad.status == 1)
        #expect(bad.stderr.contains("not an expense id"))
    }

    @Test func secondDaemonOnTheSameStateDirectory_refusesToStart() throws {
        let daemon = DaemonHarness()
        try daemon.start()
        defer { daemon.stop() }
        let other = try runCommand(BuiltProducts.path("expensed"), [
            "--config", daemon.directory.at("expensed.conf"), "--state-dir", daemon.stateDirectory,
            "--socket", daemon.directory.at("other.sock"), "--spool-dir", "none",
        ], timeout: 20)
        #expect(other.status == 75)
        #expect(other.stderr.contains("is in use by process \(daemon.process!.pid)"), "\(other.stderr)")
        #expect(try daemon.request(["op": "status"])["ok"] == true)
    }

    /// A process that was given the lock file's open description (as a
    /// child still between fork and exec of a daemon killed meanwhile is)
    /// does not keep the state directory locked once the lock's taker is gone.
    @Test func theLocksDescriptorInAnotherProcess_doesNotKeepTheStateDirectoryLocked() throws {
        let daemon = DaemonHarness()
        try FileSystem.makeDirectories(daemon.stateDirectory, mode: 0o700)
        var lock: FileLock? = try FileLock(path: "\(daemon.stateDirectory)/expensed.lock")
        let holder = try Subprocess("/bin/sleep", arguments: ["600"], standardInput: .descriptor(lock!.descriptor))
        defer {
            holder.signal(SIGKILL)
            _ = holder.wait()
        }
        lock = nil
        try daemon.start()
        defer { daemon.stop() }
        #expect(try daemon.request(["op": "status"])["ok"] == true)
    }

    /// A server to send to and no token from anywhere: said at start, before
    /// "Started", rather than by the first refusal; not with a token file,
    /// nor with systemd's credentials directory, nor without a server.
    @Test func noTokenFromAnywhere_isSaidAtStart() throws {
        let warning = "No token: neither token_file (--token-file) nor systemd's $CREDENTIALS_DIRECTORY names one"
        let credentials = TemporaryDirectory()
        SampleReceipt.write(Array("t0ken\n".utf8), to: credentials.at("token"))
        let cases: [(arguments: [String], environment: [String: String], warned: Bool)] = [
            (["--server", "http://127.0.0.1:9"], [:], true),
            (["--server", "http://127.0.0.1:9", "--token-file", credentials.at("token")], [:], false),
            (["--server", "http://127.0.0.1:9"], ["CREDENTIALS_DIRECTORY": credentials.path], false),
            ([], [:], false),
        ]
        for (arguments, environment, warned) in cases {
            let daemon = DaemonHarness(arguments: arguments, environment: environment)
            try daemon.start()
            defer { daemon.stop() }
            try waitUntil("the daemon to say it started") { daemon.log.contains("Started; control socket") }
            #expect(daemon.log.contains(warning) == warned, "\(arguments) \(environment): \(daemon.log)")
        }
    }

    @Test func sigterm_stopsGracefullyAndRemovesTheSocket() throws {
        let daemon = DaemonHarness()
        try daemon.start()
        #expect(daemon.stop() == 0)
        #expect(!FileManager.default.fileExists(atPath: daemon.socketPath))
        #expect(daemon.log.contains("Stopped"))
    }

    @Test func notifications_arriveAtTheNotifySocket() throws {
        let dir = TemporaryDirectory()
        let listener = try NotifyListener(path: dir.at("notify"))
        let daemon = DaemonHarness(environment: ["NOTIFY_SOCKET": listener.path, "WATCHDOG_USEC": "400000"])
        try daemon.start()
        var messages = listener.collect(timeout: 10 * TestPatience.factor) { $0.contains { $0.contains("WATCHDOG=1") } }
        let ready = messages.firstIndex { $0.hasPrefix("READY=1") }
        #expect(ready != nil, "\(messages)")
        #expect(messages.contains { $0.contains("STATUS=0 queued, 0 sending, 0 need attention") })
        #expect(messages.contains("WATCHDOG=1"))

        _ = try daemon.ctl(["add", "--merchant", "A", "--amount", "1.00", "--currency", "EUR", "--date", "2026-01-01"])
        messages = listener.collect(timeout: 10 * TestPatience.factor) { $0.contains { $0.hasPrefix("STATUS=1 queued") } }
        #expect(messages.contains { $0.hasPrefix("STATUS=1 queued") }, "\(messages)")

        #expect(daemon.stop() == 0)
        messages = listener.collect(timeout: 10 * TestPatience.factor) { $0.contains("STOPPING=1") }
        #expect(messages.contains("STOPPING=1"), "\(messages)")
    }

    @Test func watchdog_stopsPingingWhenTheProcessIsFrozen() throws {
        let dir = TemporaryDirectory()
        let listener = try NotifyListener(path: dir.at("notify"))
        let daemon = DaemonHarness(environment: ["NOTIFY_SOCKET": listener.path, "WATCHDOG_USEC": "200000"])
        try daemon.start()
        let process = try #require(daemon.process)
        defer { process.thaw(); daemon.stop() }
        func pings(_ messages: [String]) -> Int { messages.filter { $0 == "WATCHDOG=1" }.count }
        // Every 100 ms: the deadline only decides when a failing test gives up.
        let before = pings(listener.collect(timeout: 10 * TestPatience.factor) { pings($0) >= 3 })
        #expect(before >= 3, "pings every 100 ms: \(before)")
        try process.freeze()
        // What it sent before it stopped is read and left behind.
        _ = listener.collect(timeout: 0.3)
        let frozen = pings(listener.collect(timeout: 1))
        #expect(frozen == 0, "no ping while every thread is stopped")
        process.thaw()
        let after = pings(listener.collect(timeout: 10 * TestPatience.factor) { pings($0) >= 1 })
        #expect(after >= 1, "pings again once it goes on")
    }

    @Test func watchdog_stopsPingingWhenTheStoreIsWedged() throws {
        let dir = TemporaryDirectory()
        let listener = try NotifyListener(path: dir.at("notify"))
        // The fifth liveness probe of the store hangs its queue forever.
        let daemon = DaemonHarness(environment: ["NOTIFY_SOCKET": listener.path, "WATCHDOG_USEC": "200000",
                                                 "EXPENSED_FAULT": "store-probe:hang@5"])
        try daemon.start()
        defer { daemon.crash() }
        try daemon.waitForWithheldPings(hangingAt: "store-probe")
        // What it sent before is queued on the socket, read here at once.
        let pings = listener.collect(timeout: 0.3).filter { $0 == "WATCHDOG=1" }.count
        #expect(pings >= 1 && pings <= 5, "\(pings) pings before the wedge: one at start, more at healthy ticks, the fifth probe hangs")
        let later = listener.collect(timeout: 1).filter { $0 == "WATCHDOG=1" }
        #expect(later.isEmpty, "no pings once the store is wedged")
    }

    @Test func clientOfAnotherUser_isRefused() throws {
        let daemon = DaemonHarness()
        try daemon.start()
        defer { daemon.stop() }
        // Let everyone reach the socket file, so only the peer check decides.
        chmod(daemon.socketPath, 0o666)
        let refused = try runCommand("/usr/bin/setpriv", ["--reuid=65534", "--regid=65534", "--clear-groups",
                                                          BuiltProducts.path("expensectl"), "--socket", daemon.socketPath, "status"])
        #expect(refused.status == 77, "\(refused.stderr)")
        #expect(refused.stderr.contains("uid 65534 may not use expensed"), "\(refused.stderr)")
        #expect(daemon.log.contains("Refused control connection from uid 65534"))
    }

    @Test func memberOfTheControlGroup_isServed() throws {
        let daemon = DaemonHarness(arguments: ["--control-group", "adm"])
        try daemon.start()
        defer { daemon.stop() }
        chmod(daemon.socketPath, 0o666)
        let gid = String(getgrnam("adm")!.pointee.gr_gid)
        let allowed = try runCommand("/usr/bin/setpriv", ["--reuid=65534", "--regid=65534", "--groups=\(gid)",
                                                          BuiltProducts.path("expensectl"), "--socket", daemon.socketPath, "status"])
        #expect(allowed.status == 0, "\(allowed.stderr)")
        let outsider = try runCommand("/usr/bin/setpriv", ["--reuid=65534", "--regid=65534", "--clear-groups",
                                                           BuiltProducts.path("expensectl"), "--socket", daemon.socketPath, "status"])
        #expect(outsider.status == 77)
        #expect(outsider.stderr.contains("members of group 'adm'"))
    }

    @Test func fileThatIsNotADatabase_isRefusedAndLeftAlone() throws {
        let daemon = DaemonHarness()
        try FileManager.default.createDirectory(atPath: daemon.stateDirectory, withIntermediateDirectories: true)
        let junk = Data(repeating: 0x2A, count: 8192)
        let path = "\(daemon.stateDirectory)/expensed.db"
        _ = FileManager.default.createFile(atPath: path, contents: junk)
        let result = try runCommand(BuiltProducts.path("expensed"), daemon.arguments, timeout: 20)
        #expect(result.status == 65)
        #expect(result.stderr.contains("'\(path)' is not an SQLite database"), "\(result.stderr)")
        #expect(result.stderr.contains("Move it aside"))
        #expect(FileManager.default.contents(atPath: path) == junk)
        #expect(!FileManager.default.fileExists(atPath: path + "-wal"))
    }

    @Test func databaseFromANewerSchema_isRefusedAndLeftAlone() throws {
        let daemon = DaemonHarness()
        try daemon.start()
        #expect(daemon.stop() == 0)
        let path = "\(daemon.stateDirectory)/expensed.db"
        try Self.recordFutureSchema(path)
        let before = FileManager.default.contents(atPath: path)
        let result = try runCommand(BuiltProducts.path("expensed"), daemon.arguments, timeout: 20)
        #expect(result.status == 65)
        #expect(result.stderr.contains("schema version 99, newer than this expensed knows"), "\(result.stderr)")
        #expect(FileManager.default.contents(atPath: path) == before)
    }

    /// Marks the database at `path` as migrated by a newer expensed (schema 99).
    static func recordFutureSchema(_ path: String) throws {
        try Connection(path: path).execute("INSERT INTO schema_migrations (version, applied_at) VALUES (99, 'future')")
    }

    @Test func receiptFiles_areSweptOnlyAfterTheDatabaseReadCleanly() throws {
        let daemon = DaemonHarness()
        try daemon.start()
        let receipt = daemon.directory.at("r.png")
        SampleReceipt.write(SampleReceipt.png(), to: receipt)
        #expect(try daemon.ctl(["add", "--receipt", receipt]).status == 0)
        #expect(daemon.stop() == 0)
        let referenced = daemon.receiptFiles()
        #expect(referenced.count == 1)
        // A file no job references, named as the daemon names its copies.
        let orphan = "\(ClientID.make()).png"
        SampleReceipt.write(SampleReceipt.png(), to: "\(daemon.stateDirectory)/receipts/\(orphan)")
        let path = "\(daemon.stateDirectory)/expensed.db"
        try Self.recordFutureSchema(path)
        let refused = try runCommand(BuiltProducts.path("expensed"), daemon.arguments, timeout: 20)
        #expect(refused.status == 65)
        #expect(daemon.receiptFiles() == (referenced + [orphan]).sorted(), "nothing is swept when the database cannot be read")
        try Connection(path: path).execute("DELETE FROM schema_migrations WHERE version = 99")
        try daemon.start()
        defer { daemon.stop() }
        #expect(daemon.receiptFiles() == referenced, "once it reads, the orphan goes and the referenced copy stays")
    }

    @Test func addThatCannotBeCommitted_leavesNoReceiptAndNoExpense() throws {
        let daemon = DaemonHarness()
        try daemon.start()
        defer { daemon.stop() }
        let db = try Connection(path: "\(daemon.stateDirectory)/expensed.db")
        try db.execute("CREATE TRIGGER refuse BEFORE INSERT ON jobs BEGIN SELECT RAISE(ABORT, 'refused by the test'); END")
        let receipt = daemon.directory.at("r.png")
        SampleReceipt.write(SampleReceipt.png(), to: receipt)
        let clientID = ClientID.make()
        let add = ["add", "--receipt", receipt, "--merchant", "M", "--amount", "1.00", "--currency", "EUR", "--date", "2026-11-29", "--client-id", clientID]
        let failed = try daemon.ctl(add)
        #expect(failed.status == 74, "storage_failed: \(failed.stderr)")
        #expect(daemon.receiptFiles().isEmpty, "the staged copy is removed with the failed commit")
        #expect(try daemon.list().isEmpty)
        try db.execute("DROP TRIGGER refuse")
        let retried = try daemon.ctl(add)
        #expect(retried.status == 0, "\(retried.stderr)")
        #expect(try daemon.list().count == 1)
        #expect(daemon.receiptFiles().count == 1)
    }

    @Test func otherProgramsDatabase_isRefused() throws {
        let daemon = DaemonHarness()
        try FileManager.default.createDirectory(atPath: daemon.stateDirectory, withIntermediateDirectories: true)
        let path = "\(daemon.stateDirectory)/expensed.db"
        do {
            let db = try Connection(path: path)
            try db.execute("CREATE TABLE photos (id INTEGER)")
        }
        let result = try runCommand(BuiltProducts.path("expensed"), daemon.arguments, timeout: 20)
        #expect(result.status == 65)
        #expect(result.stderr.contains("another program"), "\(result.stderr)")
    }

    @Test(arguments: [
        ("state_dir /x\n", "expensed.conf:1: expected 'key = value'"),
        ("# comment\n\nsocket = /tmp/x.sock\nfrobnicate = 1\n", "expensed.conf:4: unknown key 'frobnicate'"),
        ("drain_interval = soon\n", "expensed.conf:1: drain_interval: must be a duration"),
        ("max_attempts = 0\n", "expensed.conf:1: max_attempts: must be a whole number from 1"),
        ("server = ftp://example.com\n", "expensed.conf:1: server: must be an http:// or https:// URL"),
        ("receipt_max_bytes = 12X\n", "expensed.conf:1: receipt_max_bytes: must be a size"),
        ("concurrency = 2\nconcurrency = 3\n", "expensed.conf:2: 'concurrency' is set twice"),
        ("log_target = syslog\n", "expensed.conf:1: log_target: must be auto, journal or stderr"),
        ("connect_timeout = 1d\n", "expensed.conf:1: connect_timeout: must be from 100ms to 10m"),
        ("drain_interval = inf\n", "expensed.conf:1: drain_interval: must be a duration from 100ms to 1d"),
        ("control_line_max = 1G\n", "expensed.conf:1: control_line_max: must be from 1K to 64M"),
        ("concurrency = +4\n", "expensed.conf:1: concurrency: must be a whole number from 1 to 64"),
        ("backoff_base = 10s\nbackoff_cap = 1s\n", "backoff_base (10s) is longer than backoff_cap (1s)"),
        ("spool_sidecar_window = soon\n", "expensed.conf:1: spool_sidecar_window: must be a duration from 0ms to 7d"),
        ("spool_sidecar_window = 8d\n", "expensed.conf:1: spool_sidecar_window: must be from 0ms to 7d"),
        ("receipt_languages = English\n", "expensed.conf:1: receipt_languages: 'English' is not a Tesseract language name (like eng, deu or chi_sim)"),
        ("receipt_languages = eng eng\n", "expensed.conf:1: receipt_languages: a language is named twice"),
        ("receipt_date_order = dd/mm/yyyy\n", "expensed.conf:1: receipt_date_order: must be locale, day-first or month-first"),
        ("receipt_currency = eur\n", "expensed.conf:1: receipt_currency: must be none or an ISO 4217 code in capitals, like EUR"),
        ("receipt_tessdata = tessdata\n", "expensed.conf:1: receipt_tessdata: must be an absolute path"),
        // Language data that is not installed: the package that has it.
        ("receipt_languages = eng xyz_abc\n",
         "Refusing to start: no xyz_abc.traineddata in /usr/share/tesseract-ocr/5/tessdata: install Debian's tesseract-ocr-xyz-abc (receipt_languages)"),
    ])
    func badConfigurationLine_isReportedWithItsLineNumber(_ text: String, expected: String) throws {
        let dir = TemporaryDirectory()
        let config = dir.at("expensed.conf")
        _ = FileManager.default.createFile(atPath: config, contents: Data(text.utf8))
        let result = try runCommand(BuiltProducts.path("expensed"), ["--config", config, "--state-dir", dir.at("state")], timeout: 20)
        #expect(result.status == 78)
        #expect(result.stderr.contains(expected), "\(result.stderr)")
        #expect(!FileManager.default.fileExists(atPath: dir.at("state")), "nothing created on a bad configuration")
    }

    /// With `receipt_date_order = locale` (the default), how a receipt's
    /// `03/04/2026` will be read comes from the time locale, compiled here
    /// with localedef into a folder of the test's own (`LOCPATH`): en_GB
    /// writes the day first, en_US the month; C names neither, and no such
    /// date is suggested. Start-up says which.
    @Test(arguments: [("en_GB", "are read day-first, as the locale en_GB.UTF-8 writes dates (receipt_date_order = locale)"),
                      ("en_US", "are read month-first, as the locale en_US.UTF-8 writes dates (receipt_date_order = locale)"),
                      ("C", "are not suggested: the locale C.UTF-8 gives no day-first or month-first order; set receipt_date_order"),
                      ("fr_FR", "are not suggested: the locale fr_FR.UTF-8 is not installed (locale -a lists those that are); set receipt_date_order")])
    func theLocalesDateOrder_isSaidAtStart(_ locale: String, _ said: String) throws {
        let locales = TemporaryDirectory(prefix: "locales")
        if locale != "C" && locale != "fr_FR" {
            let made = try runCommand("/usr/bin/localedef", ["-i", locale, "-f", "UTF-8", locales.at("\(locale).UTF-8")], timeout: 120)
            #expect(made.status == 0, "\(made.stderr)")
        }
        let daemon = DaemonHarness(arguments: ["--server", "none", "--reading", "on"], environment: ["LOCPATH": locales.path, "LC_ALL": "\(locale).UTF-8"])
        try daemon.start()
        defer { daemon.stop() }
        try waitUntil(timeout: 20, "the date order said") { daemon.log.contains("Receipt dates like 03/04/2026 \(said)") }
    }

    /// With `reading = off` (the harness's default) nothing reads a
    /// receipt's date: nothing is said of its order.
    @Test func withoutReading_noDateOrderIsSaid() throws {
        let daemon = DaemonHarness(arguments: ["--server", "none"])
        try daemon.start()
        defer { daemon.stop() }
        try waitUntil("the daemon to say it started") { daemon.log.contains("Started; control socket") }
        #expect(!daemon.log.contains("Receipt dates like"), "\(daemon.log)")
    }

    @Test func flags_overrideTheConfigurationFile() throws {
        let daemon = DaemonHarness(arguments: ["--server", "none"])
        let config = daemon.directory.at("expensed.conf")
        _ = FileManager.default.createFile(atPath: config, contents: Data("""
            state_dir = \(daemon.directory.at("from-file"))
            socket = \(daemon.directory.at("file.sock"))
            server = http://127.0.0.1:9
            """.utf8))
        try daemon.start()
        defer { daemon.stop() }
        #expect(FileManager.default.fileExists(atPath: "\(daemon.stateDirectory)/expensed.db"))
        #expect(!FileManager.default.fileExists(atPath: daemon.directory.at("from-file")))
        let status = try daemon.ctlJSON(["status"])
        #expect(status["state_dir"]?.stringValue == daemon.stateDirectory)
        #expect(status["server"] == "not_configured", "--server none queues only, whatever the file says")
        #expect(status["server_url"] == .null)
    }

    @Test func configurationFile_isUsed() throws {
        let dir = TemporaryDirectory()
        let config = dir.at("expensed.conf")
        _ = FileManager.default.createFile(atPath: config, contents: Data("""
            # expensed test configuration
            state_dir = \(dir.at("state"))
            socket = \(dir.at("c.sock"))
            spool_dir = none
            log_target = stderr
            """.utf8))
        let child = try ChildProcess(BuiltProducts.path("expensed"), ["--config", config], outputDirectory: dir.path)
        defer { child.stop() }
        try waitUntil(timeout: 20, "the socket from the configuration file") { FileManager.default.fileExists(atPath: dir.at("c.sock")) }
        let status = try runCommand(BuiltProducts.path("expensectl"), ["--socket", dir.at("c.sock"), "status", "--json"])
        #expect(status.status == 0)
        #expect(status.stdout.contains(dir.at("state")))
    }

    @Test(arguments: [
        (["--bogus"], "unknown option '--bogus'"),
        (["--state-dir"], "option '--state-dir' needs a value"),
        (["stray"], "unexpected argument 'stray'"),
        (["--concurrency", "0"], "--concurrency: must be a whole number"),
        (["--foreground=yes"], "option '--foreground' takes no value"),
        (["--help=1"], "option '--help' takes no value"),
        (["--config="], "option '--config' needs a file"),
        (["--request-timeout", "99999999999"], "--request-timeout: must be a duration from 1s to 1d"),
        (["--max-attempts", "1e3"], "--max-attempts: must be a whole number from 1 to 1000"),
        (["--spool-sidecar-window", "-1s"], "--spool-sidecar-window: must be a duration from 0ms to 7d"),
    ])
    func badFlags_areUsageErrors(_ arguments: [String], expected: String) throws {
        let result = try runCommand(BuiltProducts.path("expensed"), ["--config", "/dev/null"] + arguments, timeout: 20)
        #expect(result.status == 64)
        #expect(result.stderr.contains(expected), "\(result.stderr)")
        #expect(result.stderr.contains("Try 'expensed --help'"))
    }

    @Test(arguments: ["before-send:kil", "before-send@x", "before-send:sleep=99999999999", ":kill"])
    func faultSpecThatCannotBeParsed_stopsTheDaemonAtStart(_ spec: String) throws {
        let daemon = DaemonHarness(environment: ["EXPENSED_FAULT": spec])
        let result = try runCommand(BuiltProducts.path("expensed"), daemon.arguments, environment: ["EXPENSED_FAULT": spec], timeout: 20)
        #expect(result.status == 78, "\(spec): \(result.stderr)")
        #expect(result.stderr.contains("EXPENSED_FAULT: '"), "\(result.stderr)")
        #expect(!FileManager.default.fileExists(atPath: daemon.stateDirectory), "nothing created")
    }

    @Test func help_listsEveryOption() throws {
        let result = try runCommand(BuiltProducts.path("expensed"), ["--help"])
        #expect(result.status == 0)
        for flag in ["--config", "--state-dir", "--socket", "--spool-dir", "--server", "--token-file", "--control-group"] {
            #expect(result.stdout.contains(flag))
        }
    }
}
