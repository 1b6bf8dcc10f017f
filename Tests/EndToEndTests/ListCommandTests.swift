import ExpenseCore
import ExpenseTestSupport
import Foundation
import Testing

/// `expensectl list` on a backlog: filters, orders, pages and totals done by
/// the daemon, over expenses the real server synced and work still queued;
/// and bad values refused by the client and by the daemon, naming them.
@Suite struct ListCommandTests {
    static func add(_ daemon: DaemonHarness, _ arguments: [String]) throws -> String {
        let result = try daemon.ctl(["add"] + arguments)
        guard result.status == 0 else { throw TestFailure("add \(arguments): \(result.stderr)") }
        return result.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    static func ids(_ daemon: DaemonHarness, _ arguments: [String]) throws -> [String] {
        let json = try daemon.ctlJSON(["list"] + arguments)
        let expenses = json.arrayValue ?? json["expenses"]?.arrayValue ?? []
        return expenses.compactMap { $0["transaction_id"]?.stringValue }
    }

    /// A merchant with a right-to-left override, which would show the rest
    /// of its line reversed, is shown with the override escaped in `list`
    /// and `show`, and kept exactly in `--json`.
    @Test func aValueThatWouldReorderItsLine_isShownEscaped() throws {
        let daemon = DaemonHarness()
        try daemon.start()
        defer { daemon.stop() }
        let merchant = "pay \u{202E}00.001 EUR\u{202C} ok"
        let id = try Self.add(daemon, ["--merchant", merchant, "--amount", "1.00", "--currency", "EUR", "--date", "2026-11-02", "--comment", "a\nb"])
        let table = try daemon.ctl(["list"]).stdout
        #expect(table.contains("pay \\u202e00.001 EUR\\u202c ok") && !table.contains("\u{202E}"), "\(table)")
        let shown = try daemon.ctl(["show", id]).stdout
        #expect(shown.contains("pay \\u202e00.001 EUR\\u202c ok") && shown.contains("a\\x0ab") && !shown.contains("\u{202E}"), "\(shown)")
        #expect(try daemon.ctlJSON(["show", id])["merchant"]?.stringValue == merchant)
    }

    @Test func filtersOrdersPagesAndTotals_overSyncedAndQueuedExpenses() throws {
        let sync = try SyncHarness()
        try sync.daemon.start()
        defer { sync.daemon.stop() }
        // Each synced before the next is added: a synced expense is listed
        // by the server's creation time, and creates in flight together
        // (the drain sends four at once) may be created in any order.
        let coffee = try Self.add(sync.daemon, ["--merchant", "Blue Bottle", "--amount", "4.50", "--currency", "EUR", "--date", "2026-11-02", "--category", "Meals"])
        try sync.waitUntilDrained()
        let hotel = try Self.add(sync.daemon, ["--merchant", "Hotel Adlon", "--amount", "310", "--currency", "EUR", "--date", "2026-10-15", "--category", "Travel"])
        try sync.waitUntilDrained()
        let train = try Self.add(sync.daemon, ["--merchant", "Shinkansen", "--amount", "14720", "--currency", "JPY", "--date", "2026-09-30", "--category", "travel"])
        try sync.waitUntilDrained()
        // Offline from here: what is added now stays queued, and counts.
        sync.daemon.stop()
        sync.daemon.arguments += ["--server", "none"]
        try sync.daemon.start()
        let lunch = try Self.add(sync.daemon, ["--merchant", "blue bottle bar", "--amount", "12.25", "--currency", "EUR", "--date", "2026-11-20", "--category", "meals"])
        let receipt = sync.daemon.directory.at("scan.jpg")
        SampleReceipt.write(SampleReceipt.jpeg(), to: receipt)
        let scan = try Self.add(sync.daemon, ["--receipt", receipt])

        #expect(try Self.ids(sync.daemon, []) == [coffee, hotel, train, lunch, scan], "oldest first, as before")
        #expect(try Self.ids(sync.daemon, ["--state", "synced"]) == [coffee, hotel, train])
        #expect(try Self.ids(sync.daemon, ["--state", "queued"]) == [lunch, scan])
        #expect(try Self.ids(sync.daemon, ["--state", "needs-attention"]) == [])
        #expect(try Self.ids(sync.daemon, ["--incomplete"]) == [scan])
        #expect(try Self.ids(sync.daemon, ["--merchant", "BOTTLE"]) == [coffee, lunch])
        #expect(try Self.ids(sync.daemon, ["--category", "TRAVEL", "--sort", "date"]) == [train, hotel])
        #expect(try Self.ids(sync.daemon, ["--since", "2026-10-01", "--until", "2026-11-19", "--sort", "date", "--reverse"]) == [coffee, hotel])
        #expect(try Self.ids(sync.daemon, ["--sort", "amount", "--reverse"]) == [train, hotel, lunch, coffee, scan])
        #expect(try Self.ids(sync.daemon, ["--sort", "merchant"]) == [scan, coffee, lunch, hotel, train])

        // --ids: the page's ids alone, one a line, in its order.
        let onlyIDs = try sync.daemon.ctl(["list", "--ids", "--sort", "amount", "--reverse", "--limit", "3"])
        #expect(onlyIDs.stdout == [train, hotel, lunch].map { $0 + "\n" }.joined(), "\(onlyIDs.stdout)")

        // Pages: the answer says whether more follow, and the text says where.
        let first = try sync.daemon.ctlJSON(["list", "--sort", "date", "--limit", "2"])
        #expect(first["expenses"]?.arrayValue?.compactMap { $0["transaction_id"]?.stringValue } == [scan, train])
        #expect(first["more"] == true)
        let last = try sync.daemon.ctlJSON(["list", "--sort", "date", "--limit", "2", "--offset", "4"])
        #expect(last["expenses"]?.arrayValue?.compactMap { $0["transaction_id"]?.stringValue } == [lunch])
        #expect(last["more"] == false)
        let text = try sync.daemon.ctl(["list", "--limit", "2", "--offset", "1"])
        #expect(text.status == 0)
        #expect(text.stdout.contains(hotel) && text.stdout.contains(train) && !text.stdout.contains(coffee))
        #expect(text.stderr.contains("the next page: --offset 3"), "\(text.stderr)")

        // Totals of every match, queued work included (4.50 + 310.00 synced, 12.25 queued).
        let totals = try sync.daemon.ctlJSON(["list", "--totals", "--limit", "1"])
        #expect(totals["totals"] == [
            ["currency": "EUR", "count": 3, "amount": "326.75", "pending_count": 1, "pending_amount": "12.25"],
            ["currency": "JPY", "count": 1, "amount": "14720", "pending_count": 0, "pending_amount": "0"],
        ])
        #expect(totals["without_amount"] == 1)
        let queuedTotals = try sync.daemon.ctlJSON(["list", "--totals", "--state", "queued"])
        #expect(queuedTotals["totals"] == [["currency": "EUR", "count": 1, "amount": "12.25", "pending_count": 1, "pending_amount": "12.25"]])
        let shown = try sync.daemon.ctl(["list", "--totals", "--category", "meals"])
        #expect(shown.stdout.contains("EUR       2         16.75  12.25 (1)"), "\(shown.stdout)")
    }

    /// Bad values: refused by expensectl before it connects (exit 64), and by
    /// the daemon for any other client (invalid_field naming the member).
    @Test(arguments: [
        (["--since", "2026-13-01"], "--since: month 13 does not exist"),
        (["--until", "last week"], "--until: must be YYYY-MM-DD"),
        (["--since", "2026-12-01", "--until", "2026-11-01"], "--until: 2026-11-01 is before since (2026-12-01)"),
        (["--state", "lost"], "--state: unknown state 'lost'; known: queued, sending, synced, needs-attention, conflict, deleting"),
        // What was typed is quoted escaped: it cannot clear the terminal.
        (["--state", "\u{1B}[2Jx"], "--state: unknown state '\\x1b[2Jx'"),
        (["--sort", "a\tb"], "--sort: unknown sort 'a\\x09b'"),
        (["--limit", "1\u{7F}"], "--limit: must be a whole number, got '1\\x7f'"),
        (["--sort", "size"], "--sort: unknown sort 'size'; known: date, amount, merchant, added"),
        (["--limit", "-1"], "--limit: must be from 1 to 100000, got -1"),
        (["--limit", "0"], "--limit: must be from 1 to 100000, got 0"),
        (["--limit", "ten"], "--limit: must be a whole number, got 'ten'"),
        (["--limit", "99999999999999999999"], "--limit: must be a whole number"),
        (["--offset", "-3"], "--offset: must not be negative, got -3"),
        (["--merchant", ""], "--merchant: must not be empty"),
        (["--reverse=yes"], "option '--reverse' takes no value"),
        (["--sort"], "option '--sort' needs a value"),
        (["--ids", "--totals"], "--ids prints transaction ids alone: not with --totals"),
        (["--ids", "--json"], "--ids prints transaction ids alone: not with --json"),
    ] as [([String], String)])
    func badValues_areUsageErrors_beforeAnythingIsSent(_ arguments: [String], message: String) throws {
        // No daemon at all: the client refuses before it would connect.
        let daemon = DaemonHarness()
        let result = try daemon.ctl(["list"] + arguments)
        #expect(result.status == 64, "\(arguments): \(result.stderr)")
        #expect(result.stderr.contains(message), "\(arguments): \(result.stderr)")
        #expect(!result.stderr.unicodeScalars.contains { ($0.value < 0x20 && $0 != "\n") || $0.value == 0x7F }, "\(arguments): \(result.stderr)")
        #expect(result.stdout.isEmpty)
    }

    @Test func badValues_overTheSocket_areInvalidFieldsNamingTheMember() throws {
        let daemon = DaemonHarness()
        try daemon.start()
        defer { daemon.stop() }
        _ = try Self.add(daemon, ["--merchant", "M", "--amount", "1", "--currency", "EUR", "--date", "2026-01-01"])
        let cases: [(JSONValue, String, String)] = [
            (["op": "list", "since": "2026-02-30"], "since", "2026-02-30 is not a calendar date"),
            (["op": "list", "state": "needs attention"], "state", "unknown state"),
            (["op": "list", "sort": 3], "sort", "must be a string"),
            (["op": "list", "limit": -1], "limit", "must be from 1 to 100000"),
            (["op": "list", "limit": .number(2.5)], "limit", "must be a whole number"),
            (["op": "list", "offset": "2"], "offset", "must be a whole number"),
            (["op": "list", "totals": "yes"], "totals", "must be true or false"),
            (["op": "list", "merchant": "a\u{7}b"], "merchant", "control character"),
            (["op": "list", "page": 2], "page", "unknown field 'page'"),
        ]
        for (request, field, message) in cases {
            let answer = try daemon.request(request)
            #expect(answer["ok"] == false, "\(request.serialized())")
            #expect(answer["error"]?["field"]?.stringValue == field, "\(answer.serialized())")
            #expect(answer["error"]?["message"]?.stringValue?.contains(message) == true, "\(answer.serialized())")
        }
        // The connection and the daemon carry on.
        #expect(try daemon.list().count == 1)
    }
}
