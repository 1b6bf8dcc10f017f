import ExpenseCore
import ExpenseTestSupport
import Foundation
import Testing

/// What expensectl does for a person at a terminal: an add's date is today
/// where they are, a currency in any case is the code, and delete and
/// discard say what they remove and ask first, on a terminal only.
@Suite struct CommandDefaultsTests {
    static func add(_ daemon: DaemonHarness, _ arguments: [String], environment: [String: String] = [:]) throws -> String {
        let result = try daemon.ctl(["add"] + arguments, environment: environment)
        guard result.status == 0 else { throw TestFailure("add \(arguments): \(result.stderr)") }
        return result.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    static func show(_ daemon: DaemonHarness, _ id: String) throws -> JSONValue {
        try daemon.ctlJSON(["show", id])
    }

    /// Today in `zone`, by Foundation's calendar (not the code under test).
    static func today(in zone: String) -> String {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: zone)!
        let c = calendar.dateComponents([.year, .month, .day], from: Date())
        return String(format: "%04d-%02d-%02d", c.year!, c.month!, c.day!)
    }

    @Test func add_withoutDate_isTodayInTheLocalTimeZone() throws {
        let daemon = DaemonHarness()
        try daemon.start()
        defer { daemon.stop() }
        // 26 hours apart: never the same calendar day.
        var dates: [String] = []
        for zone in ["Pacific/Kiritimati", "Etc/GMT+12"] {
            let before = Self.today(in: zone)
            let id = try Self.add(daemon, ["--merchant", "M", "--amount", "1", "--currency", "EUR"], environment: ["TZ": zone])
            let date = try Self.show(daemon, id)["date"]?.stringValue
            #expect(date == before || date == Self.today(in: zone), "\(zone): \(date ?? "nil")")
            dates.append(date ?? "")
        }
        #expect(dates[0] != dates[1], "the time zone decides the day")
        let given = try Self.add(daemon, ["--merchant", "M", "--amount", "1", "--currency", "EUR", "--date", "2026-02-28"])
        #expect(try Self.show(daemon, given)["date"] == "2026-02-28")
        // A receipt alone is a scan: its date is typed in later.
        let receipt = daemon.directory.at("scan.jpg")
        SampleReceipt.write(SampleReceipt.jpeg(), to: receipt)
        let scan = try Self.add(daemon, ["--receipt", receipt])
        #expect(try Self.show(daemon, scan)["date"] == .null)
        let before = Self.today(in: "UTC")
        let typed = try Self.add(daemon, ["--receipt", receipt, "--merchant", "Blue Bottle"], environment: ["TZ": "UTC"])
        let date = try Self.show(daemon, typed)["date"]?.stringValue
        #expect(date == before || date == Self.today(in: "UTC"), "a receipt with fields typed in is dated today: \(date ?? "nil")")
    }

    @Test func currency_inAnyCase_isStoredUpperCase_byTheClientAndTheDaemon() throws {
        let daemon = DaemonHarness()
        try daemon.start()
        defer { daemon.stop() }
        let id = try Self.add(daemon, ["--merchant", "M", "--amount", "10", "--currency", "eur", "--date", "2026-01-01"])
        var shown = try Self.show(daemon, id)
        #expect(shown["currency"] == "EUR")
        #expect(shown["amount"] == "10.00", "the minor units of EUR, found in any case")
        let edited = try daemon.ctl(["edit", id, "--currency", "jPy", "--amount", "1500"])
        #expect(edited.status == 0, "\(edited.stderr)")
        shown = try Self.show(daemon, id)
        #expect(shown["currency"] == "JPY")
        let socket = try daemon.request(["op": "add", "expense": ["merchant": "M", "amount": "1.5", "currency": "kwd", "date": "2026-01-01"]])
        let viaSocket = try #require(socket["result"]?["transaction_id"]?.stringValue, "\(socket.serialized())")
        shown = try Self.show(daemon, viaSocket)
        #expect(shown["currency"] == "KWD")
        #expect(shown["amount"] == "1.500")
        // Still only ISO 4217 codes: case is all that is forgiven.
        for bad in ["eu", "euro", "e1r", "ＥＵＲ", "xyz"] {
            let result = try daemon.ctl(["add", "--merchant", "M", "--amount", "1", "--currency", bad, "--date", "2026-01-01"])
            #expect(result.status == 65, "\(bad): \(result.stderr)")
            #expect(result.stderr.contains("currency"), "\(bad): \(result.stderr)")
        }
        #expect(try daemon.list().count == 2)
    }

    @Test func delete_onATerminal_saysWhatAndAsks_andOnlyYesDeletes() throws {
        let daemon = DaemonHarness()
        try daemon.start()
        defer { daemon.stop() }
        let ctl = BuiltProducts.path("expensectl")
        let id = try Self.add(daemon, ["--merchant", "Blue Bottle", "--amount", "12.50", "--currency", "EUR", "--date", "2026-11-29"])
        for answer in ["n", "", "maybe"] {
            let declined = try TerminalSession.run(ctl, ["--socket", daemon.socketPath, "delete", id], answer: answer)
            #expect(declined.status == 1, "\(answer): \(declined.stdout)")
            #expect(declined.stdout.contains("Delete \(id) (Blue Bottle, 12.50 EUR, 2026-11-29; queued)? It is not synced: if it never left this device it is dropped here"), "\(declined.stdout)")
            #expect(declined.stdout.contains("[y/N]"))
            #expect(declined.stdout.contains("nothing deleted"), "\(declined.stdout)")
        }
        #expect(try daemon.list().count == 1, "nothing was deleted")
        let accepted = try TerminalSession.run(ctl, ["--socket", daemon.socketPath, "delete", id], answer: "y")
        #expect(accepted.status == 0, "\(accepted.stdout)")
        #expect(accepted.stdout.contains("deleted (it never reached the server; nothing is sent)"), "\(accepted.stdout)")
        #expect(try daemon.list().isEmpty)

        // --yes asks nothing, even on a terminal.
        let second = try Self.add(daemon, ["--merchant", "Taxi", "--amount", "30", "--currency", "EUR", "--date", "2026-11-29"])
        let yes = try TerminalSession.run(ctl, ["--socket", daemon.socketPath, "delete", second, "--yes"])
        #expect(yes.status == 0, "\(yes.stdout)")
        #expect(!yes.stdout.contains("[y/N]"))
        // Standard input that is not a terminal is never asked, whatever it holds.
        let third = try Self.add(daemon, ["--merchant", "Bus", "--amount", "3", "--currency", "EUR", "--date", "2026-11-29"])
        let piped = try runCommand(ctl, ["--socket", daemon.socketPath, "delete", third], stdin: "n\n")
        #expect(piped.status == 0, "\(piped.stderr)")
        #expect(!piped.stderr.contains("[y/N]"))
        #expect(try daemon.list().isEmpty)
    }

    @Test func discard_onATerminal_namesTheJobsAndTheReceiptFile() throws {
        let daemon = DaemonHarness()
        try daemon.start()
        defer { daemon.stop() }
        let ctl = BuiltProducts.path("expensectl")
        let receipt = daemon.directory.at("r.jpg")
        SampleReceipt.write(SampleReceipt.jpeg(), to: receipt)
        let id = try Self.add(daemon, ["--receipt", receipt, "--merchant", "Hotel Adlon"])
        let declined = try TerminalSession.run(ctl, ["--socket", daemon.socketPath, "discard", id], answer: "no")
        #expect(declined.status == 1, "\(declined.stdout)")
        #expect(declined.stdout.contains("Discard the 2 pending jobs (create, receipt) and its receipt file of \(id) (Hotel Adlon"), "\(declined.stdout)")
        #expect(declined.stdout.contains("nothing discarded"))
        #expect(daemon.receiptFiles().count == 1)
        let accepted = try TerminalSession.run(ctl, ["--socket", daemon.socketPath, "discard", id], answer: "yes")
        #expect(accepted.status == 0, "\(accepted.stdout)")
        #expect(accepted.stdout.contains("discarded 2 pending job(s)"))
        try daemon.waitUntilNoReceiptFiles()
        // An unknown id is refused before anything is asked.
        let unknown = try TerminalSession.run(ctl, ["--socket", daemon.socketPath, "discard", "cp-ffff"], answer: "y")
        #expect(unknown.status == 1)
        #expect(unknown.stdout.contains("no expense matches"), "\(unknown.stdout)")
        #expect(!unknown.stdout.contains("[y/N]"))
    }

    @Test func aDeletedExpense_staysVisibleToShow_asDeleted() throws {
        let sync = try SyncHarness()
        try sync.daemon.start()
        defer { sync.daemon.stop() }
        let id = try Self.add(sync.daemon, ["--merchant", "Blue Bottle", "--amount", "12.50", "--currency", "EUR", "--date", "2026-11-29"])
        try sync.waitUntilDrained()
        let deleted = try sync.daemon.ctl(["delete", id, "--yes"])
        #expect(deleted.status == 0, "\(deleted.stderr)")
        #expect(deleted.stdout.contains("delete queued"))
        try sync.waitUntilDrained()
        let shown = try Self.show(sync.daemon, id)
        #expect(shown["state"] == "deleted")
        #expect(shown["merchant"] == "Blue Bottle", "its last values")
        #expect(shown["jobs"] == [])
        let text = try sync.daemon.ctl(["show", id])
        #expect(text.stdout.split(separator: "\n").contains { $0.hasPrefix("State:") && $0.hasSuffix(" deleted") }, "\(text.stdout)")
        #expect(try sync.daemon.list().isEmpty, "list leaves it out")
        // Nothing more to do to it, and it says why.
        for arguments in [["delete", id, "--yes"], ["edit", id, "--comment", "x"]] {
            let refused = try sync.daemon.ctl(arguments)
            #expect(refused.status == 1, "\(arguments)")
            #expect(refused.stderr.contains("was deleted on the server"), "\(refused.stderr)")
        }
    }
}
