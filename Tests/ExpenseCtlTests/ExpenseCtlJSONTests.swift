import ExpenseCore
import ExpenseTestSupport
import Foundation
import Testing

/// `expensectl --json` against a real daemon and a real expense-server on
/// loopback: each subcommand's exit status and the shape of what it prints
/// (every member's name and JSON type). The daemon encodes these from the
/// typed control protocol and expensectl decodes and prints them; a member
/// renamed on either side fails here.
@Suite struct ExpenseCtlJSONTests {
    static let complete = ["--merchant", "Blue Bottle", "--amount", "12.50", "--currency", "EUR", "--date", "2026-11-29"]

    /// The members of a summary of the queue (`sync --wait`, `watch`).
    static let queueSummary: Shape = [
        "queued": "integer", "sending": "integer", "needs_attention": "integer", "oldest_job_at": "string|null",
        "server": "string", "spool_rejected": "integer", "spool_waiting": "integer", "held": "integer",
        "incomplete": "integer", "incomplete_jobs": "integer", "behind_attention": "integer", "reading": "integer",
    ]
    /// The outbox's use against its limits, in `status`.
    static let outboxRoom: Shape = [
        "jobs": "integer", "max_jobs": "integer", "receipt_bytes": "integer", "max_receipt_bytes": "integer",
        "disk_free": "integer|null", "disk_reserve": "integer", "headroom_held": "boolean|null",
    ]
    /// One expense in `list`.
    static let expenseSummary: Shape = [
        "transaction_id": "string", "client_id": "string", "state": "string", "merchant": "string|null", "amount": "string|null",
        "currency": "string|null", "date": "string|null", "category": "string|null", "comment": "string|null", "tax_tag": "string|null",
        "receipt": "string", "receipt_url": "string|null", "version": "integer|null", "pending_fields": "array", "conflict": "boolean",
        "conflicts": "object", "source": "object|null", "missing": "array", "read": "object",
    ]
    /// Where an expense came from.
    static let source: Shape = ["kind": "string", "name": "string", "sidecar": "string|null", "dropped_at": "string|null"]
    /// One expense in `show`, `edit`, `retry` and `resolve`: its summary, when it was made, and its jobs.
    static let expenseDetail = expenseSummary.merging(["created_at": "string|null", "jobs": "array"]) { $1 }
    static let job: Shape = [
        "seq": "integer", "uuid": "string", "kind": "string", "state": "string", "attempts": "integer", "transient_attempts": "integer",
        "created_at": "string", "next_attempt_at": "string|null", "last_error": "string|null", "last_error_class": "string|null",
    ]

    static func json(_ daemon: DaemonHarness, _ arguments: [String], sourceLocation: SourceLocation = #_sourceLocation) throws -> JSONValue {
        let result = try daemon.ctl(["--json"] + arguments)
        #expect(result.status == 0, "\(arguments): \(result.stderr)", sourceLocation: sourceLocation)
        #expect(result.stderr.isEmpty, "\(arguments): \(result.stderr)", sourceLocation: sourceLocation)
        return try JSONValue.parse(Array(result.stdout.utf8))
    }

    @Test func everySubcommand_printsItsDocumentedShape_andExitsZero() throws {
        let sync = try SyncHarness()
        try sync.daemon.start()
        defer { sync.daemon.stop() }
        let receipt = sync.daemon.directory.at("r.jpg")
        SampleReceipt.write(SampleReceipt.jpeg(), to: receipt)

        let added = try Self.json(sync.daemon, ["add"] + Self.complete)
        expect(added, is: ["transaction_id": "string", "client_id": "string", "state": "string", "duplicate": "boolean", "receipt": "string"])
        #expect(added["duplicate"] == false && added["receipt"] == "none")
        let id = try #require(added["transaction_id"]?.stringValue)
        let withReceipt = try Self.json(sync.daemon, ["add", "--receipt", receipt])
        #expect(withReceipt["receipt"] == "pending")
        let again = try Self.json(sync.daemon, ["add", "--client-id", try #require(added["client_id"]?.stringValue)] + Self.complete)
        #expect(again["duplicate"] == true && again["transaction_id"]?.stringValue == id, "the same client id is the same expense")

        let waited = try Self.json(sync.daemon, ["sync", "--wait", "--timeout", "30"])
        expect(waited, is: Self.queueSummary)
        #expect(waited["queued"] == 0 && waited["sending"] == 0 && waited["server"] == "ok")
        let triggered = try Self.json(sync.daemon, ["sync", "--refresh"])
        expect(triggered, is: ["triggered": "boolean", "refresh": "boolean", "now": "boolean"])
        #expect(triggered["refresh"] == true)

        let listed = try Self.json(sync.daemon, ["list"])
        let expenses = try #require(listed.arrayValue)
        #expect(expenses.count == 2)
        for expense in expenses { expect(expense, is: Self.expenseSummary) }
        // The add with --receipt keeps the path it was given; the one without, nothing.
        let fromFile = try #require(expenses.first { $0["transaction_id"] == withReceipt["transaction_id"] }?["source"])
        expect(fromFile, is: Self.source)
        #expect(fromFile["kind"] == "file" && fromFile["name"]?.stringValue == receipt && fromFile["dropped_at"] == .null)
        #expect(expenses.first { $0["transaction_id"]?.stringValue == id }?["source"] == .null)

        let shown = try Self.json(sync.daemon, ["show", id])
        expect(shown, is: Self.expenseDetail)
        #expect(shown["state"] == "synced" && shown["jobs"]?.arrayValue?.isEmpty == true)

        let edited = try Self.json(sync.daemon, ["edit", id, "--amount", "13.00"])
        expect(edited, is: Self.expenseDetail)
        let jobs = try #require(edited["jobs"]?.arrayValue)
        #expect(jobs.count == 1)
        for job in jobs { expect(job, is: Self.job) }
        #expect(edited["pending_fields"] == ["amount"])

        let status = try Self.json(sync.daemon, ["status"])
        expect(status, is: Self.queueSummary.merging([
            "line": "string", "server_url": "string|null", "state_dir": "string", "spool_dir": "string|null", "device_id": "string",
            "last_contact_at": "string|null", "last_error": "string|null", "last_error_class": "string|null", "last_error_at": "string|null",
            "outbox": "object",
            "network_metered": "string|null", "metered_mode": "string", "metered_hold": "string|null", "incomplete_rule": "string|null",
        ]) { $1 })
        expect(try #require(status["outbox"]), is: Self.outboxRoom)
        #expect(status["outbox"]?["max_jobs"] == 100_000 && status["outbox"]?["headroom_held"] == true, "\(status.serialized())")

        _ = try Self.json(sync.daemon, ["sync", "--wait", "--timeout", "30"])
        // `sync --wait` ended on a summary read after the last commit, which counted the four.
        let stats = try Self.json(sync.daemon, ["stats"])
        let half: Shape = ["applied": "integer", "failures": "object", "latency_ms": "object", "refusals": "object"]
        expect(stats, is: ["since_start": "object", "total": "object"])
        for part in ["since_start", "total"] {
            let value = try #require(stats[part])
            expect(value, is: half)
            expect(try #require(value["latency_ms"]), is: ["p50": "integer", "p95": "integer", "max": "integer"])
        }
        #expect(stats["since_start"]?["applied"] == 4, "two creates, one receipt, one edit: \(stats.serialized())")

        let deleted = try Self.json(sync.daemon, ["delete", id])
        expect(deleted, is: ["transaction_id": "string", "sent_nothing": "boolean"])
        #expect(deleted["sent_nothing"] == false)
    }

    @Test func retryAndDiscard_ofPendingWork_printTheirShapes() throws {
        // No server: what is added stays pending.
        let daemon = DaemonHarness()
        try daemon.start()
        defer { daemon.stop() }
        let added = try Self.json(daemon, ["add"] + Self.complete)
        let id = try #require(added["transaction_id"]?.stringValue)
        let retried = try Self.json(daemon, ["retry", id])
        expect(retried, is: Self.expenseDetail)
        #expect(retried["state"] == "queued")
        let discarded = try Self.json(daemon, ["discard", id])
        expect(discarded, is: ["transaction_id": "string", "discarded": "integer"])
        #expect(discarded["discarded"] == 1)
        let deleted = try Self.json(daemon, ["delete", try #require(Self.json(daemon, ["add"] + Self.complete)["transaction_id"]?.stringValue)])
        #expect(deleted["sent_nothing"] == true, "never sent: dropped without a request")
    }

    @Test func refusals_exitOne_andBadData_exitSixtyFive() throws {
        let daemon = DaemonHarness()
        try daemon.start()
        defer { daemon.stop() }
        for arguments in [["show", "cp-0206e11a39722b8b0b0d34"], ["retry", "cp-0206e11a39722b8b0b0d34"], ["discard", "cp-0206e11a39722b8b0b0d34"],
                          ["delete", "cp-0206e11a39722b8b0b0d34"], ["resolve", "cp-0206e11a39722b8b0b0d34", "--take", "mine"],
                          ["edit", "cp-0206e11a39722b8b0b0d34", "--merchant", "M"]] {
            let result = try daemon.ctl(["--json"] + arguments)
            #expect(result.status == 1, "\(arguments): \(result.stderr)")
            #expect(result.stdout.isEmpty)
            #expect(result.stderr.hasPrefix("expensectl: no expense matches 'cp-0206e11a39722b8b0b0d34'"), "\(arguments): \(result.stderr)")
        }
        let bad = try daemon.ctl(["--json", "add", "--merchant", "M", "--amount", "1.234", "--currency", "EUR", "--date", "2026-11-29"])
        #expect(bad.status == 65, "\(bad.stderr)")
        #expect(bad.stdout.isEmpty)
        let usage = try daemon.ctl(["--json", "edit", "cp-0206e11a39722b8b0b0d34"])
        #expect(usage.status == 64, "an edit without a field: \(usage.stderr)")
        #expect(try daemon.list().isEmpty, "nothing was stored")
    }

    @Test func watch_printsOneSummaryPerLine_untilTheDaemonStops() throws {
        let daemon = DaemonHarness()
        try daemon.start()
        defer { daemon.stop() }
        let watching = try ChildProcess(BuiltProducts.path("expensectl"), ["--socket", daemon.socketPath, "--json", "watch", "--summary"],
                                        outputDirectory: daemon.directory.path, name: "watch")
        defer { watching.stop() }
        try waitUntil(timeout: 10, "the first summary") { watching.standardOutput.hasSuffix("\n") }
        _ = try Self.json(daemon, ["add"] + Self.complete)
        try waitUntil(timeout: 10, "the summary after the add") {
            watching.standardOutput.split(separator: "\n").contains { (try? JSONValue.parse(Array($0.utf8)))?["queued"] == 1 }
        }
        // The daemon going away ends it, saying so. (Not a signal: a test
        // runner's children inherit its blocked signals through exec.)
        #expect(daemon.stop() == 0)
        let status = watching.waitForExit(timeout: 20)
        #expect(status != nil && status != 0, "watch ends when the daemon stops: \(String(describing: status))")
        #expect(watching.standardError.hasPrefix("expensectl: "), "\(watching.standardError)")
        let lines = watching.standardOutput.split(separator: "\n")
        #expect(lines.count >= 2)
        for line in lines { expect(try JSONValue.parse(Array(line.utf8)), is: Self.queueSummary) }
    }

    @Test func resolve_ofAConflict_printsTheExpense() throws {
        let sync = try SyncHarness()
        let other = sync.secondDevice()
        try sync.daemon.start()
        try other.start()
        defer { sync.daemon.stop(); other.stop() }
        let id = try #require(try Self.json(sync.daemon, ["add"] + Self.complete)["transaction_id"]?.stringValue)
        try sync.waitUntilDrained()
        _ = try Self.json(other, ["sync", "--refresh", "--wait", "--timeout", "20"])
        try waitUntil(timeout: 10, "the other device to learn the expense") { try other.list().count == 1 }
        // Both change the currency while the server is away: the second to arrive conflicts.
        sync.stopServer()
        _ = try Self.json(sync.daemon, ["edit", id, "--currency", "USD"])
        _ = try Self.json(other, ["edit", id, "--currency", "GBP"])
        // The first device's edit must reach the server first. Both retry on
        // their own once it is back, so the other stays stopped (its edit
        // waiting in its outbox) until the first one's has been applied.
        other.stop()
        try sync.startServer()
        #expect(try sync.daemon.ctl(["sync", "--wait", "--timeout", "20"]).status == 0)
        try other.start()
        _ = try Self.json(other, ["sync", "--wait", "--timeout", "20"])
        try waitUntil(timeout: 10, "the conflict to be flagged") { try Self.json(other, ["show", id])["conflict"] == true }

        let resolved = try Self.json(other, ["resolve", id, "--take", "server"])
        expect(resolved, is: Self.expenseDetail)
        #expect(resolved["transaction_id"]?.stringValue == id)
        let bad = try other.ctl(["--json", "resolve", id, "--take", "both"])
        #expect(bad.status == 64 && bad.stderr.contains("--take must be 'server' or 'mine'"), "\(bad.stderr)")
    }
}

/// Member names and their JSON types, `|` between the types a member may have.
typealias Shape = [String: String]

func expect(_ value: JSONValue, is shape: Shape, sourceLocation: SourceLocation = #_sourceLocation) {
    guard let members = value.objectValue else {
        Issue.record("not an object: \(value.serialized())", sourceLocation: sourceLocation)
        return
    }
    #expect(Set(members.keys) == Set(shape.keys), "members of \(value.serialized())", sourceLocation: sourceLocation)
    for (name, member) in members {
        guard let allowed = shape[name] else { continue }
        #expect(allowed.split(separator: "|").contains(Substring(kind(of: member))), "\(name) is \(kind(of: member)), not \(allowed)",
                sourceLocation: sourceLocation)
    }
}

/// The JSON type of `value`, integers told apart from other numbers.
func kind(of value: JSONValue) -> String {
    switch value {
    case .null: "null"
    case .bool: "boolean"
    case .integer: "integer"
    case .number: "number"
    case .string: "string"
    case .array: "array"
    case .object: "object"
    }
}
