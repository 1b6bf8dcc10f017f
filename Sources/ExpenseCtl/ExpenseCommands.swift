import ControlProtocol
import ExpenseCore
import Posix
#if canImport(Glibc)
import Glibc
#endif

// The subcommands that act on one expense, or list them.

/// The id a person typed, as the daemon matches it.
private func ref(_ invocation: Invocation) -> String { invocation.positional[0].lowercased() }

func runAdd(_ invocation: Invocation, _ context: Context) throws -> ExitStatus {
    let receiptPath = invocation.path("--receipt")
    var typed = typedFields(invocation)
    // Today, in the local time zone, unless a receipt came alone: a scan's
    // date is the receipt's, typed in later.
    if typed.date == nil && !(receiptPath != nil && typed.isEmpty) { typed.date = Clock.localDate }
    let fields: ExpenseFields
    do {
        fields = try Validation.normalizedCreate(typed, hasReceipt: receiptPath != nil)
    } catch {
        throw ClientError(status: .dataError, message: "\(error)")
    }
    let clientID = invocation.value("--client-id")?.lowercased() ?? ClientID.make(milliseconds: Clock.wallMilliseconds)
    guard ClientID.isCanonical(clientID) else {
        throw ClientError(status: .usage, message: "--client-id must be a UUID like 1b4e28ba-2fa1-11d2-883f-0000f87d3b6e")
    }
    var receipt: FileDescriptor?
    if let receiptPath { receipt = try openReceipt(receiptPath) }
    let command = ControlRequest.Command.add(fields: fields, clientID: clientID, hasReceipt: receipt != nil,
                                             receiptPath: receiptPath.map(sourcePath))

    func send() throws -> AddResult {
        do {
            return try context.connect().call(command, expecting: AddResult.self, passing: receipt)
        } catch let error as ClientError where error.status == .ioError {
            // The answer was lost; the same client id makes the retry safe.
            return try context.connect().call(command, expecting: AddResult.self, passing: receipt)
        }
    }
    let result: AddResult
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
        Output.out(Output.text(result.transactionID))
        if result.duplicate {
            Output.error("expensectl: this client id was added before (\(Output.text(result.state.rawValue))); the fields given now were not used")
        } else if result.state == .needsAttention {
            Output.error(heldForTheSameReceipt(result.transactionID))
        }
    }
    return .success
}

/// What `add` and `edit --receipt` say of an expense held because its
/// receipt is another expense's.
private func heldForTheSameReceipt(_ transactionID: String) -> String {
    let id = Output.text(transactionID)
    return """
        expensectl: \(id) is held: its receipt is the same as another expense's ('expensectl show \(id)' says which); \
        'expensectl retry \(id)' sends it anyway, 'expensectl discard \(id)' drops it
        """
}

/// The receipt's path as the expense keeps it, its source: absolute (the
/// daemon's working directory is not the caller's), as UTF-8 (an invalid
/// byte becomes U+FFFD), at most `PATH_MAX` bytes (longer is cut).
func sourcePath(_ pathBytes: [UInt8]) -> String {
    var bytes = pathBytes
    if bytes.first != UInt8(ascii: "/"), let cwd = getcwd(nil, 0) {
        defer { free(cwd) }
        bytes = Array(String(cString: cwd).utf8) + [UInt8(ascii: "/")] + bytes
    }
    var path = String(decoding: bytes, as: UTF8.self)
    while path.utf8.count > ControlRequest.receiptPathMaxBytes { path.removeFirst() }
    return path
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
    let query = try listQuery(invocation)
    let idsOnly = invocation.has("--ids")
    if idsOnly && (context.json || query.totals) {
        throw ClientError(status: .usage, message: "--ids prints transaction ids alone: not with \(context.json ? "--json" : "--totals")")
    }
    let result = try context.connect().call(.list(query), expecting: ExpenseList.self)
    if idsOnly {
        // Ids are ASCII; printed as they are, one a line, nothing else.
        for expense in result.expenses { Output.out(Output.text(expense.transactionID)) }
        return .success
    }
    if context.json {
        // The array alone, as before paging; the whole answer once it says more (a page, totals).
        if query.limit == nil && !query.totals {
            Output.out(JSONValue.array(result.expenses.map(\.json)).prettySerialized())
        } else {
            context.printJSON(result)
        }
        return .success
    }
    if result.expenses.isEmpty {
        Output.out(query.offset > 0 ? "No expenses on this page." : "No expenses.")
    } else {
        var table = Table(headers: ["TRANSACTION ID", "STATE", "RECEIPT", "DATE", "AMOUNT", "MERCHANT"])
        for expense in result.expenses {
            // Held for the backend's fields: it waits for an edit, not for the network.
            var state = expense.missing.isEmpty ? Output.text(expense.state.rawValue) : "incomplete"
            if expense.conflict { state += " (conflict)" }
            table.rows.append([Output.text(expense.transactionID), state, Output.text(expense.receipt.rawValue),
                               readMark(Output.text(expense.fields.date), expense, "date"),
                               readMark(amountText(expense.fields), expense, "amount", "currency"), readMark(merchantText(expense), expense, "merchant")])
        }
        Output.out(table.rendered)
        if result.expenses.contains(where: { !$0.read.isEmpty }) {
            Output.out("~ read from the receipt, a suggestion ('expensectl show ID' gives the confidence)")
        }
    }
    if let totals = result.totals {
        var table = Table(headers: ["CURRENCY", "EXPENSES", "TOTAL", "OF WHICH PENDING"])
        for total in totals {
            table.rows.append([Output.text(total.currency), String(total.count), Output.text(total.amount),
                               "\(Output.text(total.pendingAmount)) (\(total.pendingCount))"])
        }
        Output.out("\nTotals of every match, queued work included:\n" + (totals.isEmpty ? "no amounts" : table.rendered))
        if result.withoutAmount > 0 { Output.out("\(result.withoutAmount) without an amount") }
    }
    if result.hasMore {
        Output.error("expensectl: more expenses match; the next page: --offset \(query.offset + result.expenses.count)")
    }
    return .success
}

/// `list`'s options as a query, refused (exit 64) with the daemon's own checks.
func listQuery(_ invocation: Invocation) throws -> ListQuery {
    var query = ListQuery()
    do throws(FieldError) {
        if let state = invocation.value("--state") { query.state = try ListQuery.State(parsing: state, dashed: true) }
        if let sort = invocation.value("--sort") { query.sort = try ListQuery.Sort(parsing: sort) }
        if let limit = invocation.value("--limit") { query.limit = try ListQuery.parseCount(limit, field: "limit") }
        if let offset = invocation.value("--offset") { query.offset = try ListQuery.parseCount(offset, field: "offset") }
        query.since = invocation.value("--since")
        query.until = invocation.value("--until")
        query.merchant = invocation.value("--merchant")
        query.category = invocation.value("--category")
        query.incomplete = invocation.has("--incomplete")
        query.reverse = invocation.has("--reverse")
        query.totals = invocation.has("--totals")
        try query.check()
    } catch {
        // The reason may quote what was typed: escaped, so that it can
        // neither drive the terminal nor forge a line.
        throw ClientError(status: .usage, message: "--\(error.field): \(error.reason.escapingControlCharacters())")
    }
    return query
}

/// `text` marked `~` when a reading of the receipt filled any of `fields`.
func readMark(_ text: String, _ expense: ExpenseSummary, _ fields: String...) -> String {
    fields.contains { expense.read[$0] != nil } ? text + "~" : text
}

/// `text`, and, when a reading filled any of `fields`, its confidence: `(read 0.91)`.
func readNote(_ text: String, _ expense: ExpenseSummary, _ fields: String...) -> String {
    guard let confidence = fields.compactMap({ expense.read[$0] }).min() else { return text }
    return text + " (read from the receipt, \(confidenceText(confidence)))"
}

/// A confidence, 0 to 1, in hundredths: `0.91`.
func confidenceText(_ value: Double) -> String {
    let hundredths = min(100, max(0, Int((value * 100).rounded())))
    return hundredths == 100 ? "1.00" : "0." + (hundredths < 10 ? "0" : "") + String(hundredths)
}

/// The merchant, or, for an expense that has none yet, the file it came
/// from in brackets: receipt-only scans are told apart at a glance.
func merchantText(_ expense: ExpenseSummary) -> String {
    if expense.fields.merchant == nil, let source = expense.source { return "[\(Output.text(source.name))]" }
    return Output.text(expense.fields.merchant)
}

/// Where an expense came from, on one line of `show`.
func sourceText(_ source: ExpenseSource?) -> String {
    guard let source else { return "-" }
    switch source.kind {
    case .file:
        return "receipt file \(Output.text(source.name))"
    case .spool:
        return "spool file \(Output.text(source.name))" + (source.sidecar.map { " with sidecar \(Output.text($0))" } ?? "")
            + (source.droppedMilliseconds.map { ", dropped \(Timestamp.format(milliseconds: $0))" } ?? "")
    }
}

func amountText(_ fields: ExpenseFields) -> String {
    guard let amount = fields.amount else { return "-" }
    return amount + (fields.currency.map { " \($0)" } ?? "")
}

func runShow(_ invocation: Invocation, _ context: Context) throws -> ExitStatus {
    let result = try context.connect().call(.show(ref: ref(invocation)), expecting: ExpenseDetail.self)
    if context.json {
        context.printJSON(result)
        return .success
    }
    let expense = result.summary
    var lines: [(String, String)] = [
        ("Transaction ID", Output.text(expense.transactionID)),
        ("Client ID", Output.text(expense.clientID)),
        ("State", expense.missing.isEmpty ? Output.text(expense.state.rawValue)
            : "incomplete: held until it has \(RequiredFields.phrase(expense.missing)), which the backend needs; 'expensectl edit' gives them"),
        ("Merchant", readNote(Output.text(expense.fields.merchant), expense, "merchant")),
        ("Amount", readNote(amountText(expense.fields), expense, "amount", "currency")),
        ("Date", readNote(Output.text(expense.fields.date), expense, "date")),
        ("Category", Output.text(expense.fields.category)),
        ("Comment", Output.text(expense.fields.comment)),
        ("Tax tag", Output.text(expense.fields.taxTag)),
        ("Receipt", Output.text(expense.receipt.rawValue)),
        ("Receipt URL", Output.text(expense.receiptURL)),
        ("Version", expense.version.map(String.init) ?? "-"),
        ("Source", sourceText(expense.source)),
    ]
    if let original = result.original {
        let when = original.removedMilliseconds.map { "removed \(Timestamp.format(milliseconds: $0)) (receipt_original_retention)" }
            ?? "kept ('expensectl receipt \(expense.transactionID) --original')"
        lines.append(("Original", "\(original.kind.rawValue.uppercased()), \(original.size) bytes, received \(Timestamp.format(milliseconds: original.receivedMilliseconds)); \(when)"))
    }
    if let reading = result.reading {
        let waits = reading.createWaitsUntilMilliseconds.map { "; it is sent once read, or at \(Timestamp.format(milliseconds: $0)) (reading_wait) as it is" } ?? ""
        lines.append(("Reading", "to do, queued \(Timestamp.format(milliseconds: reading.queuedMilliseconds))\(waits)"))
    }
    if !expense.pendingFields.isEmpty { lines.append(("Pending fields", expense.pendingFields.joined(separator: ", "))) }
    if expense.conflict {
        for (field, values) in expense.conflicts.sorted(by: { $0.key < $1.key }) {
            lines.append(("Conflict", "\(field): server has \(Output.text(values.server)), you sent \(Output.text(values.client))"))
        }
    }
    var text = lines.map { "\($0.0):" + String(repeating: " ", count: max(1, 16 - $0.0.count)) + $0.1 }.joined(separator: "\n")
    if !result.jobs.isEmpty {
        var table = Table(headers: ["JOB", "KIND", "STATE", "FAILED ATTEMPTS", "NEXT ATTEMPT", "LAST ERROR"])
        for job in result.jobs {
            var lastError = Output.text(job.lastError)
            if let errorClass = job.lastErrorClass { lastError = "[\(errorClass)] " + lastError }
            var attempts = [job.attempts > 0 ? "\(job.attempts) rejected" : nil, job.transientAttempts > 0 ? "\(job.transientAttempts) transient" : nil]
                .compactMap { $0 }.joined(separator: ", ")
            if attempts.isEmpty { attempts = "0" }
            let waiting = job.state == .needsAttention ? "-" : Output.text(job.nextAttemptMilliseconds.map { Timestamp.format(milliseconds: $0) })
            // The whole uuid: its first digits are a version 7 timestamp, the same for a create and its receipt job.
            table.rows.append([Output.text(job.uuid), Output.text(job.kind.rawValue), Output.text(job.state.rawValue), attempts, waiting, lastError])
        }
        text += "\n\nPending jobs:\n" + table.rendered
        // Each stopped job's own hint (the daemon's, by why it stopped), once.
        var hints: [String] = []
        for hint in result.jobs.compactMap(\.hint) where !hints.contains(hint) { hints.append(hint) }
        if !hints.isEmpty {
            text += "\n\nNot tried again until you decide. " + hints.joined(separator: "\n")
        }
    }
    Output.out(text)
    return .success
}

func runRetry(_ invocation: Invocation, _ context: Context) throws -> ExitStatus {
    let result = try context.connect().call(.retry(ref: ref(invocation)), expecting: ExpenseDetail.self)
    if context.json { context.printJSON(result) } else { Output.out("\(Output.text(result.summary.transactionID)): queued to send now") }
    return .success
}

func runDiscard(_ invocation: Invocation, _ context: Context) throws -> ExitStatus {
    let asked = try confirm(invocation, context) { detail in
        let kinds = detail.jobs.map(\.kind.rawValue).joined(separator: ", ")
        let files = detail.jobs.contains { $0.kind == .receipt } ? " and its receipt file" : ""
        let pending = detail.jobs.count == 1 ? "the pending job (\(kinds))" : "the \(detail.jobs.count) pending jobs (\(kinds))"
        return "Discard \(pending)\(files) of \(describe(detail))? What the server already has stays."
    }
    guard asked else { return declined("discarded") }
    let result = try context.connect().call(.discard(ref: ref(invocation)), expecting: DiscardResult.self)
    if context.json { context.printJSON(result) } else {
        Output.out("\(Output.text(result.transactionID)): discarded \(result.discarded) pending job(s)")
    }
    return .success
}

/// An expense in a line: its id, merchant, amount, date and state.
func describe(_ detail: ExpenseDetail) -> String {
    let e = detail.summary
    let what = [e.fields.merchant.map(Output.text), e.fields.amount.map { _ in amountText(e.fields) }, e.fields.date.map(Output.text)]
        .compactMap { $0 }.joined(separator: ", ")
    return "\(Output.text(e.transactionID)) (\(what.isEmpty ? "no fields yet" : what); \(Output.text(e.state.rawValue)))"
}

/// On a terminal, unless `--yes`: says what the command will remove (from
/// `show`) and asks. Never asks when standard input is not a terminal, so
/// scripts and pipes go on as before.
/// - Returns: whether to go on.
func confirm(_ invocation: Invocation, _ context: Context, _ question: (ExpenseDetail) -> String) throws -> Bool {
    guard !invocation.has("--yes"), Terminal.isTerminal(0) else { return true }
    let detail = try context.connect().call(.show(ref: ref(invocation)), expecting: ExpenseDetail.self)
    if detail.summary.state == .deleted { return true }
    Output.prompt(question(detail) + " [y/N] ")
    let answer = Output.readInputLine()?.trimmingSpaces().lowercased()
    return answer == "y" || answer == "yes"
}

/// The answer was not yes: nothing was asked of the daemon.
func declined(_ done: String) -> ExitStatus {
    Output.error("expensectl: nothing \(done)")
    return .failure
}

func runEdit(_ invocation: Invocation, _ context: Context) throws -> ExitStatus {
    let given = typedFields(invocation)
    let receiptPath = invocation.path("--receipt")
    guard !given.isEmpty || receiptPath != nil else {
        throw ClientError(status: .usage, message: "edit needs at least one field option, e.g. --amount 13.00, or --receipt FILE")
    }
    let changes: ExpenseFields
    do {
        changes = try Validation.normalized(given, amountNeedsCurrency: false)
    } catch {
        throw ClientError(status: .dataError, message: "\(error)")
    }
    // Opened as add opens one: with the caller's rights; the daemon checks the bytes.
    let receipt = try receiptPath.map(openReceipt)
    let result = try context.connect().call(.edit(ref: ref(invocation), fields: changes, hasReceipt: receipt != nil), expecting: ExpenseDetail.self,
                                            passing: receipt)
    if context.json { context.printJSON(result) } else {
        Output.out("\(Output.text(result.summary.transactionID)): edited (\(Output.text(result.summary.state.rawValue)))")
        // The create is held when it has not been sent, the upload when it was.
        if receipt != nil, result.jobs.contains(where: { $0.state == .needsAttention && $0.lastErrorClass == "same_receipt" }) {
            Output.error(heldForTheSameReceipt(result.summary.transactionID))
        }
    }
    return .success
}

func runDelete(_ invocation: Invocation, _ context: Context) throws -> ExitStatus {
    let asked = try confirm(invocation, context) { detail in
        // Whether a create that left once reached the server only the daemon
        // knows (it decides as it deletes), so the question says both.
        let unsynced = detail.jobs.contains { $0.kind == .create }
        let how = unsynced ? "It is not synced: if it never left this device it is dropped here and nothing is sent, else a delete is queued."
            : "A delete is queued for the server; pending changes to it are dropped."
        return "Delete \(describe(detail))? \(how)"
    }
    guard asked else { return declined("deleted") }
    let result = try context.connect().call(.delete(ref: ref(invocation)), expecting: DeleteResult.self)
    if context.json { context.printJSON(result) } else {
        let how = result.sentNothing ? "deleted (it never reached the server; nothing is sent)" : "delete queued"
        Output.out("\(Output.text(result.transactionID)): \(how)")
    }
    return .success
}

func runRead(_ invocation: Invocation, _ context: Context) throws -> ExitStatus {
    // A reading takes seconds, and up to reading_timeout (2m by default).
    let result = try context.connect().call(.read(ref: ref(invocation)), expecting: ReadResult.self, atLeast: 180_000)
    if context.json {
        context.printJSON(result)
        return .success
    }
    let id = Output.text(result.transactionID)
    guard !result.fields.isEmpty else {
        Output.out("\(id): nothing read from the receipt")
        return .success
    }
    var table = Table(headers: ["FIELD", "READ", "CONFIDENCE", "APPLIED", "RULE"])
    for field in result.fields {
        table.rows.append([Output.text(field.field), Output.text(field.value), confidenceText(field.confidence),
                           field.applied ? "filled" : "kept (set by a person or a sidecar)", Output.text(field.note)])
    }
    Output.out("\(id): read from the receipt\n" + table.rendered)
    return .success
}

func runResolve(_ invocation: Invocation, _ context: Context) throws -> ExitStatus {
    guard let take = invocation.value("--take") else { throw ClientError(status: .usage, message: "resolve needs --take server or --take mine") }
    guard take == "server" || take == "mine" else { throw ClientError(status: .usage, message: "--take must be 'server' or 'mine'") }
    let result = try context.connect().call(.resolve(ref: ref(invocation), takeMine: take == "mine"), expecting: ExpenseDetail.self)
    if context.json { context.printJSON(result) } else {
        Output.out("\(Output.text(result.summary.transactionID)): keeping \(take == "mine" ? "your" : "the server's") values")
    }
    return .success
}
