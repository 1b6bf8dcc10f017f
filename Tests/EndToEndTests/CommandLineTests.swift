import ExpenseCore
import ExpenseTestSupport
import Foundation
import Testing

/// `expensectl`'s command line against garbage: every number, flag, text
/// option and variable, through the real binary and a real daemon. Each
/// bad one is refused with a clear message and the exit status documented
/// in expensectl(1); nothing is stored.
@Suite struct CommandLineTests {
    static let complete = ["--merchant", "M", "--amount", "1.00", "--currency", "EUR", "--date", "2026-11-29"]

    /// Runs a bash script with the built expensectl as `$CTL` and the
    /// daemon's socket as `$SOCK`: the way to hand it bytes that are not
    /// UTF-8, which `runCommand` (String arguments) cannot.
    static func bash(_ script: String, _ daemon: DaemonHarness) throws -> CommandResult {
        try runCommand("/bin/bash", ["-c", script], environment: ["CTL": BuiltProducts.path("expensectl"), "SOCK": daemon.socketPath])
    }

    @Test(arguments: ["99999999999", "inf", "infinity", "-inf", "1e300", "nan", "-1", "0", "", "1e3", "0x10", "5 s", "+5", "1..2", "31536001"])
    func syncWaitTimeout_outOfRangeOrNotANumber_isAUsageError(_ value: String) throws {
        // A server is configured, so sync is taken and the wait begins:
        // where a huge timeout once crashed converting to nanoseconds.
        let sync = try SyncHarness(startServer: false)
        try sync.daemon.start()
        defer { sync.daemon.stop() }
        let result = try sync.daemon.ctl(["sync", "--wait", "--timeout", value])
        #expect(!result.stderr.contains("Fatal error"), "'\(value)' crashed expensectl: \(result.stderr)")
        #expect(result.status == 64, "'\(value)': \(result.status) \(result.stderr)")
        #expect(result.stderr.contains("--timeout must be a duration from 1ms to 365 days"), "'\(value)': \(result.stderr)")
    }

    @Test func syncWaitTimeout_takesSecondsFractionsAndUnits() throws {
        let sync = try SyncHarness(startServer: false)
        try sync.daemon.start()
        defer { sync.daemon.stop() }
        for value in ["30", "0.5", "500ms", "2m", "1.5h", "365d", "31536000"] {
            // Nothing queued: done at once, after the timeout was read.
            let result = try sync.daemon.ctl(["sync", "--wait", "--timeout", value])
            #expect(result.status == 0 && result.stdout.contains("everything is synced"), "'\(value)': \(result.stderr)")
        }
    }

    @Test(arguments: ["inf", "nan", "1e300", "99999999999", "0x10", "86401", "0.05", "-1"])
    func answerTimeoutVariable_outOfRangeOrNotANumber_isAUsageError(_ value: String) throws {
        let daemon = DaemonHarness()
        try daemon.start()
        defer { daemon.stop() }
        let result = try daemon.ctl(["status"], environment: ["EXPENSECTL_ANSWER_TIMEOUT": value])
        #expect(result.status == 64, "'\(value)': \(result.stderr)")
        #expect(result.stderr.contains("EXPENSECTL_ANSWER_TIMEOUT must be a number of seconds from 0.1 to 86400"), "'\(value)': \(result.stderr)")
        #expect(try daemon.ctl(["status"], environment: ["EXPENSECTL_ANSWER_TIMEOUT": "60000ms"]).status == 0)
    }

    /// Each text option of add and edit, given bytes that are not UTF-8:
    /// refused as bad data before anything reaches the daemon.
    @Test func textOptionsThatAreNotUTF8_areBadData_andNothingIsStored() throws {
        let daemon = DaemonHarness()
        try daemon.start()
        defer { daemon.stop() }
        let id = try daemon.ctl(["add"] + Self.complete).stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        let fields: [(String, [String])] = [
            ("--merchant", ["--amount", "1.00", "--currency", "EUR", "--date", "2026-11-29"]),
            ("--amount", ["--merchant", "M", "--currency", "EUR", "--date", "2026-11-29"]),
            ("--currency", ["--merchant", "M", "--amount", "1.00", "--date", "2026-11-29"]),
            ("--date", ["--merchant", "M", "--amount", "1.00", "--currency", "EUR"]),
            ("--category", Self.complete), ("--comment", Self.complete), ("--tax-tag", Self.complete),
        ]
        for (option, rest) in fields {
            for form in ["\(option) \"$BAD\"", "\(option)=\"$BAD\""] {
                let add = try Self.bash("BAD=$(printf '\\377\\376bad'); exec \"$CTL\" --socket \"$SOCK\" add \(form) \(rest.joined(separator: " "))", daemon)
                #expect(add.status == 65, "add \(form): \(add.status) \(add.stderr)")
                #expect(add.stderr.contains("the value of '\(option)' is not valid UTF-8"), "add \(form): \(add.stderr)")
                let edit = try Self.bash("BAD=$(printf 'ok\\300\\257'); exec \"$CTL\" --socket \"$SOCK\" edit \(id) \(form)", daemon)
                #expect(edit.status == 65, "edit \(form): \(edit.status) \(edit.stderr)")
            }
        }
        let expenses = try daemon.list()
        #expect(expenses.count == 1, "only the good add")
        #expect(!expenses[0].serialized().contains("\u{FFFD}"), "no replacement character stored")
        #expect(expenses[0]["pending_fields"]?.arrayValue?.count == 4, "no edit stored: \(expenses[0].serialized())")
        // Not a field: a usage error, whichever argument it is.
        let id8 = try Self.bash("exec \"$CTL\" --socket \"$SOCK\" show \"$(printf 'cp-\\377')\"", daemon)
        #expect(id8.status == 64, "\(id8.stderr)")
        let take = try Self.bash("exec \"$CTL\" --socket \"$SOCK\" resolve \(id) --take \"$(printf 'mine\\377')\"", daemon)
        #expect(take.status == 64, "\(take.stderr)")
    }

    /// A receipt's path is the one option that may hold any bytes: a file
    /// name is whatever its writer chose.
    @Test func receiptWhosePathIsNotUTF8_isOpened() throws {
        let daemon = DaemonHarness()
        try daemon.start()
        defer { daemon.stop() }
        let sample = daemon.directory.at("sample.pdf")
        SampleReceipt.write(SampleReceipt.pdf(), to: sample)
        let result = try Self.bash("""
            NAME="$(dirname "$SOCK")/re$(printf '\\347')u.pdf"; cp \(sample) "$NAME"; exec "$CTL" --socket "$SOCK" add --receipt "$NAME"
            """, daemon)
        #expect(result.status == 0, "\(result.stderr)")
        #expect(try daemon.list().first?["receipt"] == "pending")
    }

    /// Every flag refuses a value, like every other flag that takes none;
    /// before, `--json=1` and even `--json=false` meant --json.
    @Test(arguments: [
        ["status", "--json=1"], ["status", "--json=false"], ["--json=true", "list"], ["list", "--help=yes"], ["-h=1", "list"],
        ["--version=2"], ["sync", "--refresh=1"], ["sync", "--wait=no"], ["sync", "--wait", "--timeout", "5", "--json=0"],
    ])
    func flagGivenAValue_isRefused(_ arguments: [String]) throws {
        let daemon = DaemonHarness()
        try daemon.start()
        defer { daemon.stop() }
        let result = try daemon.ctl(arguments)
        #expect(result.status == 64, "\(arguments): \(result.stdout) \(result.stderr)")
        #expect(result.stderr.contains("takes no value") || result.stderr.contains("unknown option"), "\(arguments): \(result.stderr)")
    }

    @Test func optionGivenTwice_orVersionAfterASubcommand_isRefused() throws {
        let daemon = DaemonHarness()
        try daemon.start()
        defer { daemon.stop() }
        #expect(try daemon.ctl(["list", "--socket", daemon.socketPath]).stderr.contains("option '--socket' given twice"))
        #expect(try daemon.ctl(["add", "--merchant", "A", "--merchant", "B"]).status == 64)
        #expect(try daemon.ctl(["list", "--version"]).stderr.contains("unknown option '--version' for 'list'"))
    }

    @Test func emptySocketVariableOrOption_saysSo() throws {
        let empty = try runCommand(BuiltProducts.path("expensectl"), ["list"], environment: ["EXPENSED_SOCKET": ""])
        #expect(empty.status == 64)
        #expect(empty.stderr.contains("EXPENSED_SOCKET is set but empty"), "\(empty.stderr)")
        #expect(!empty.stderr.contains("File name too long"))
        let option = try runCommand(BuiltProducts.path("expensectl"), ["--socket", "", "list"])
        #expect(option.status == 64 && option.stderr.contains("--socket needs a path"), "\(option.stderr)")
        let inline = try runCommand(BuiltProducts.path("expensectl"), ["--socket=", "list"])
        #expect(inline.status == 64 && inline.stderr.contains("--socket needs a path"), "\(inline.stderr)")
        let long = try runCommand(BuiltProducts.path("expensectl"), ["--socket", "/tmp/" + String(repeating: "s", count: 200), "list"])
        #expect(long.status == 64 && long.stderr.contains("a Unix socket's path holds at most 107"), "\(long.stderr)")
    }

    /// The help said "lowercase" and the command took any case: it takes any
    /// case and sends the canonical lowercase form, as the help now says.
    @Test func clientIDInUpperCase_isStoredInLowerCase_andAnythingElseIsRefused() throws {
        let daemon = DaemonHarness()
        try daemon.start()
        defer { daemon.stop() }
        let upper = "1B4E28BA-2FA1-11D2-883F-0000F87D3B6E"
        let added = try daemon.ctl(["add", "--client-id", upper] + Self.complete)
        #expect(added.status == 0, "\(added.stderr)")
        #expect(added.stdout.trimmingCharacters(in: .whitespacesAndNewlines) == TransactionID.derive(from: upper.lowercased()))
        #expect(try daemon.list().first?["client_id"]?.stringValue == upper.lowercased())
        let again = try daemon.ctl(["add", "--client-id", upper.lowercased()] + Self.complete)
        #expect(again.stderr.contains("this client id was added before"), "the same operation, whatever its case")
        for bad in ["nope", "", "1b4e28ba2fa111d2883f0000f87d3b6e", "{1b4e28ba-2fa1-11d2-883f-0000f87d3b6e}", upper + "0"] {
            let refused = try daemon.ctl(["add", "--client-id", bad] + Self.complete)
            #expect(refused.status == 64, "'\(bad)': \(refused.stderr)")
            #expect(refused.stderr.contains("--client-id must be a UUID like"), "'\(bad)': \(refused.stderr)")
        }
        #expect(try daemon.ctl(["add", "--help"]).stdout.contains("either case; sent in lowercase"))
        #expect(try daemon.list().count == 1)
    }

    /// The amount is stored in the currency's minor units, however it was
    /// typed, and a negative zero is refused: through expensectl, the socket
    /// and a spool sidecar alike.
    @Test func amounts_areStoredWithTheCurrencysMinorUnits_everyWayIn() throws {
        let daemon = DaemonHarness(arguments: ["--spool-settle", "50ms"], spool: true)
        try daemon.start()
        defer { daemon.stop() }
        func add(_ amount: String, _ currency: String) throws -> CommandResult {
            try daemon.ctl(["add", "--merchant", "M", "--amount", amount, "--currency", currency, "--date", "2026-11-29"])
        }
        var expected: [String: String] = [:]
        for (amount, currency, stored) in [("10", "EUR", "10.00"), ("10.5", "EUR", "10.50"), ("10", "JPY", "10"), ("1.5", "KWD", "1.500"), ("-3", "USD", "-3.00"), ("0", "CHF", "0.00")] {
            let result = try add(amount, currency)
            #expect(result.status == 0, "\(amount) \(currency): \(result.stderr)")
            expected[result.stdout.trimmingCharacters(in: .whitespacesAndNewlines)] = stored
        }
        for negativeZero in ["-0", "-0.00", "-0.0"] {
            let result = try add(negativeZero, "EUR")
            #expect(result.status == 65 && result.stderr.contains("negative zero"), "\(negativeZero): \(result.stderr)")
        }
        let socket = try daemon.request(["op": "add", "expense": ["merchant": "M", "amount": "7", "currency": "EUR", "date": "2026-11-29"]])
        expected[socket["result"]?["transaction_id"]?.stringValue ?? ""] = "7.00"
        #expect(try daemon.request(["op": "add", "expense": ["merchant": "M", "amount": "-0", "currency": "EUR", "date": "2026-11-29"]])["error"]?["code"] == "invalid_field")
        SampleReceipt.write(Array(#"{"merchant":"M","amount":"42","currency":"EUR","date":"2026-11-29"}"#.utf8), to: daemon.directory.at("drop.json"))
        try FileManager.default.moveItem(atPath: daemon.directory.at("drop.json"), toPath: "\(daemon.spoolDirectory)/drop.json")
        SampleReceipt.write(Array(#"{"merchant":"M","amount":"-0","currency":"EUR","date":"2026-11-29"}"#.utf8), to: daemon.directory.at("zero.json"))
        try FileManager.default.moveItem(atPath: daemon.directory.at("zero.json"), toPath: "\(daemon.spoolDirectory)/zero.json")
        try waitUntil(timeout: 20, "the sidecar to be taken and the other rejected") {
            try daemon.list().count == expected.count + 1
                && FileManager.default.fileExists(atPath: "\(daemon.spoolDirectory)/rejected/zero.json")
        }
        let reason = try String(contentsOfFile: "\(daemon.spoolDirectory)/rejected/zero.json.reason", encoding: .utf8)
        #expect(reason.contains("negative zero"), "\(reason)")
        for expense in try daemon.list() {
            let id = expense["transaction_id"]?.stringValue ?? ""
            #expect(expense["amount"]?.stringValue == (expected[id] ?? "42.00"), "\(expense.serialized())")
        }
        // An amount edited alone takes the expense's currency's minor units.
        let euro = try #require(expected.first { $0.value == "10.00" }?.key)
        #expect(try daemon.ctl(["edit", euro, "--amount", "13"]).status == 0)
        #expect(try daemon.ctlJSON(["show", euro])["amount"] == "13.00")
        let yen = try #require(expected.first { $0.value == "10" }?.key)
        #expect(try daemon.ctl(["edit", yen, "--amount", "13.5"]).status == 65, "JPY has no fraction digits")
        #expect(try daemon.ctl(["edit", yen, "--amount", "-0"]).status == 65)
        #expect(try daemon.ctl(["list"]).stdout.contains("13.00 EUR"))
    }

    /// A version 7 UUID starts with its time: the first 8 digits of a
    /// create and of its receipt job are the same. `show` names each job by
    /// its whole UUID, which `show --json` and the journal use too.
    @Test func show_namesEachJobByItsWholeUUID() throws {
        let daemon = DaemonHarness()
        try daemon.start()
        defer { daemon.stop() }
        let receipt = daemon.directory.at("r.pdf")
        SampleReceipt.write(SampleReceipt.pdf(), to: receipt)
        let id = try daemon.ctl(["add", "--receipt", receipt]).stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        let jobs = try #require(try daemon.ctlJSON(["show", id])["jobs"]?.arrayValue)
        let uuids = jobs.compactMap { $0["uuid"]?.stringValue }
        #expect(uuids.count == 2 && Set(uuids).count == 2)
        let text = try daemon.ctl(["show", id]).stdout
        let rows = text.split(separator: "\n").drop(while: { !$0.hasPrefix("JOB") }).dropFirst()
        #expect(rows.map { String($0.split(separator: " ")[0]) } == uuids, "\(text)")
        #expect(rows.map { $0.split(separator: " ")[1] } == ["create", "receipt"])
    }
}
