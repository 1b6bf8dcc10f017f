import ControlProtocol
import ExpenseCore
import Posix

/// Where to reach the daemon and how to print.
struct Context: Sendable {
    let socketPath: String
    let json: Bool
    var accounts = ControlRequest.AccountSelection.caller

    func connect() throws -> ControlClient { try ControlClient(socketPath: socketPath, accounts: accounts) }

    /// Prints `result` as the daemon sent it (decoded, then encoded again:
    /// the same JSON), for scripts.
    func printJSON(_ result: some ControlResult) { Output.out(result.json.prettySerialized()) }
}

let fieldOptions = [
    CommandOption("--merchant", valueName: "TEXT", help: "who was paid", kind: .field),
    CommandOption("--amount", valueName: "DECIMAL", help: "amount as a decimal, e.g. 12.50 (negative for a refund)", kind: .field),
    CommandOption("--currency", valueName: "CODE", help: "ISO 4217 currency code, e.g. EUR", kind: .field),
    CommandOption("--date", valueName: "YYYY-MM-DD", help: "date of the expense", kind: .field),
    CommandOption("--category", valueName: "TEXT", help: "category, e.g. Meals", kind: .field),
    CommandOption("--comment", valueName: "TEXT", help: "free text", kind: .field),
    CommandOption("--tax-tag", valueName: "TEXT", help: "tax tag", kind: .field),
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

let listOptions = [
    CommandOption("--state", valueName: "STATE", help: "only expenses in this state: queued, sending, synced, needs-attention, conflict, deleting"),
    CommandOption("--incomplete", valueName: nil, help: "only expenses missing a merchant, an amount or a date"),
    CommandOption("--since", valueName: "YYYY-MM-DD", help: "only expenses dated on or after this day"),
    CommandOption("--until", valueName: "YYYY-MM-DD", help: "only expenses dated on or before this day"),
    CommandOption("--merchant", valueName: "TEXT", help: "only merchants containing this text (ignoring case)"),
    CommandOption("--category", valueName: "NAME", help: "only this category (ignoring case)"),
    CommandOption("--sort", valueName: "KEY", help: "date, amount, merchant or added (default: added, oldest first)"),
    CommandOption("--reverse", valueName: nil, help: "the other way round (newest, largest, Z first)"),
    CommandOption("--limit", valueName: "N", help: "at most N expenses (1 to 100000)"),
    CommandOption("--offset", valueName: "N", help: "skip the first N matches (the next page)"),
    CommandOption("--totals", valueName: nil, help: "also total every match per currency, pending work included"),
    CommandOption("--ids", valueName: nil, help: "print only the transaction ids, one a line (for scripts and completion)"),
]

let yesOption = CommandOption("--yes", valueName: nil, help: "do not ask, even on a terminal")

let idArgument = (name: "id", help: "a transaction id (cp-…), a client UUID, or a unique prefix of either")

let subcommands: [Subcommand] = [
    Subcommand("add", "Queue a new expense, with or without a receipt.",
               options: fieldOptions + [
                   CommandOption("--receipt", valueName: "FILE", help: "a receipt to attach (JPEG, PNG, PDF, HEIC, WebP, TIFF, PNM, BMP)", kind: .path),
                   CommandOption("--client-id", valueName: "UUID", help: "the operation's UUID, for scripts that retry an add (either case; sent in lowercase)"),
               ],
               discussion: """
                   Without --receipt, --merchant, --amount and --currency are required, and
                   --date is today in the local time zone unless given. With --receipt every
                   field is optional (a receipt alone is a scan whose fields, date included,
                   are typed in later). Currency codes may be given in any case (eur is EUR).
                   Prints the expense's transaction id once expensed has stored it durably.
                   \(fieldRules)
                   """, run: runAdd),
    Subcommand("list", "List expenses: synced ones and those still pending.", options: listOptions,
               discussion: """
                   The daemon filters, sorts and pages (one query over its own index), so a
                   page comes at once from any backlog. Filters combine (all must hold).
                   Without --limit every match is listed; with it, a note on standard error
                   gives the next page's --offset. --json prints an array, or with --limit
                   or --totals the whole answer: expenses, more, totals.
                   """, run: runList),
    Subcommand("show", "Show one expense and its pending jobs.", arguments: [idArgument], run: runShow),
    Subcommand("retry", "Send an expense's held-back jobs again, now.", arguments: [idArgument], run: runRetry),
    Subcommand("discard", "Drop an expense's pending jobs and receipt file.", arguments: [idArgument], options: [yesOption],
               discussion: """
                   What the server already has is not changed. On a terminal it says what
                   it will remove and asks first (--yes does not ask); with standard input
                   not a terminal it never asks.
                   """, run: runDiscard),
    Subcommand("status", "Show the queue, the outbox's room and the server's state.", run: runStatus),
    Subcommand("watch", "Print one line per change of an expense's state, until interrupted.",
               options: [CommandOption("--summary", valueName: nil, help: "print the queue's newest summary each time it changes instead")],
               discussion: """
                   Each line: the time (UTC), the transaction id, the state before and after,
                   and why when there is more to say, e.g. (422 invalid_field amount). Only
                   changes made while watching are shown. When expensed goes away (a restart)
                   watch says so on standard error, connects again with a short backoff, and
                   says when it is back (changes made meanwhile were not seen). With --json,
                   one object per line: seq, at, account, transaction_id, from, to, reason.
                   """, run: runWatch),
    Subcommand("sync", "Send the queue now (and fetch the server's changes with --refresh).",
               options: [
                   CommandOption("--refresh", valueName: nil, help: "also fetch what changed on the server"),
                   CommandOption("--now", valueName: nil, help: "also send what a metered link holds, in this pass only"),
                   CommandOption("--wait", valueName: nil, help: "return once nothing more can go (held, incomplete, behind a job that needs attention)"),
                   CommandOption("--timeout", valueName: "SECONDS", help: "with --wait, give up after this long (exit 75); 30, 0.5, 500ms, 10m"),
               ],
               discussion: """
                   Also resumes sending after the server refused the credentials, with the token file
                   read again first. On a metered link (NetworkManager), receipt uploads (or everything,
                   with metered = pause) wait; --now sends them in one pass, after which they wait again.
                   """, run: runSync),
    Subcommand("stats", "Show enqueue-to-applied latency, failures and refusals for room, since start and in total.", run: runStats),
    Subcommand("edit", "Change fields of an expense, synced or still pending, or its receipt.", arguments: [idArgument],
               options: fieldOptions + [
                   CommandOption("--receipt", valueName: "FILE", help: "a receipt to attach (JPEG, PNG, PDF, HEIC, WebP, TIFF, PNM, BMP), replacing any it has", kind: .path),
               ],
               discussion: """
                   Works offline: the change is queued (merged into a change not yet sent)
                   and shown by list and show at once. --receipt attaches a receipt, or
                   replaces the one there; an upload still queued is replaced by the newer
                   file, so only the last one is sent. An empty value clears an optional
                   field: --comment '' leaves the expense without a comment, on the server
                   too once synced. Merchant, amount, currency and date can be changed, not
                   cleared. An amount given without --currency is written with the minor
                   units of the expense's currency (--amount 13 on a EUR expense is 13.00).
                   """, run: runEdit),
    Subcommand("receipt", "Write an expense's receipt: to a file, a pipe, or a viewer.", arguments: [idArgument],
               options: [
                   CommandOption("-o, --output", valueName: "FILE", help: "write it to FILE (replaced only once the whole receipt is there)"),
                   CommandOption("--open", valueName: nil, help: "write it to a private temporary file and open that with xdg-open"),
                   CommandOption("--original", valueName: nil, help: "the bytes as received, not the legible copy the backend was sent"),
               ],
               discussion: """
                   From expensed's own copy while the upload waits (or the copy it keeps for
                   a backend that stores no files), else from the server, which expensed asks
                   with the expense's account's credentials. The bytes are checked against the
                   SHA-256 recorded when expensed took the receipt; a damaged copy is refused
                   and nothing is written. A photo or scan goes to the server as a legible
                   copy; --original writes the bytes as received, which expensed keeps.
                   Without -o or --open the bytes go to standard output, which must not be a
                   terminal. Exit status 1: no such expense, or it has no receipt; 65:
                   damaged; 73: FILE cannot be written; 75: the server cannot be reached;
                   69: the server refused.
                   """, run: runReceipt),
    Subcommand("delete", "Delete an expense; one never sent is dropped without a request.", arguments: [idArgument], options: [yesOption],
               discussion: """
                   On a terminal it says what it will delete and asks first (--yes does not
                   ask); with standard input not a terminal it never asks. The deleted
                   expense stays visible to show, as deleted, once the server has deleted it.
                   """, run: runDelete),
    Subcommand("resolve", "Settle a conflict the server flagged, keeping its values or yours.", arguments: [idArgument],
               options: [CommandOption("--take", valueName: "server|mine", help: "whose values to keep (required)", isRequired: true)],
               run: runResolve),
    Subcommand("read", "Read an expense's receipt again and fill the fields it lacks.", arguments: [idArgument],
               discussion: """
                   The daemon reads the receipt now (after installing another language,
                   say: receipt_languages), waits for the reading (at most reading_timeout),
                   and fills the fields the expense does not have, or has only as an
                   earlier reading filled them; a field a person typed or a sidecar gave
                   is kept. It prints each field read, its confidence (0 to 1), and
                   whether it was filled or kept. Exit status 1: no such expense, no
                   receipt, or reading = off.
                   """, run: runRead),
]
