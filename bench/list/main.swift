// bench-list: a page of `expensectl list` over a real backlog, beside the
// same query run by sqlite3 on a copy of the database.
//
// Usage: bench-list [--bin DIR] [--quick]
// Fills a store with 100,000 cached expenses (refresh pages, the cache's own
// write path) and 10,000 queued creates, starts the expensed in DIR (default
// .build/release) on it, and for each query samples in turn one `expensectl
// list … --limit 50` and one `sqlite3 copy.db '<the page's SQL>'`, each a
// process of its own, after a first page that writes the queued creates'
// listing rows. Prints p50s and their ratio; compare ratios within a run.
import ExpenseCore
import ExpenseTestSupport
import Foundation
import OutboxStore
import Posix
import SQLite

let options = BenchArguments("bench-list", usage: "usage: bench-list [--bin DIR] [--quick]", options: ["--bin"], switches: ["--quick"])
let quick = options.has("--quick")
let bin = options.binaryDirectory()
let cachedCount = quick ? 20_000 : 100_000
let queuedCount = quick ? 2_000 : 10_000
let samples = quick ? 15 : 51

func ms(_ seconds: Double) -> String { String(format: "%.1f ms", seconds * 1000) }

print("bench-list: bin=\(bin) cached=\(cachedCount) queued=\(queuedCount) samples=\(samples)")

let daemon = DaemonHarness()
var random = SeededRandom(seed: 2026)
let merchants = (0..<400).map { "Merchant \($0)" } + ["Blue Bottle", "Blue Bottle Bar", "Shinkansen", "Hotel Adlon", "Café Zed"]
let categories = ["Meals", "Travel", "Office", "Lodging", "Fuel", "Software", "Books", "Phone"]

func fields(_ i: Int, _ random: inout SeededRandom) -> ExpenseFields {
    let currency = ["EUR", "EUR", "EUR", "USD", "JPY"][random.next(5)]
    let amount = currency == "JPY" ? String(100 + random.next(50_000)) : "\(1 + random.next(900)).\(String(random.next(100)).leftPadded(2))"
    let month = String(1 + random.next(12)).leftPadded(2), day = String(1 + random.next(28)).leftPadded(2)
    var fields = ExpenseFields(merchant: merchants[random.next(merchants.count)], amount: amount, currency: currency,
                               date: "\(2024 + random.next(3))-\(month)-\(day)", category: categories[random.next(categories.count)])
    // One in a hundred is a receipt scan not yet typed in.
    if i % 100 == 7 { fields.merchant = nil; fields.amount = nil; fields.date = nil }
    return fields
}

// 1. The backlog, through the store's own write paths.
do {
    let start = BenchRun.now()
    let store = try Store(stateDirectory: daemon.stateDirectory)
    let base: Int64 = 1_700_000_000_000
    for page in stride(from: 0, to: cachedCount, by: 1000) {
        var expenses: [CanonicalExpense] = []
        for i in page..<min(cachedCount, page + 1000) {
            let clientID = ClientID.make()
            let created = Timestamp.format(milliseconds: base + Int64(i) * 60_000)
            expenses.append(CanonicalExpense(transactionID: TransactionID.derive(from: clientID), clientID: clientID, fields: fields(i, &random),
                                             version: 1, createdAt: created, updatedAt: created, conflict: i % 1000 == 3))
        }
        _ = try await store.storeRefreshPage(expenses, cursor: "c\(page)", now: Clock.wallMilliseconds)
    }
    let filled = BenchRun.now()
    for i in 0..<queuedCount {
        _ = try await store.enqueueCreate(fields: fields(i, &random), clientID: ClientID.make(), receipt: nil, now: Clock.wallMilliseconds)
    }
    print(String(format: "filled: %d cached in %.1f s (refresh pages of 1,000), %d queued in %.1f s", cachedCount, filled - start, queuedCount, BenchRun.now() - filled))
}

try daemon.start(timeout: 120)
defer { daemon.stop() }
// The queued creates have no listing rows until the first read writes
// them (schema 15): that first page, once, and then a copy that holds them.
do {
    let start = BenchRun.now()
    let first = try daemon.ctl(["list", "--limit", "50"])
    precondition(first.status == 0, first.stderr)
    print("the first page, which writes the rows of the \(queuedCount) queued creates: \(ms(BenchRun.now() - start))")
}
let copy = daemon.directory.at("copy.db")
try Connection(path: "\(daemon.stateDirectory)/expensed.db").execute("VACUUM INTO '\(copy)'")

/// The page's SQL with its values written in, for the sqlite3 shell.
func inlined(_ query: ListQuery) -> String {
    // The daemon lists a caller's own account: expensectl here is the default account's.
    var (sql, values) = Store.pageSQL(query, in: .account(AccountName.defaultName))
    for (index, value) in values.enumerated().reversed() {
        let text = switch value {
        case .text(let s): "'" + s.replacingOccurrences(of: "'", with: "''") + "'"
        case .integer(let n): String(n)
        default: "NULL"
        }
        sql = sql.replacingOccurrences(of: "?\(index + 1)", with: text)
    }
    return sql
}

let queries: [(String, [String])] = [
    ("no filter, by date", ["--sort", "date"]),
    ("--state queued, by amount, reversed", ["--state", "queued", "--sort", "amount", "--reverse"]),
    ("--state synced, by merchant", ["--state", "synced", "--sort", "merchant"]),
    ("--merchant blue (0.5 %), by date", ["--merchant", "blue", "--sort", "date"]),
    ("--merchant 'merchant 3' (28 %), by added, reversed", ["--merchant", "merchant 3", "--sort", "added", "--reverse"]),
    ("--category travel (1/8), by amount", ["--category", "travel", "--sort", "amount"]),
    ("--since/--until one month, by merchant", ["--since", "2025-03-01", "--until", "2025-03-31", "--sort", "merchant"]),
    ("--incomplete (1 %), by added", ["--incomplete"]),
    ("--state conflict (0.1 %), by date", ["--state", "conflict", "--sort", "date"]),
]

print("query | expensectl list --limit 50: p50 (p90) | sqlite3 on a copy: p50 | ratio")
var worst = 0.0
for (name, options) in queries {
    let args = ["list", "--limit", "50"] + options
    let sql = inlined(try listQuery(options))
    // Both answer the same expenses, in the same order.
    let listed = try daemon.ctlJSON(args)["expenses"]?.arrayValue?.compactMap { $0["transaction_id"]?.stringValue } ?? []
    let direct = try runCommand("/usr/bin/sqlite3", [copy, sql])
    let directIDs = direct.stdout.split(separator: "\n").map { String($0.split(separator: "|")[0]) }
    precondition(listed == Array(directIDs.prefix(50)), "\(name): expensectl and sqlite3 disagree")
    var ctl: [Double] = [], shell: [Double] = []
    for _ in 0..<samples {
        var start = BenchRun.now()
        let result = try daemon.ctl(args)
        ctl.append(BenchRun.now() - start)
        precondition(result.status == 0, result.stderr)
        start = BenchRun.now()
        _ = try runCommand("/usr/bin/sqlite3", [copy, sql])
        shell.append(BenchRun.now() - start)
    }
    let p50 = BenchRun.percentile(ctl, 0.5), base = BenchRun.percentile(shell, 0.5)
    worst = max(worst, p50)
    print("\(name) [\(listed.count) shown] | \(ms(p50)) (\(ms(BenchRun.percentile(ctl, 0.9)))) | \(ms(base)) | \(String(format: "%.2f", p50 / base))")
}
print("slowest p50 through expensectl: \(ms(worst)) (target < 50 ms)")

// Totals over everything: a scan of every row, not a page.
do {
    var totals: [Double] = []
    for _ in 0..<max(5, samples / 5) {
        let start = BenchRun.now()
        let result = try daemon.ctl(["list", "--limit", "50", "--totals"])
        totals.append(BenchRun.now() - start)
        precondition(result.status == 0, result.stderr)
    }
    print("list --limit 50 --totals (all \(cachedCount + queuedCount)): p50 \(ms(BenchRun.percentile(totals, 0.5)))")
}

/// The query expensectl sends for `options` with `--limit 50`.
func listQuery(_ options: [String]) throws -> ListQuery {
    var query = ListQuery(limit: 50)
    var index = 0
    while index < options.count {
        let option = options[index]
        let value = index + 1 < options.count ? options[index + 1] : ""
        switch option {
        case "--state": query.state = try ListQuery.State(parsing: value); index += 1
        case "--sort": query.sort = try ListQuery.Sort(parsing: value); index += 1
        case "--merchant": query.merchant = value; index += 1
        case "--category": query.category = value; index += 1
        case "--since": query.since = value; index += 1
        case "--until": query.until = value; index += 1
        case "--reverse": query.reverse = true
        case "--incomplete": query.incomplete = true
        default: preconditionFailure("bench-list does not know \(option)")
        }
        index += 1
    }
    return query
}
