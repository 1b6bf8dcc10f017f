import ExpenseCore
import SQLite

// Accounts in the store's queries: every read and change of an expense is
// confined to a scope, written as `(?N IS NULL OR account = ?N)` with the
// scope's value bound at N (null: every account), so that an expense of
// another account is, to the caller, one that does not exist.
extension AccountScope {
    /// The value bound for the scope's condition.
    var sqlValue: SQLValue {
        switch self {
        case .all: .null
        case .account(let name): .text(name)
        }
    }
}

extension Store {
    /// The condition that a row's `account` is in the scope bound at `?index`.
    static func inScope(_ index: Int, column: String = "account") -> String {
        "(?\(index) IS NULL OR \(column) = ?\(index))"
    }

    /// The account of an expense already known (its cache row or its jobs),
    /// as an SQL expression of the transaction id bound at `?index`: the
    /// jobs an edit, a delete or a resolve adds go with the expense's
    /// account, whoever asked (an admin acting for someone).
    static func accountOf(_ index: Int) -> String {
        """
        coalesce((SELECT account FROM expenses WHERE transaction_id = ?\(index)),
                 (SELECT account FROM jobs WHERE transaction_id = ?\(index) ORDER BY seq LIMIT 1), '')
        """
    }

    /// The counter rows of one account's queue: `acct/<account>/<state>`.
    static func accountCounter(_ account: String, _ name: String) -> String {
        "acct/\(account)/\(name)"
    }

    /// The queue of every account that ever had a job, by account: for
    /// `status` to root and `admin_group` (the server and spool parts are
    /// the caller's to fill in).
    public func accountSummaries() async throws -> [String: QueueSummary] {
        try await database.read { db in
            var summaries: [String: QueueSummary] = [:]
            // 'acct/' up to 'acct0' ('0' follows '/'): exactly the per-account rows.
            for (name, n) in try db.query("SELECT name, value FROM counters WHERE name >= 'acct/' AND name < 'acct0'", [], { ($0.string(0), $0.int(1)) }) {
                let rest = name.dropFirst(5)
                guard let slash = rest.lastIndex(of: "/") else { continue }
                let account = String(rest[..<slash])
                var summary = summaries[account] ?? QueueSummary()
                summary.count(state: String(rest[rest.index(after: slash)...]), n)
                summaries[account] = summary
            }
            for (account, summary) in summaries where summary.queued + summary.sending + summary.needsAttention > 0 {
                summaries[account]?.oldestJobMilliseconds = try Store.oldestJob(db, account: account)
            }
            return summaries
        }
    }

    /// The creation time of an account's oldest job: the first entry of
    /// its part of the index `jobs_by_account`.
    static func oldestJob(_ db: Connection, account: String) throws -> Int64? {
        try db.scalarInt(oldestJobQuery, [.text(account)])
    }

    static let oldestJobQuery = "SELECT created_at FROM jobs WHERE account = ? ORDER BY seq LIMIT 1"
}

extension QueueSummary {
    /// Adds a counter row's count of jobs in `state`.
    mutating func count(state: String, _ n: Int) {
        switch JobState(rawValue: state) {
        case .queued: queued = n
        case .sending: sending = n
        case .needsAttention: needsAttention = n
        case nil: break
        }
    }
}
