import ExpenseCore
import Posix

/// Where to reach the daemon and how to print.
struct Context: Sendable {
    let socketPath: String
    let json: Bool

    func connect() throws -> ControlClient { try ControlClient(socketPath: socketPath) }

    func printJSON(_ value: JSONValue) { Output.out(value.prettySerialized()) }
}

let fieldOptions = [
    Option(name: "--merchant", valueName: "TEXT", help: "who was paid", kind: .field),
    Option(name: "--amount", valueName: "DECIMAL", help: "amount as a decimal, e.g. 12.50 (negative for a refund)", kind: .field),
    Option(name: "--currency", valueName: "CODE", help: "ISO 4217 currency code, e.g. EUR", kind: .field),
    Option(name: "--date", valueName: "YYYY-MM-DD", help: "date of the expense", kind: .field),
    Option(name: "--category", valueName: "TEXT", help: "category, e.g. Meals", kind: .field),
    Option(name: "--comment", valueName: "TEXT", help: "free text", kind: .field),
    Option(name: "--tax-tag", valueName: "TEXT", help: "tax tag", kind: .field),
]

/// The field options given, by their JSON names, as typed (not yet normalized).
func typedFields(_ invocation: Invocation) -> ExpenseFields {
    var fields = ExpenseFields()
    for name in ExpenseFields.names {
        if let value = invocation.value("--" + name.replacingOccurrences("_", "-")) { fields[name] = value }
    }
    return fields
}

/// How amounts and empty values are read, for the help of add and edit.
let fieldRules = """
    An amount is stored with its currency's minor units: --amount 10 --currency EUR
    is 10.00 EUR, 10 JPY stays 10. An empty value leaves an optional field
    (--category, --comment, --tax-tag) empty.
    """

let idArgument = (name: "id", help: "a transaction id (cp-…), a client UUID, or a unique prefix of either")

let subcommands: [Subcommand] = [
    Subcommand("add", "Queue a new expense, with or without a receipt.",
               options: fieldOptions + [
                   Option(name: "--receipt", valueName: "FILE", help: "a JPEG, PNG or PDF receipt to attach", kind: .path),
                   Option(name: "--client-id", valueName: "UUID", help: "the operation's UUID, for scripts that retry an add (either case; sent in lowercase)"),
               ],
               discussion: """
                   Without --receipt, --merchant, --amount, --currency and --date are required.
                   With --receipt every field is optional (a receipt-only expense). Prints the
                   expense's transaction id once expensed has stored it durably.
                   \(fieldRules)
                   """, run: runAdd),
    Subcommand("list", "List expenses: synced ones and those still pending.", run: runList),
    Subcommand("show", "Show one expense and its pending jobs.", arguments: [idArgument], run: runShow),
    Subcommand("retry", "Send an expense's held-back jobs again, now.", arguments: [idArgument], run: runRetry),
    Subcommand("discard", "Drop an expense's pending jobs and receipt file.", arguments: [idArgument],
               discussion: "What the server already has is not changed.", run: runDiscard),
    Subcommand("status", "Show the queue and the server's state.", run: runStatus),
    Subcommand("watch", "Print the queue's state each time it changes, until interrupted.", run: runWatch),
    Subcommand("sync", "Send the queue now (and fetch the server's changes with --refresh).",
               options: [
                   Option(name: "--refresh", valueName: nil, help: "also fetch what changed on the server"),
                   Option(name: "--wait", valueName: nil, help: "return once nothing is queued or sending"),
                   Option(name: "--timeout", valueName: "SECONDS", help: "with --wait, give up after this long (exit 75); 30, 0.5, 500ms, 10m"),
               ],
               discussion: "Also resumes sending after the server refused the credentials, with the token file read again first.", run: runSync),
    Subcommand("stats", "Show enqueue-to-applied latency and failures, since start and in total.", run: runStats),
    Subcommand("edit", "Change fields of an expense, synced or still pending.", arguments: [idArgument],
               options: fieldOptions,
               discussion: """
                   Works offline: the change is queued (merged into a change not yet sent)
                   and shown by list and show at once. An empty value clears an optional
                   field: --comment '' leaves the expense without a comment, on the server
                   too once synced. Merchant, amount, currency and date can be changed, not
                   cleared. An amount given without --currency is written with the minor
                   units of the expense's currency (--amount 13 on a EUR expense is 13.00).
                   """, run: runEdit),
    Subcommand("delete", "Delete an expense; one never sent is dropped without a request.", arguments: [idArgument], run: runDelete),
    Subcommand("resolve", "Settle a conflict the server flagged, keeping its values or yours.", arguments: [idArgument],
               options: [Option(name: "--take", valueName: "server|mine", help: "whose values to keep (required)", isRequired: true)],
               run: runResolve),
]

func runAdd(_ invocation: Invocation, _ context: Context) throws -> ExitStatus {
    let receiptPath = invocation.path("--receipt")
    let fields: ExpenseFields
    do {
        fields = try Validation.normalizedCreate(typedFields(invocation), hasReceipt: receiptPath != nil)
    } catch {
        throw ClientError(status: .dataError, message: "\(error)")
    }
    let clientID = invocation.value("--client-id")?.lowercased() ?? ClientID.make()
    guard ClientID.isCanonical(clientID) else {
        throw ClientError(status: .usage, message: "--client-id must be a UUID like 1b4e28ba-2fa1-11d2-883f-0000f87d3b6e")
    }
    var receipt: FileDescriptor?
    if let receiptPath { receipt = try openReceipt(receiptPath) }

    var request: [String: JSONValue] = ["op": "add", "client_id": .string(clientID)]
    request["expense"] = .object(fields.jsonMembers)
    if receipt != nil { request["receipt"] = true }

    func send() throws -> JSONValue {
        do {
            return try context.connect().call(request, passing: receipt)
        } catch let error as ClientError where error.status == .ioError {
            // The answer was lost; the same client id makes the retry safe.
            return try context.connect().call(request, passing: receipt)
        }
    }
    let result: JSONValue
    do {
        result = try send()
    } catch let error as ClientError where error.unanswered {
        // Whether the first try or the retry went unanswered.
        // The daemon may yet store it: only the same client id can say.
        throw ClientError(status: error.status, message: """
            \(error.message)
            The expense may have been stored. To add it without risk of a duplicate, run the same command again with --client-id \(clientID)
            """)
    }
    if context.json { context.printJSON(result) } else {
        Output.out(result.text("transaction_id"))
        if result["duplicate"]?.boolValue == true {
            Output.error("expensectl: this client id was added before (\(result.text("state"))); the fields given now were not used")
        }
    }
    return .success
}

/// Opens a receipt with the caller's own rights; the daemon receives the
/// descriptor, never the path. Whether its bytes are a whole JPEG, PNG or
/// PDF file the daemon checks as it copies them (one check, the spool's
/// too), answering `receipt_invalid` with the reason (exit status 65).
/// - Parameter pathBytes: the path as given, which need not be UTF-8.
func openReceipt(_ pathBytes: [UInt8]) throws -> FileDescriptor {
    let path = String(decoding: pathBytes, as: UTF8.self).escapingControlCharacters()
    let fd: FileDescriptor
    do {
        fd = try FileDescriptor.open(pathBytes: pathBytes, [.readOnly, .noCTTY, .nonBlocking])
    } catch {
        throw ClientError(status: error.isPermissionDenied ? .noPermission : .noInput, message: "cannot open receipt '\(path)': \(error.reason)")
    }
    do {
        guard try fd.status().kind == .regular else {
            throw ClientError(status: .noInput, message: "receipt '\(path)' is not a regular file")
        }
    } catch let error as SystemCallError {
        throw ClientError(status: .noInput, message: "cannot read receipt '\(path)': \(error.reason)")
    }
    return fd
}

func runList(_ invocation: Invocation, _ context: Context) throws -> ExitStatus {
    let result = try context.connect().call(["op": "list"])
    let expenses = result["expenses"]?.arrayValue ?? []
    if context.json {
        context.printJSON(.array(expenses))
        return .success
    }
    if expenses.isEmpty {
        Output.out("No expenses.")
        return .success
    }
    var table = Table(headers: ["TRANSACTION ID", "STATE", "RECEIPT", "DATE", "AMOUNT", "MERCHANT"])
    for expense in expenses {
        var state = expense.text("state")
        if expense["conflict"]?.boolValue == true { state += " (conflict)" }
        table.rows.append([expense.text("transaction_id"), state, expense.text("receipt"), expense.text("date"),
                           amountText(expense), expense.text("merchant")])
    }
    Output.out(table.rendered)
    return .success
}

func amountText(_ expense: JSONValue) -> String {
    guard let amount = expense["amount"]?.stringValue else { return "-" }
    return amount + (expense["currency"]?.stringValue.map { " \($0)" } ?? "")
}

func runShow(_ invocation: Invocation, _ context: Context) throws -> ExitStatus {
    let result = try context.connect().call(["op": "show", "ref": .string(invocation.positional[0].lowercased())])
    if context.json {
        context.printJSON(result)
        return .success
    }
    var lines: [(String, String)] = [
        ("Transaction ID", result.text("transaction_id")),
        ("Client ID", result.text("client_id")),
        ("State", result.text("state")),
        ("Merchant", result.text("merchant")),
        ("Amount", amountText(result)),
        ("Date", result.text("date")),
        ("Category", result.text("category")),
        ("Comment", result.text("comment")),
        ("Tax tag", result.text("tax_tag")),
        ("Receipt", result.text("receipt")),
        ("Receipt URL", result.text("receipt_url")),
        ("Version", result.text("version")),
    ]
    let pending = result["pending_fields"]?.arrayValue?.compactMap(\.stringValue) ?? []
    if !pending.isEmpty { lines.append(("Pending fields", pending.joined(separator: ", "))) }
    if result["conflict"]?.boolValue == true, let conflicts = result["conflicts"]?.objectValue {
        for (field, values) in conflicts.sorted(by: { $0.key < $1.key }) {
            lines.append(("Conflict", "\(field): server has \(values.text("server")), you sent \(values.text("client"))"))
        }
    }
    var text = lines.map { "\($0.0):" + String(repeating: " ", count: max(1, 16 - $0.0.count)) + $0.1 }.joined(separator: "\n")
    let jobs = result["jobs"]?.arrayValue ?? []
    if !jobs.isEmpty {
        var table = Table(headers: ["JOB", "KIND", "STATE", "FAILED ATTEMPTS", "NEXT ATTEMPT", "LAST ERROR"])
        for job in jobs {
            var lastError = job.text("last_error")
            if let errorClass = job["last_error_class"]?.stringValue { lastError = "[\(errorClass)] " + lastError }
            let rejected = job["attempts"]?.intValue ?? 0, transient = job["transient_attempts"]?.intValue ?? 0
            var attempts = [rejected > 0 ? "\(rejected) rejected" : nil, transient > 0 ? "\(transient) transient" : nil].compactMap { $0 }.joined(separator: ", ")
            if attempts.isEmpty { attempts = "0" }
            let waiting = job["state"] == "needs_attention" ? "-" : job.text("next_attempt_at")
            // The whole uuid: its first digits are a version 7 timestamp, the same for a create and its receipt job.
            table.rows.append([job.text("uuid"), job.text("kind"), job.text("state"), attempts, waiting, lastError])
        }
        text += "\n\nPending jobs:\n" + table.rendered
        // Each stopped job's own hint (the daemon's, by why it stopped), once.
        var hints: [String] = []
        for hint in jobs.compactMap({ $0["hint"]?.stringValue }) where !hints.contains(hint) { hints.append(hint) }
        if !hints.isEmpty {
            text += "\n\nNot tried again until you decide. " + hints.joined(separator: "\n")
        }
    }
    Output.out(text)
    return .success
}

func runRetry(_ invocation: Invocation, _ context: Context) throws -> ExitStatus {
    let result = try context.connect().call(["op": "retry", "ref": .string(invocation.positional[0].lowercased())])
    if context.json { context.printJSON(result) } else { Output.out("\(result.text("transaction_id")): queued to send now") }
    return .success
}

func runDiscard(_ invocation: Invocation, _ context: Context) throws -> ExitStatus {
    let result = try context.connect().call(["op": "discard", "ref": .string(invocation.positional[0].lowercased())])
    if context.json { context.printJSON(result) } else {
        Output.out("\(result.text("transaction_id")): discarded \(result.text("discarded")) pending job(s)")
    }
    return .success
}

func runStatus(_ invocation: Invocation, _ context: Context) throws -> ExitStatus {
    let result = try context.connect().call(["op": "status"])
    if context.json {
        context.printJSON(result)
        return .success
    }
    var lines: [(String, String)] = [
        ("Queue", "\(result.text("queued")) queued, \(result.text("sending")) sending, \(result.text("needs_attention")) need attention"),
        ("Oldest job", result.text("oldest_job_at")),
        ("Server", serverText(result)),
    ]
    if result["server"] == "needs_credentials" {
        lines.append(("Credentials", "needed: the server refused the token; fix the token file, then run 'expensectl sync'"))
    }
    if result["server_url"]?.stringValue != nil {
        lines.append(("Last contact", result["last_contact_at"]?.stringValue.map(timeText) ?? "never since the daemon started"))
        if let at = result["last_error_at"]?.stringValue {
            lines.append(("Last error", "\(result.text("last_error_class")) at \(timeText(at)): \(result.text("last_error"))"))
        }
    }
    for (key, label) in [("spool_rejected", "Spool rejected"), ("state_dir", "State directory"), ("spool_dir", "Spool directory")] where result[key] != nil {
        var value = result.text(key)
        if key == "spool_rejected", (result[key]?.intValue ?? 0) > 0, let spool = result["spool_dir"]?.stringValue {
            value += " (files in \(spool)/rejected/, each with a .reason file)"
        }
        lines.append((label, value))
    }
    Output.out(lines.map { "\($0.0):" + String(repeating: " ", count: max(1, 17 - $0.0.count)) + $0.1 }.joined(separator: "\n"))
    return .success
}

/// A timestamp from the daemon with how long ago it was: "2026-11-30T09:15:02.123Z (12s ago)".
func timeText(_ timestamp: String) -> String {
    guard let milliseconds = Timestamp.parse(timestamp) else { return timestamp }
    return "\(timestamp) (\(QueueSummary.age(milliseconds: Clock.wallMilliseconds - milliseconds)) ago)"
}

func serverText(_ status: JSONValue) -> String {
    let state = status.text("server")
    guard let url = status["server_url"]?.stringValue else { return "not configured (queueing only)" }
    return "\(url) (\(state == "unknown" ? "not contacted yet" : state.replacingOccurrences("_", " ")))"
}

func runWatch(_ invocation: Invocation, _ context: Context) throws -> ExitStatus {
    let client = try context.connect()
    try client.send(["op": "watch"])
    while true {
        let summary = try client.result(of: try client.readLine())
        if context.json {
            Output.out(summary.serialized())
        } else {
            var line = "\(summary.text("queued")) queued, \(summary.text("sending")) sending, \(summary.text("needs_attention")) need attention; server \(summary.text("server").replacingOccurrences("_", " "))"
            if let rejected = summary["spool_rejected"]?.intValue, rejected > 0 { line += "; \(rejected) spool files rejected" }
            Output.out(line)
        }
    }
}

extension String {
    func replacingOccurrences(_ target: Character, _ replacement: Character) -> String {
        String(map { $0 == target ? replacement : $0 })
    }
}

func runSync(_ invocation: Invocation, _ context: Context) throws -> ExitStatus {
    var timeout: Int64?
    if invocation.value("--timeout") != nil && !invocation.has("--wait") {
        throw ClientError(status: .usage, message: "--timeout applies to --wait only")
    }
    if let text = invocation.value("--timeout") {
        // Read in integers: no value can overflow the deadline or be NaN.
        guard let milliseconds = DurationText.milliseconds(text), milliseconds > 0 else {
            throw ClientError(status: .usage, message: """
                --timeout must be a duration from 1ms to 365 days, \(DurationText.syntax); not '\(text.prefix(64).description.escapingControlCharacters())'
                """)
        }
        timeout = milliseconds
    }
    let client = try context.connect()
    let result = try client.call(["op": "sync", "refresh": .bool(invocation.has("--refresh"))])
    guard invocation.has("--wait") else {
        if context.json { context.printJSON(result) } else { Output.out("Sync started.") }
        return .success
    }
    // Follow the queue until nothing is queued or sending.
    let deadline = timeout.map { Clock.monotonicNanoseconds + UInt64($0) * 1_000_000 }
    try client.send(["op": "watch"])
    let progress = Terminal.isTerminal(1) && !context.json
    var last: JSONValue = .null
    while true {
        if let deadline, Clock.monotonicNanoseconds > deadline {
            if progress { Output.raw("\n") }
            let left = (last["queued"]?.intValue ?? 0) + (last["sending"]?.intValue ?? 0)
            let why = last["server"] == "unreachable"
                ? "the server is unreachable; the queue drains once it answers again"
                : "the queue keeps draining in the background"
            throw ClientError(status: .tempFailure, message: "\(left) still pending after \(invocation.value("--timeout") ?? "")s: \(why)")
        }
        guard let summary = try client.readLine(timeoutMilliseconds: 200).map({ try client.result(of: $0) }) else { continue }
        last = summary
        let queued = summary["queued"]?.intValue ?? 0, sending = summary["sending"]?.intValue ?? 0
        let attention = summary["needs_attention"]?.intValue ?? 0
        let unreachable = summary["server"] == "unreachable" ? "; server unreachable, waiting for it" : ""
        if progress { Output.raw("\r\u{1B}[K\(queued) queued, \(sending) sending, \(attention) need attention\(unreachable)") }
        if summary["server"] == "needs_credentials" {
            if progress { Output.raw("\n") }
            throw ClientError(status: .noPermission, message: "the server refused the credentials; fix the token file, then run 'expensectl sync'")
        }
        if queued + sending == 0 {
            if progress { Output.raw("\n") }
            if context.json { context.printJSON(summary) } else {
                Output.out(attention > 0 ? "Done; \(attention) need attention (see 'expensectl list')." : "Done; everything is synced.")
            }
            return .success
        }
    }
}

func runStats(_ invocation: Invocation, _ context: Context) throws -> ExitStatus {
    let result = try context.connect().call(["op": "stats"])
    if context.json {
        context.printJSON(result)
        return .success
    }
    func line(_ label: String, _ part: JSONValue?, approximate: Bool) -> String {
        let latency = part?["latency_ms"]
        let bound = approximate ? "<=" : ""
        var text = "\(label):" + String(repeating: " ", count: max(1, 20 - label.count)) + "\(part?.text("applied") ?? "0") applied"
        if latency?["p50"]?.intValue != nil {
            text += "; latency p50 \(bound)\(latency!.text("p50")) ms, p95 \(bound)\(latency!.text("p95")) ms, max \(bound)\(latency!.text("max")) ms"
        }
        let failures = (part?["failures"]?.objectValue ?? [:]).sorted { $0.key < $1.key }.map { "\($0.key) \($0.value.intValue ?? 0)" }
        text += "; failures: " + (failures.isEmpty ? "none" : failures.joined(separator: ", "))
        return text
    }
    Output.out(line("Since start", result["since_start"], approximate: false) + "\n" + line("In total", result["total"], approximate: true))
    return .success
}

func runEdit(_ invocation: Invocation, _ context: Context) throws -> ExitStatus {
    let given = typedFields(invocation)
    guard !given.isEmpty else { throw ClientError(status: .usage, message: "edit needs at least one field option, e.g. --amount 13.00") }
    let changes: ExpenseFields
    do {
        changes = try Validation.normalized(given, amountNeedsCurrency: false)
    } catch {
        throw ClientError(status: .dataError, message: "\(error)")
    }
    let request: [String: JSONValue] = ["op": "edit", "ref": .string(invocation.positional[0].lowercased()), "set": .object(changes.jsonMembers)]
    let result = try context.connect().call(request)
    if context.json { context.printJSON(result) } else { Output.out("\(result.text("transaction_id")): edited (\(result.text("state")))") }
    return .success
}

func runDelete(_ invocation: Invocation, _ context: Context) throws -> ExitStatus {
    let result = try context.connect().call(["op": "delete", "ref": .string(invocation.positional[0].lowercased())])
    if context.json { context.printJSON(result) } else {
        let how = result["sent_nothing"]?.boolValue == true ? "deleted (it never reached the server; nothing is sent)" : "delete queued"
        Output.out("\(result.text("transaction_id")): \(how)")
    }
    return .success
}

func runResolve(_ invocation: Invocation, _ context: Context) throws -> ExitStatus {
    guard let take = invocation.value("--take") else { throw ClientError(status: .usage, message: "resolve needs --take server or --take mine") }
    guard take == "server" || take == "mine" else { throw ClientError(status: .usage, message: "--take must be 'server' or 'mine'") }
    let result = try context.connect().call(["op": "resolve", "ref": .string(invocation.positional[0].lowercased()), "take": .string(take)])
    if context.json { context.printJSON(result) } else { Output.out("\(result.text("transaction_id")): keeping \(take == "mine" ? "your" : "the server's") values") }
    return .success
}
