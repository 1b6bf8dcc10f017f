import ControlProtocol
import ExpenseCore
import Posix

// The subcommands about the queue as a whole and the server.

func runStatus(_ invocation: Invocation, _ context: Context) throws -> ExitStatus {
    let report = try context.connect().call(.status, expecting: StatusReport.self)
    if context.json {
        context.printJSON(report)
        return .success
    }
    let summary = report.summary
    var lines: [(String, String)] = [
        ("Queue", "\(summary.queued) queued, \(summary.sending) sending, \(summary.needsAttention) need attention"
            + (summary.behindAttentionNote.map { "; " + $0 } ?? "")),
        ("Oldest job", Output.text(summary.oldestJobMilliseconds.map { Timestamp.format(milliseconds: $0) })),
        ("Server", serverText(report)),
    ]
    if let account = report.account { lines.insert(("Account", AccountName.displayName(account).escapingControlCharacters()), at: 0) }
    if summary.server == .needsCredentials {
        let which = report.accounts.map { accounts in
            " of " + accounts.filter { $0.summary.server == .needsCredentials }.map { AccountName.displayName($0.account).escapingControlCharacters() }.joined(separator: ", ")
        } ?? ""
        lines.append(("Credentials", "needed: the server refused the token\(which); fix the token file, then run 'expensectl sync'"))
    }
    for state in report.accounts ?? [] {
        let queue = state.summary
        var text = "\(queue.queued) queued, \(queue.sending) sending, \(queue.needsAttention) need attention; "
        text += queue.server == .needsCredentials ? "paused, needs credentials" : state.tokenProblem == nil ? "credentials ok" : "no usable token"
        if let problem = state.tokenProblem { text += " (\(problem.escapingControlCharacters()))" }
        if let failure = state.lastError, let at = failure.lastErrorMilliseconds {
            text += "; last error \(Output.text(failure.lastErrorClass)) at \(timeText(at)): \(Output.text(failure.lastError))"
        }
        lines.append(("Account " + AccountName.displayName(state.account).escapingControlCharacters(), text))
    }
    if let metered = report.metered { lines.append(("Network", meteredText(metered, held: summary.held))) }
    if let rule = report.incompleteRule {
        let which = summary.incomplete > 0 ? "; 'expensectl list --incomplete' lists them, 'expensectl edit ID' completes one" : ""
        lines.append(("Incomplete", "\(summary.incomplete) held: \(Output.text(rule))\(which)"))
    }
    if summary.reading > 0 {
        lines.append(("Reading", "\(summary.reading) receipt\(summary.reading == 1 ? "" : "s") being read; a receipt alone waits for its reading (at most reading_wait) before it is sent"))
    }
    if report.serverURL != nil {
        lines.append(("Last contact", report.contact?.lastContactMilliseconds.map(timeText) ?? "never since the daemon started"))
        if let contact = report.contact, let at = contact.lastErrorMilliseconds {
            lines.append(("Last error", "\(Output.text(contact.lastErrorClass)) at \(timeText(at)): \(Output.text(contact.lastError))"))
        }
    }
    if let outbox = report.outbox { lines.append(("Outbox", outboxText(outbox))) }
    var rejected = "\(summary.spoolRejected)"
    if summary.spoolRejected > 0, let spool = report.spoolDirectory {
        rejected += " (files in \(spool)/rejected/, each with a .reason file)"
    }
    lines.append(("Spool rejected", rejected))
    if summary.spoolWaiting > 0 {
        lines.append(("Spool waiting", "\(summary.spoolWaiting) files wait for room in the outbox; they are taken as room frees"))
    }
    lines += [("State directory", Output.text(report.stateDirectory)), ("Spool directory", Output.text(report.spoolDirectory))]
    Output.out(lines.map { "\($0.0):" + String(repeating: " ", count: max(1, 17 - $0.0.count)) + $0.1 }.joined(separator: "\n"))
    return .success
}

/// The outbox's use against its limits: "3 of 100000 jobs; receipts 1.0 MiB of 2.0 GiB; 9.1 GiB free, reserve 1.0 GiB".
func outboxText(_ outbox: OutboxRoomState) -> String {
    let limits = outbox.limits, use = outbox.use
    var text = "\(use.jobs) of \(limits.maxJobs) jobs; receipts \(SizeText.describe(bytes: use.receiptBytes)) of \(SizeText.describe(bytes: limits.maxReceiptBytes))"
    if let free = use.diskFreeBytes {
        text += "; \(SizeText.describe(bytes: max(0, free))) free, reserve \(SizeText.describe(bytes: limits.diskReserveBytes))"
    }
    if outbox.headroomHeld == false { text += "; the drain's headroom is in use (the file system filled)" }
    return text
}

/// A time from the daemon with how long ago it was: "2026-11-30T09:15:02.123Z (12s ago)".
func timeText(_ milliseconds: Int64) -> String {
    "\(Timestamp.format(milliseconds: milliseconds)) (\(QueueSummary.age(milliseconds: Clock.wallMilliseconds - milliseconds)) ago)"
}

/// Whether the link is metered and why the queue waits, e.g. "metered
/// (NetworkManager: guess-yes); receipt uploads paused (metered =
/// pause-receipts), 2 held; 'expensectl sync --now' sends them once".
func meteredText(_ metered: StatusReport.MeteredState, held: Int) -> String {
    guard let network = metered.network else { return "no NetworkManager on the system bus: nothing is held (metered = \(Output.text(metered.mode)))" }
    let isMetered = network == "yes" || network == "guess-yes"
    var text = "\(isMetered ? "metered" : "not metered") (NetworkManager: \(network.escapingControlCharacters()))"
    if let hold = metered.hold {
        text += "; \(hold.escapingControlCharacters())"
        text += held > 0 ? ", \(held) held; 'expensectl sync --now' sends them once" : "; nothing is waiting"
    } else if isMetered {
        text += metered.mode == "ignore" ? "; nothing is held (metered = ignore)" : "; sending what it holds once ('expensectl sync --now')"
    }
    return text
}

func serverText(_ report: StatusReport) -> String {
    let state = report.summary.server.rawValue
    guard let url = report.serverURL else { return "not configured (queueing only)" }
    return "\(url) (\(state == "unknown" ? "not contacted yet" : state.replacingOccurrences("_", " ")))"
}

func runWatch(_ invocation: Invocation, _ context: Context) throws -> ExitStatus {
    if invocation.has("--summary") { return try watchSummaries(context) }
    // No daemon at the start is an error, as for any command; once
    // watched, losing it is a restart to wait out.
    var connected = false
    var lost = false
    var backoffMilliseconds: Int32 = 100
    while true {
        do {
            let client = try context.connect()
            try client.send(.watch(changes: true))
            // The first answer is the queue's summary: from here on every change is seen.
            _ = try client.result(of: try client.readLine(), as: QueueSummary.self)
            Output.error(lost ? "expensectl: reconnected to expensed; changes made meanwhile were not seen" : "expensectl: watching changes (times in UTC)")
            lost = false
            connected = true
            backoffMilliseconds = 100
            while true { try printChange(try client.readLine(), client, context) }
        } catch let error as ClientError where (error.status == .ioError || error.status == .unavailable) && (lost || connected) {
            // The daemon went away (a restart): say so once, then try again.
            if !lost { Output.error("expensectl: lost expensed (\(error.message.prefix { $0 != "\n" })); reconnecting") }
            lost = true
            _ = try? Poll.wait([], timeoutMilliseconds: backoffMilliseconds)
            backoffMilliseconds = min(backoffMilliseconds * 2, 2000)
        }
    }
}

/// One line of a change watch: the change, or how many the daemon could not keep for us.
private func printChange(_ line: JSONValue, _ client: ControlClient, _ context: Context) throws {
    guard case .object(let members) = line, members["ok"] == true, let result = members["result"] else {
        // An error line from the daemon ends the watch as any command's error would.
        _ = try client.result(of: line, as: QueueSummary.self)
        return
    }
    if let missed = result["missed"]?.intValue {
        if context.json { Output.out(result.serialized()) } else { Output.out("(missed \(missed) changes: this watch read too slowly)") }
        return
    }
    guard let change = ExpenseChange(json: result) else { return }
    if context.json {
        Output.out(change.json.serialized())
        return
    }
    func state(_ name: String) -> String { name.replacingOccurrences("_", " ") }
    var text = "\(Timestamp.format(milliseconds: change.wallMilliseconds))  \(change.transactionID.escapingControlCharacters())  "
    text += "\(change.from.map(state) ?? "new") → \(state(change.to))"
    if let reason = change.reason { text += "  (\(reason.escapingControlCharacters()))" }
    if context.accounts == .all { text += "  [\(AccountName.displayName(change.account).escapingControlCharacters())]" }
    Output.out(text)
}

/// The newest queue summary each time it changes (`watch --summary`);
/// ends when the daemon goes away.
private func watchSummaries(_ context: Context) throws -> ExitStatus {
    let client = try context.connect()
    try client.send(.watch())
    while true {
        let summary = try client.result(of: try client.readLine(), as: QueueSummary.self)
        if context.json {
            Output.out(summary.json.serialized())
        } else {
            var line = "\(summary.queued) queued, \(summary.sending) sending, \(summary.needsAttention) need attention; server \(summary.server.rawValue.replacingOccurrences("_", " "))"
            if summary.held > 0 { line += "; \(summary.held) held (metered link)" }
            if summary.incomplete > 0 { line += "; \(summary.incomplete) incomplete" }
            if let behind = summary.behindAttentionNote { line += "; " + behind }
            if summary.spoolRejected > 0 { line += "; \(summary.spoolRejected) spool files rejected" }
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
    let result = try client.call(.sync(refresh: invocation.has("--refresh"), now: invocation.has("--now")), expecting: SyncResult.self)
    guard invocation.has("--wait") else {
        if context.json { context.printJSON(result) } else { Output.out("Sync started.") }
        return .success
    }
    // Follow the queue until nothing is queued or sending.
    let deadline = timeout.map { Clock.monotonicNanoseconds + UInt64($0) * 1_000_000 }
    try client.send(.watch())
    let progress = Terminal.isTerminal(1) && !context.json
    var last: QueueSummary?
    while true {
        if let deadline, Clock.monotonicNanoseconds > deadline {
            if progress { Output.raw("\n") }
            let left = last?.pending ?? 0
            let why = last?.server == .unreachable
                ? "the server is unreachable; the queue drains once it answers again"
                : "the queue keeps draining in the background"
            throw ClientError(status: .tempFailure, message: "\(left) still pending after \(invocation.value("--timeout") ?? "")s: \(why)")
        }
        guard let summary = try client.readLine(timeoutMilliseconds: 200).map({ try client.result(of: $0, as: QueueSummary.self) }) else { continue }
        last = summary
        let unreachable = summary.server == .unreachable ? "; server unreachable, waiting for it" : ""
        let held = (summary.held > 0 ? ", \(summary.held) held (metered link)" : "")
            + (summary.incomplete > 0 ? ", \(summary.incomplete) incomplete" : "")
        if progress { Output.raw("\r\u{1B}[K\(summary.queued) queued, \(summary.sending) sending, \(summary.needsAttention) need attention\(held)\(unreachable)") }
        if summary.server == .needsCredentials {
            if progress { Output.raw("\n") }
            throw ClientError(status: .noPermission, message: "the server refused the credentials; fix the token file, then run 'expensectl sync'")
        }
        // What a metered link holds waits for the link (or `sync --now`),
        // and an incomplete expense for its edit, not for this.
        if summary.pendingUnheld == 0 {
            if progress { Output.raw("\n") }
            let behind = summary.behindAttention > 0 ? ", \(summary.behindAttention) more waiting behind them" : ""
            let attention = summary.needsAttention > 0 ? "; \(summary.needsAttention) need attention\(behind) (see 'expensectl list')" : ""
            let incomplete = summary.incomplete > 0
                ? "\(summary.incomplete) incomplete, held until an edit gives them what the backend needs ('expensectl list --incomplete')" : nil
            if context.json { context.printJSON(summary) } else if summary.held > 0 {
                let also = incomplete.map { "; " + $0 } ?? ""
                Output.out("Done; \(summary.held) held while the link is metered ('expensectl sync --now' sends them once)\(also)\(attention).")
            } else if let incomplete {
                Output.out("Done; \(incomplete)\(attention).")
            } else {
                Output.out(summary.needsAttention > 0 ? "Done\(attention)." : "Done; everything is synced.")
            }
            return .success
        }
    }
}

func runStats(_ invocation: Invocation, _ context: Context) throws -> ExitStatus {
    let result = try context.connect().call(.stats, expecting: StatsReport.self)
    if context.json {
        context.printJSON(result)
        return .success
    }
    func line(_ label: String, _ part: StatsReport.Part, approximate: Bool) -> String {
        let latency = part.latency
        let bound = approximate ? "<=" : ""
        func shown(_ milliseconds: Int64?) -> String { milliseconds.map(String.init) ?? "-" }
        var text = "\(label):" + String(repeating: " ", count: max(1, 20 - label.count)) + "\(part.applied) applied"
        if let p50 = latency.p50 {
            text += "; latency p50 \(bound)\(p50) ms, p95 \(bound)\(shown(latency.p95)) ms, max \(bound)\(shown(latency.max)) ms"
        }
        let failures = part.failures.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }
        text += "; failures: " + (failures.isEmpty ? "none" : failures.joined(separator: ", "))
        let refusals = part.refusals.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }
        text += "; refused for room: " + (refusals.isEmpty ? "none" : refusals.joined(separator: ", "))
        return text
    }
    Output.out(line("Since start", result.sinceStart, approximate: false) + "\n" + line("In total", result.total, approximate: true))
    return .success
}
