import ExpenseCore
import SQLite

extension Store {
    static let jobColumns = """
        seq, uuid, kind, transaction_id, payload, attempts, transient_attempts, sends, created_at,
        receipt_file, receipt_type, receipt_size
        """

    /// A job that may be sent now: queued, due, and not waiting for an
    /// earlier job of the same expense. A receipt waits for its create only
    /// (uploads never hold up edits); every other job waits for every
    /// earlier job but receipts.
    static let eligible = """
        state = 'queued' AND next_attempt_at <= ?1
        AND NOT EXISTS (SELECT 1 FROM jobs AS p WHERE p.transaction_id = jobs.transaction_id AND p.seq < jobs.seq
            AND (CASE WHEN jobs.kind = 'receipt' THEN p.kind = 'create' ELSE p.kind != 'receipt' END))
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
        // Deferred: after a power loss a job marked sending may be back to
        // queued, which start-up does anyway.
        try await database.write(durability: .deferred) { db in
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
            let chosen = Lanes.interleave(fresh, retrying, limit: limit)
            for job in chosen {
                try db.execute("UPDATE jobs SET state = 'sending', sends = sends + 1 WHERE seq = ?", [.integer(job.seq)])
            }
            return chosen.map { job in
                var sent = job
                sent.sends += 1
                return sent
            }
        }
    }

    /// Returns claimed jobs that were never handed to the network.
    public func release(_ jobs: [OutboxJob]) async throws {
        guard !jobs.isEmpty else { return }
        try await database.write(durability: .deferred) { db in
            for job in jobs {
                try db.execute("UPDATE jobs SET state = 'queued', sends = max(sends - 1, 0) WHERE seq = ? AND state = 'sending'", [.integer(job.seq)])
            }
        }
    }

    /// Applies what the server said about a job, in one transaction: for
    /// an applied job, the returned expense is upserted into the cache and
    /// the job removed together.
    /// - Returns: the receipt file the caller may now delete, if any.
    ///
    /// Durable only when a receipt file is deleted after it (the job must
    /// never come back without its file). Otherwise deferred: losing it to a
    /// power cut means sending the job once more, which the server replays.
    public func complete(_ job: OutboxJob, _ update: JobUpdate, now: Int64) async throws -> String? {
        let removesFile: Bool
        switch update {
        case .applied, .dropReceipt: removesFile = job.receiptFile != nil
        default: removesFile = false
        }
        return try await database.write(durability: removesFile ? .durable : .deferred) { db in
            switch update {
            case .applied(let expense):
                if let expense { try Store.upsert(db, expense, now: now) }
                FaultPoints.hit("between-upsert-and-job-removal")
                try db.execute("DELETE FROM jobs WHERE seq = ?", [.integer(job.seq)])
                try Store.recordLatency(db, milliseconds: now - job.createdMilliseconds)
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
    }

    /// Marks a job that cannot be sent at all (its receipt file is gone).
    public func markNeedsAttention(_ job: OutboxJob, error: String) async throws {
        try await database.write(durability: .deferred) { db in
            try db.execute("""
                UPDATE jobs SET state = 'needs_attention', last_error = ?, last_error_class = 'local' WHERE seq = ?
                """, [.text(error), .integer(job.seq)])
        }
    }

    /// Counts a failure of `errorClass` in the persistent totals.
    static func countFailure(_ db: Connection, _ errorClass: String) throws {
        try db.execute("""
            INSERT INTO counters (name, value) VALUES (?, 1) ON CONFLICT (name) DO UPDATE SET value = value + 1
            """, [.text("failures." + errorClass)])
    }

    /// Counts transport failures, which touch no job.
    public func countTransportFailure() async throws {
        try await database.write(durability: .deferred) { db in try Store.countFailure(db, "transport") }
    }

    /// Adds an enqueue-to-applied latency to the persistent histogram:
    /// bucket k counts latencies in [2^(k-1), 2^k) ms.
    static func recordLatency(_ db: Connection, milliseconds: Int64) throws {
        let bucket = milliseconds <= 0 ? 0 : 64 - milliseconds.leadingZeroBitCount
        try db.execute("""
            INSERT INTO counters (name, value) VALUES (?, 1) ON CONFLICT (name) DO UPDATE SET value = value + 1
            """, [.text("latency.\(bucket)")])
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
                        UPDATE jobs SET state = 'needs_attention', last_error_class = 'conflict',
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

    /// When the first backing-off job becomes due, for the drainer's timer
    /// (through the index of jobs that have failed: no outbox scan).
    public func earliestRetry() async throws -> Int64? {
        try await database.read { db in
            try db.queryFirst("""
                SELECT next_attempt_at FROM jobs WHERE (attempts > 0 OR transient_attempts > 0) AND state = 'queued'
                ORDER BY next_attempt_at LIMIT 1
                """) { $0.int64(0) }
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
