import ExpenseCore
import SQLite

// Incomplete expenses (docs/sync.md, "Incomplete expenses"): a create that
// lacks what the backend requires (``RequiredFields``) is held, and what
// waits behind it with it, until an edit merges into it and completes it.
// The decision is `RequiredFields.holds`, written here once as SQL for the
// claim, the wake-up, the counts and the listing.
extension Store {
    /// SQL true for a job row (`alias`) that is the held create of an
    /// incomplete expense: queued, never handed to the network, and
    /// without a value for one of the `required` fields (a create's
    /// payload holds values only, no nulls). The names are written into
    /// the SQL: they are ``ExpenseFields/names``, never outside text, and
    /// a path per field costs a third of a `json_each` over a bound list
    /// (measured over 10,000 held creates: a claim of 64 past them 20 ms
    /// rather than 50, the counts 30 ms rather than 92).
    static func isIncompleteCreate(_ alias: String, _ required: RequiredFields) -> String {
        let missing = required.names.map { "json_extract(\(alias).payload, '$.fields.\($0)') IS NULL" }.joined(separator: " OR ")
        return "(\(alias).kind = 'create' AND \(alias).state = 'queued' AND \(alias).sends = 0 AND (\(missing)))"
    }

    /// ``pendingWork(holding:requiring:)`` with incomplete expenses held:
    /// neither their creates nor the jobs behind them wake a timer.
    func pendingCompleteWork(holding: Set<JobKind>, requiring: RequiredFields) async throws -> (queued: Bool, earliestRetry: Int64?) {
        try await database.read { db in
            let values = [Store.textList(holding.map(\.rawValue).sorted())]
            let unheld = """
                state = 'queued' AND kind NOT IN (SELECT value FROM json_each(?1))
                AND transaction_id NOT IN (SELECT c.transaction_id FROM jobs AS c WHERE \(Store.isIncompleteCreate("c", requiring)))
                """
            let queued = try db.scalarInt("SELECT EXISTS (SELECT 1 FROM jobs WHERE \(unheld))", values) == 1
            let due = try db.queryFirst("""
                SELECT next_attempt_at FROM jobs WHERE (attempts > 0 OR transient_attempts > 0) AND \(unheld)
                ORDER BY next_attempt_at LIMIT 1
                """, values) { $0.int64(0) }
            return (queued, due)
        }
    }

    /// How many expenses of `scope` are held as incomplete, and how many
    /// queued jobs they hold back, those of the `excluding` kinds left out
    /// (a metered link's hold counts them already).
    public func incompleteCounts(requiring: RequiredFields, excluding: Set<JobKind> = [], in scope: AccountScope = .all) async throws
        -> (expenses: Int, jobs: Int) {
        guard !requiring.isEmpty else { return (0, 0) }
        return try await database.read { db in
            let values = [scope.sqlValue, Store.textList(excluding.map(\.rawValue).sorted())]
            let held = "SELECT c.transaction_id FROM jobs AS c WHERE \(Store.inScope(1, column: "c.account")) AND \(Store.isIncompleteCreate("c", requiring))"
            // Bound up to the last number each statement names.
            let expenses = try db.scalarInt("SELECT count(*) FROM (\(held))", [values[0]]) ?? 0
            guard expenses > 0 else { return (0, 0) }
            let jobs = try db.scalarInt("""
                SELECT count(*) FROM jobs WHERE state = 'queued' AND kind NOT IN (SELECT value FROM json_each(?2))
                    AND transaction_id IN (\(held))
                """, values) ?? 0
            return (Int(expenses), Int(jobs))
        }
    }

    /// An expense held as incomplete, as the journal tells of it.
    public struct IncompleteExpense: Sendable, Equatable {
        /// Its create's place in the outbox (an edit that merges into the
        /// create keeps it).
        public let seq: Int64
        public let transactionID: String
        public let account: String
        public let fields: ExpenseFields
    }

    /// The expenses held as incomplete whose create comes after `seq` in
    /// the outbox, in its order: those not told of yet, for a caller that
    /// remembers the last it told of.
    public func incompleteExpenses(requiring: RequiredFields, after seq: Int64) async throws -> [IncompleteExpense] {
        guard !requiring.isEmpty else { return [] }
        return try await database.read { db in
            try db.query("""
                SELECT seq, transaction_id, account, payload FROM jobs AS c
                WHERE c.seq > ?1 AND \(Store.isIncompleteCreate("c", requiring)) ORDER BY seq
                """, [.integer(seq)]) { r in
                IncompleteExpense(seq: r.int64(0), transactionID: r.string(1), account: r.string(2), fields: JobPayload.decode(r.string(3)).fields)
            }
        }
    }
}
