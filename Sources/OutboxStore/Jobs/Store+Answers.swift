import DaemonSupport
import ExpenseCore
import SQLite

// Recording what the server said about jobs, and the totals `stats` reads.
extension Store {
    /// Our own upload or edit moved the expense from version n to n + 1. Edits
    /// still waiting that were made against n are moved to n + 1 too, so
    /// the server does not take them for stale (a stale currency or tax
    /// tag is held back as a conflict). Only when nothing else changed the
    /// expense in between: the answer's version is exactly n + 1.
    static func rebaseEdits(_ db: Connection, after expense: CanonicalExpense) throws {
        guard let before = try db.scalarInt("SELECT version FROM expenses WHERE transaction_id = ?", [.text(expense.transactionID)]),
              Int64(expense.version) == before + 1 else { return }
        for (seq, payload) in try db.query(
            "SELECT seq, payload FROM jobs WHERE transaction_id = ? AND kind = 'edit' AND state = 'queued' AND sends = 0",
            [.text(expense.transactionID)], { ($0.int64(0), JobPayload.decode($0.string(1))) })
        where payload.baseVersion == Int(before) {
            try db.execute("UPDATE jobs SET payload = ? WHERE seq = ?",
                           [.text(try JobPayload.encode(fields: payload.fields, baseVersion: expense.version)), .integer(seq)])
        }
    }

    /// Applies what the server said about jobs, in one transaction; when
    /// one answer cannot be recorded, the others are, each in a savepoint
    /// of its own: for an applied job, the returned expense is upserted
    /// into the cache and the job removed together; an answer saying the
    /// expense is gone on the server (`410`) marks it deleted in the cache
    /// at once, not at the next refresh.
    /// - Returns: for each answer, in order, the receipt file the caller may
    ///   now delete (if any), or why the answer was not recorded.
    ///
    /// Durable only when a receipt file is deleted after it (a job must
    /// never come back without its file). Otherwise deferred: losing it to a
    /// power cut means sending the jobs once more, which the server replays.
    ///
    /// `committed` gets the results on the store's queue once they
    /// committed, before any later read there: what it counts is seen by
    /// every summary that shows the jobs gone.
    public func complete(_ answers: [(job: OutboxJob, update: JobUpdate, goneOnServer: Bool)], now: Int64,
                         committed: @escaping @Sendable ([Result<String?, any Error>]) -> Void = { _ in }) async throws -> [Result<String?, any Error>] {
        let durable = answers.contains { Store.removesFile($0.job, $0.update) }
        return try await write(durability: durable ? .durable : .deferred, usingHeadroom: true, committed: committed) { db, watched in
            let states = try StateChanges(db, watched: watched, answers.map(\.job.transactionID))
            func record(_ answer: (job: OutboxJob, update: JobUpdate, goneOnServer: Bool)) throws -> String? {
                if answer.goneOnServer {
                    try db.execute("UPDATE expenses SET deleted = 1, stored_at = ? WHERE transaction_id = ?",
                                   [.integer(now), .text(answer.job.transactionID)])
                }
                return try Store.apply(db, answer.job, answer.update, now: now)
            }
            var results: [Result<String?, any Error>]
            do {
                // All in one savepoint: the usual case, every answer recorded.
                results = try db.savepoint { try answers.map { .success(try record($0)) } }
            } catch {
                // An error that ended the whole transaction (a full disk)
                // undid the answers before it too: fail them all.
                if !db.isInTransaction { throw error }
                // One could not be recorded: again, each in a savepoint of
                // its own, so it leaves the others.
                results = try answers.map { answer in
                    let result = Result { try db.savepoint { try record(answer) } }
                    if case .failure(let error) = result, !db.isInTransaction { throw error }
                    return result
                }
            }
            // The latency histogram takes one update per bucket, not per job.
            var latencies: [String: Int64] = [:]
            for (answer, result) in zip(answers, results) {
                if case .success = result, case .applied = answer.update {
                    let bucket = "latency.\(LatencySummary.bucket(milliseconds: now - answer.job.createdMilliseconds))"
                    latencies[bucket, default: 0] += 1
                    latencies[Store.accountCounter(answer.job.account, bucket), default: 0] += 1
                }
            }
            for (name, count) in latencies {
                try Store.increment(db, name, by: count)
            }
            // An answer that held no expense leaves none cached: the server
            // has it, and the next refresh brings it.
            let made = try states.changes(db, gone: "synced") { id, to in
                let reasons = zip(answers, results).compactMap { answer, result -> String? in
                    guard answer.job.transactionID == id, case .success = result else { return nil }
                    return Store.reason(answer.job, answer.update, to: to, now: now)
                }
                return reasons.isEmpty ? nil : reasons.joined(separator: "; ")
            }
            return (results, made)
        }
    }

    static func removesFile(_ job: OutboxJob, _ update: JobUpdate) -> Bool {
        switch update {
        case .applied, .dropReceipt: job.receiptFile != nil
        default: false
        }
    }

    static func apply(_ db: Connection, _ job: OutboxJob, _ update: JobUpdate, now: Int64) throws -> String? {
        switch update {
        case .applied(let expense):
            if let expense {
                if job.kind == .receipt || job.kind == .edit { try Store.rebaseEdits(db, after: expense) }
                try Store.upsert(db, expense, account: job.account, now: now, ownAnswer: true)
            }
            if job.kind == .receipt {
                try Store.markReceiptApplied(db, job)
                try Store.forgetUpload(db, job)
            }
            FaultPoints.hit("between-upsert-and-job-removal")
            try db.execute("DELETE FROM jobs WHERE seq = ?", [.integer(job.seq)])
            return job.receiptFile
        case .dropReceipt:
            try Store.forgetUpload(db, job)
            try db.execute("DELETE FROM jobs WHERE seq = ?", [.integer(job.seq)])
            return job.receiptFile
        case .requeue:
            try db.execute("UPDATE jobs SET state = 'queued' WHERE seq = ?", [.integer(job.seq)])
            return nil
        case .retry(let next, let attempts, let transient, let error, let errorClass):
            try db.execute("""
                UPDATE jobs SET state = 'queued', next_attempt_at = ?, attempts = ?, transient_attempts = ?,
                    last_error = ?, last_error_class = ? WHERE seq = ?
                """, [.integer(next), .integer(Int64(attempts)), .integer(Int64(transient)), .text(error), .text(errorClass), .integer(job.seq)])
            try Store.countFailure(db, errorClass, account: job.account)
            return nil
        case .needsAttention(let attempts, let transient, let error, let errorClass):
            try db.execute("""
                UPDATE jobs SET state = 'needs_attention', attempts = ?, transient_attempts = ?,
                    last_error = ?, last_error_class = ? WHERE seq = ?
                """, [.integer(Int64(attempts)), .integer(Int64(transient)), .text(error), .text(errorClass), .integer(job.seq)])
            try Store.countFailure(db, errorClass, account: job.account)
            return nil
        }
    }

    /// Marks a job that cannot be sent at all (its receipt file is gone).
    public func markNeedsAttention(_ job: OutboxJob, error: String) async throws {
        try await write(durability: .deferred, usingHeadroom: true) { db, watched in
            let states = try StateChanges(db, watched: watched, [job.transactionID])
            try db.execute("""
                UPDATE jobs SET state = 'needs_attention', last_error = ?, last_error_class = 'local' WHERE seq = ?
                """, [.text(error), .integer(job.seq)])
            return ((), try states.changes(db) { _, _ in error })
        }
    }

    /// Adds `count` to the persistent counter `name`.
    static func increment(_ db: Connection, _ name: String, by count: Int64 = 1) throws {
        try db.execute("""
            INSERT INTO counters (name, value) VALUES (?1, ?2) ON CONFLICT (name) DO UPDATE SET value = value + ?2
            """, [.text(name), .integer(count)])
    }

    /// Counts a failure of `errorClass` in the persistent totals, and in
    /// those of the job's account when there is one.
    static func countFailure(_ db: Connection, _ errorClass: String, account: String? = nil) throws {
        try increment(db, "failures." + errorClass)
        if let account { try increment(db, accountCounter(account, "failures." + errorClass)) }
    }

    /// Counts a failure that is the server's rather than a job's answer, in
    /// the persistent totals: `transport` (no account: every account's
    /// totals show them) or `auth` (the account whose token was refused).
    public func countServerFailure(_ errorClass: String, account: String? = nil) async throws {
        try await database.write(durability: .deferred) { db in try Store.countFailure(db, errorClass, account: account) }
    }

    /// The persistent totals: failures by class and the latency histogram,
    /// of every account or of one. Transport failures are the server's, not
    /// an account's: each account's totals show them all.
    public func totals(in scope: AccountScope = .all) async throws -> (failures: [String: Int], latencyBuckets: [Int: Int]) {
        try await database.read { db in
            var failures: [String: Int] = [:]
            var buckets: [Int: Int] = [:]
            var prefix = ""
            if case .account(let account) = scope { prefix = Store.accountCounter(account, "") }
            // LIKE's '_' and '%' in a user name would match more: the prefix is checked again below.
            for (full, value) in try db.query(
                "SELECT name, value FROM counters WHERE name LIKE ?1 || 'failures.%' OR name LIKE ?1 || 'latency.%' OR name = 'failures.transport'",
                [.text(prefix)], { ($0.string(0), $0.int(1)) }) {
                guard full.hasPrefix(prefix) || full == "failures.transport" else { continue }
                let name = full.hasPrefix(prefix) ? String(full.dropFirst(prefix.count)) : full
                if name.hasPrefix("failures.") { failures[String(name.dropFirst(9))] = value }
                else if let bucket = Int(name.dropFirst(8)) { buckets[bucket] = value }
            }
            return (failures, buckets)
        }
    }
}
