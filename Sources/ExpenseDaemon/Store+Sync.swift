import ExpenseCore
import SQLite

extension Store {
    static let jobColumns = """
        seq, uuid, kind, transaction_id, payload, attempts, transient_attempts, sends, created_at,
        receipt_file, receipt_type, receipt_size
        """

    /// A job that may be sent now: queued, due, not waiting for an earlier
    /// job of the same expense, and alone in flight for its expense. A
    /// receipt waits for its create only (an upload never holds up edits);
    /// every other job waits for every earlier job but receipts. One job
    /// per expense at a time: an upload and an edit in flight together
    /// could reach the server in either order, and the upload's new version
    /// would make the edit look stale.
    static let eligible = """
        state = 'queued' AND next_attempt_at <= ?1
        AND NOT EXISTS (SELECT 1 FROM jobs AS p WHERE p.transaction_id = jobs.transaction_id AND p.seq < jobs.seq
            AND (CASE WHEN jobs.kind = 'receipt' THEN p.kind = 'create' ELSE p.kind != 'receipt' END))
        AND NOT EXISTS (SELECT 1 FROM jobs AS f WHERE f.transaction_id = jobs.transaction_id AND f.state = 'sending')
        """

    static func outboxJob(_ r: Row) -> OutboxJob {
        let payload = JobPayload.decode(r.string(4))
        return OutboxJob(
            seq: r.int64(0), uuid: r.string(1), kind: JobKind(rawValue: r.string(2)) ?? .create, transactionID: r.string(3),
            fields: payload.fields, baseVersion: payload.baseVersion, attempts: r.int(5), transientAttempts: r.int(6),
            sends: r.int(7), createdMilliseconds: r.int64(8), receiptFile: r.optionalString(9),
            receiptKind: r.optionalString(10).flatMap(ReceiptKind.init(rawValue:)), receiptSize: r.optionalInt64(11))
    }

    /// Takes up to `limit` jobs to send and marks them `sending`, in one
    /// commit. New jobs and retried ones take turns (Postfix's incoming and
    /// deferred queues), so a backlog of failing jobs never starves new ones.
    public func claim(limit: Int, now: Int64) async throws -> [OutboxJob] {
        // Durable: `sends` must never go back to 0 for a job the server may
        // hold (a create rewritten after it was sent would reuse its key
        // with another body). One fsync for the whole batch.
        try await database.write { db in
            let fresh = try db.query("""
                SELECT \(Store.jobColumns) FROM jobs
                WHERE attempts = 0 AND transient_attempts = 0 AND \(Store.eligible)
                ORDER BY seq LIMIT ?2
                """, [.integer(now), .integer(Int64(limit))], Store.outboxJob)
            let retrying = try db.query("""
                SELECT \(Store.jobColumns) FROM jobs
                WHERE (attempts > 0 OR transient_attempts > 0) AND \(Store.eligible)
                ORDER BY next_attempt_at LIMIT ?2
                """, [.integer(now), .integer(Int64(limit))], Store.outboxJob)
            var expenses: Set<String> = []
            let chosen = Lanes.interleave(fresh, retrying, limit: limit).filter { expenses.insert($0.transactionID).inserted }
            try db.execute("UPDATE jobs SET state = 'sending', sends = sends + 1 WHERE seq IN (SELECT value FROM json_each(?))",
                           [Store.seqs(chosen)])
            return chosen.map { job in
                var sent = job
                sent.sends += 1
                return sent
            }
        }
    }

    /// The jobs' sequence numbers as one value, a JSON array, for
    /// `seq IN (SELECT value FROM json_each(?))`: one statement for a batch
    /// (the counters' trigger still runs per row).
    static func seqs(_ jobs: [OutboxJob]) -> SQLValue {
        .text("[" + jobs.map { String($0.seq) }.joined(separator: ",") + "]")
    }

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

    /// Puts back in the queue jobs left `sending` by a pass that could not
    /// record their answer. Called when no pass runs, so none is in flight.
    public func requeueStranded() async throws {
        // The counter says whether there is any: in the usual case, one read
        // and no transaction.
        let sending = try await database.read { db in try db.scalarInt("SELECT value FROM counters WHERE name = 'sending'") ?? 0 }
        guard sending > 0 else { return }
        try await database.write(durability: .deferred) { db in
            try db.execute("UPDATE jobs SET state = 'queued' WHERE state = 'sending'", [])
        }
    }

    /// Puts a job back in the queue without counting an attempt, noting why
    /// (a transport failure, refused credentials). `wasSent: false` undoes
    /// the claim's count of sends: not one byte reached the server.
    /// - Returns: the transaction id of an expense dropped meanwhile (see
    ///   ``putBack(_:wasSent:error:)``), or nil.
    @discardableResult
    public func requeue(_ job: OutboxJob, error: String, errorClass: String, wasSent: Bool) async throws -> String? {
        try await putBack([job], wasSent: wasSent, error: (error, errorClass)).first
    }

    /// Returns claimed jobs that were never handed to the network.
    /// - Returns: the transaction ids of expenses dropped meanwhile.
    @discardableResult
    public func release(_ jobs: [OutboxJob]) async throws -> [String] {
        guard !jobs.isEmpty else { return [] }
        return try await putBack(jobs, wasSent: false, error: nil)
    }

    /// Puts claimed jobs back in the queue. A create that goes back never
    /// sent takes, now, what the user did to its expense while it was
    /// claimed, as if done before it: queued edits merge into it, and a
    /// queued delete drops the whole chain (nothing is sent). Durable then,
    /// as the chain's receipt files go after the commit.
    /// - Returns: the transaction ids of the expenses dropped.
    private func putBack(_ jobs: [OutboxJob], wasSent: Bool, error: (text: String, errorClass: String)?) async throws -> [String] {
        let unsentCreates = wasSent ? [] : jobs.filter { $0.kind == .create }
        let dropped = try await database.write(durability: unsentCreates.isEmpty ? .deferred : .durable) { db in
            try db.execute("""
                UPDATE jobs SET state = 'queued', last_error = coalesce(?, last_error), last_error_class = coalesce(?, last_error_class),
                    sends = CASE WHEN ? THEN sends ELSE max(sends - 1, 0) END
                WHERE seq IN (SELECT value FROM json_each(?)) AND state = 'sending'
                """, [error.map { .text($0.text) } ?? .null, error.map { .text($0.errorClass) } ?? .null,
                      .bool(wasSent), Store.seqs(jobs)])
            return try unsentCreates.compactMap { job in
                try Store.coalesceIntoUnsentCreate(db, transactionID: job.transactionID).map { (job.transactionID, $0) }
            }
        }
        for file in dropped.flatMap(\.1) { try? receipts.remove(file) }
        return dropped.map(\.0)
    }

    /// Applies queued edits and a queued delete to the expense's create
    /// when that never reached the server (see ``putBack(_:wasSent:error:)``).
    /// - Returns: the receipt files to remove when the chain was dropped.
    static func coalesceIntoUnsentCreate(_ db: Connection, transactionID: String) throws -> [String]? {
        let jobs = try rawJobs(db, transactionID: transactionID)
        guard let create = jobs.first(where: { $0.kind == .create }), create.isUntouched else { return nil }
        if jobs.contains(where: { $0.kind == .delete }) {
            let cached = try db.scalarInt("SELECT 1 FROM expenses WHERE transaction_id = ?", [.text(transactionID)]) != nil
            return try dropIfNeverSent(db, transactionID: transactionID, jobs: jobs, cached: cached)
        }
        let edits = jobs.filter { $0.kind == .edit && $0.isUntouched }
        guard !edits.isEmpty else { return nil }
        try rewrite(db, create, fields: edits.reduce(create.fields) { $0.merging($1.fields) }.values, baseVersion: nil)
        for edit in edits { try db.execute("DELETE FROM jobs WHERE seq = ?", [.integer(edit.seq)]) }
        return nil
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
    public func complete(_ answers: [(job: OutboxJob, update: JobUpdate, goneOnServer: Bool)],
                         now: Int64) async throws -> [Result<String?, any Error>] {
        let durable = answers.contains { Store.removesFile($0.job, $0.update) }
        return try await database.write(durability: durable ? .durable : .deferred) { db in
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
            var latencies: [Int: Int64] = [:]
            for (answer, result) in zip(answers, results) {
                if case .success = result, case .applied = answer.update {
                    latencies[Store.latencyBucket(milliseconds: now - answer.job.createdMilliseconds), default: 0] += 1
                }
            }
            for (bucket, count) in latencies {
                try Store.increment(db, "latency.\(bucket)", by: count)
            }
            return results
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
                try Store.upsert(db, expense, now: now)
            }
            FaultPoints.hit("between-upsert-and-job-removal")
            try db.execute("DELETE FROM jobs WHERE seq = ?", [.integer(job.seq)])
            return job.receiptFile
        case .dropReceipt:
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
            try Store.countFailure(db, errorClass)
            return nil
        case .needsAttention(let attempts, let transient, let error, let errorClass):
            try db.execute("""
                UPDATE jobs SET state = 'needs_attention', attempts = ?, transient_attempts = ?,
                    last_error = ?, last_error_class = ? WHERE seq = ?
                """, [.integer(Int64(attempts)), .integer(Int64(transient)), .text(error), .text(errorClass), .integer(job.seq)])
            try Store.countFailure(db, errorClass)
            return nil
        }
    }

    /// Marks a job that cannot be sent at all (its receipt file is gone).
    public func markNeedsAttention(_ job: OutboxJob, error: String) async throws {
        try await database.write(durability: .deferred) { db in
            try db.execute("""
                UPDATE jobs SET state = 'needs_attention', last_error = ?, last_error_class = 'local' WHERE seq = ?
                """, [.text(error), .integer(job.seq)])
        }
    }

    /// Adds `count` to the persistent counter `name`.
    static func increment(_ db: Connection, _ name: String, by count: Int64 = 1) throws {
        try db.execute("""
            INSERT INTO counters (name, value) VALUES (?1, ?2) ON CONFLICT (name) DO UPDATE SET value = value + ?2
            """, [.text(name), .integer(count)])
    }

    /// Counts a failure of `errorClass` in the persistent totals.
    static func countFailure(_ db: Connection, _ errorClass: String) throws {
        try increment(db, "failures." + errorClass)
    }

    /// Counts transport failures, which touch no job.
    public func countTransportFailure() async throws {
        try await database.write(durability: .deferred) { db in try Store.countFailure(db, "transport") }
    }

    /// The persistent histogram's bucket for an enqueue-to-applied
    /// latency: bucket k counts latencies in [2^(k-1), 2^k) ms.
    static func latencyBucket(milliseconds: Int64) -> Int {
        milliseconds <= 0 ? 0 : 64 - milliseconds.leadingZeroBitCount
    }

    /// The persistent totals: failures by class and the latency histogram.
    public func totals() async throws -> (failures: [String: Int], latencyBuckets: [Int: Int]) {
        try await database.read { db in
            var failures: [String: Int] = [:]
            var buckets: [Int: Int] = [:]
            for (name, value) in try db.query("SELECT name, value FROM counters WHERE name LIKE 'failures.%' OR name LIKE 'latency.%'", [], { ($0.string(0), $0.int(1)) }) {
                if name.hasPrefix("failures.") { failures[String(name.dropFirst(9))] = value }
                else if let bucket = Int(name.dropFirst(8)) { buckets[bucket] = value }
            }
            return (failures, buckets)
        }
    }

    /// Stores the server's version of an expense, unless the cache already
    /// holds a newer one. `transaction_id` is the primary key: one row per
    /// expense, however many responses and refreshes overlap.
    static func upsert(_ db: Connection, _ e: CanonicalExpense, now: Int64) throws {
        let conflicts = ConflictValues.encode(e.conflicts)
        try db.execute("""
            INSERT INTO expenses (transaction_id, client_id, merchant, amount, currency, date, category, comment, tax_tag,
                                  receipt_url, assigned, version, created_at, updated_at, deleted, conflict, conflicts, stored_at)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
            ON CONFLICT (transaction_id) DO UPDATE SET
                client_id = excluded.client_id, merchant = excluded.merchant, amount = excluded.amount,
                currency = excluded.currency, date = excluded.date, category = excluded.category,
                comment = excluded.comment, tax_tag = excluded.tax_tag, receipt_url = excluded.receipt_url,
                assigned = excluded.assigned, version = excluded.version, created_at = excluded.created_at,
                updated_at = excluded.updated_at, deleted = excluded.deleted, conflict = excluded.conflict,
                conflicts = excluded.conflicts, stored_at = excluded.stored_at
            WHERE excluded.version >= expenses.version
            """, [.text(e.transactionID), .text(e.clientID), .text(e.merchant), .text(e.amount), .text(e.currency),
                  .text(e.date), .text(e.category), .text(e.comment), .text(e.taxTag), .text(e.receiptURL),
                  .bool(e.assigned), .integer(Int64(e.version)), .text(e.createdAt), .text(e.updatedAt),
                  .bool(e.deleted), .bool(e.conflict), .text(conflicts), .integer(now)])
    }

    /// Stores one page of a refresh and the cursor after it, together.
    /// - Returns: transaction ids of tombstones that arrived.
    public func storeRefreshPage(_ expenses: [CanonicalExpense], cursor: String?, now: Int64) async throws -> [String] {
        // Deferred: a lost page is fetched again from the older cursor.
        try await database.write(durability: .deferred) { db in
            for expense in expenses {
                try Store.upsert(db, expense, now: now)
                if expense.deleted {
                    // Deleted elsewhere: a change still waiting here cannot apply.
                    // Say so instead of dropping the user's edit silently.
                    try db.execute("""
                        UPDATE jobs SET state = 'needs_attention', last_error_class = 'gone',
                            last_error = 'the expense was deleted on another device; this edit was not applied'
                        WHERE transaction_id = ? AND kind = 'edit' AND state = 'queued'
                        """, [.text(expense.transactionID)])
                }
            }
            if let cursor {
                try db.execute("INSERT INTO settings (key, value) VALUES ('refresh_cursor', ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value", [.text(cursor)])
            }
            return expenses.filter(\.deleted).map(\.transactionID)
        }
    }

    /// Where the last refresh stopped (opaque to the client).
    public func refreshCursor() async throws -> String? {
        try await database.read { db in
            try db.queryFirst("SELECT value FROM settings WHERE key = 'refresh_cursor'") { $0.string(0) }
        }
    }

    /// What the next wake-up depends on, in one read: whether anything is
    /// queued, and when the first backing-off job is due (if one is).
    public func pendingWork() async throws -> (queued: Bool, earliestRetry: Int64?) {
        try await database.read { db in
            let queued = (try db.scalarInt("SELECT value FROM counters WHERE name = 'queued'") ?? 0) > 0
            let due = try db.queryFirst("""
                SELECT next_attempt_at FROM jobs WHERE (attempts > 0 OR transient_attempts > 0) AND state = 'queued'
                ORDER BY next_attempt_at LIMIT 1
                """) { $0.int64(0) }
            return (queued, due)
        }
    }
}

/// Taking turns between two queues.
enum Lanes {
    /// Alternates `a` and `b` (starting with `a`) until `limit`, then takes
    /// whatever one has left.
    static func interleave<T>(_ a: [T], _ b: [T], limit: Int) -> [T] {
        var result: [T] = []
        var i = 0, j = 0
        while result.count < limit && (i < a.count || j < b.count) {
            if i < a.count { result.append(a[i]); i += 1 }
            if result.count < limit && j < b.count { result.append(b[j]); j += 1 }
        }
        return result
    }
}
