import ExpenseCore
import SQLite

// Taking jobs to send, and putting back those that were not answered.
extension Store {
    /// A job as it is sent; an upload with the digest recorded when its
    /// bytes were staged, so that what is sent is checked against what was
    /// taken, not against what is on disk now.
    /// An upload sends its legible copy when one was made (docs/receipts.md).
    static let jobColumns = """
        seq, uuid, jobs.kind, transaction_id, payload, attempts, transient_attempts, sends, created_at,
        COALESCE(c.file, receipt_file), COALESCE(c.kind, receipt_type), COALESCE(c.size, receipt_size), account,
        CASE WHEN jobs.kind = 'receipt' THEN COALESCE(c.sha256, (SELECT sha256 FROM receipt_digests WHERE receipt_digests.job_uuid = jobs.uuid)) END,
        upload_url, upload_offset
        """

    /// What ``jobColumns`` reads from besides `jobs`.
    static let jobCopies = "LEFT JOIN receipt_copies AS c ON c.job_uuid = jobs.uuid AND c.file IS NOT NULL"

    /// A job that may be sent now: queued, due, not waiting for an earlier
    /// job of the same expense, and alone in flight for its expense. A
    /// receipt waits for its create and earlier uploads only (an upload
    /// never holds up edits; a newer file must land last), but not for one
    /// that needs attention, which the newer one supersedes;
    /// every other job waits for every earlier job but receipts; an upload
    /// waits for its copy to be made, and for its reading (the bytes are
    /// read before they may be sent and removed). One job
    /// per expense at a time: an upload and an edit in flight together
    /// could reach the server in either order, and the upload's new version
    /// would make the edit look stale.
    static let eligible = """
        state = 'queued' AND next_attempt_at <= ?1
        AND (jobs.kind != 'receipt' OR EXISTS (SELECT 1 FROM receipt_copies WHERE receipt_copies.job_uuid = jobs.uuid))
        AND (jobs.kind != 'receipt' OR NOT EXISTS (SELECT 1 FROM receipt_readings WHERE receipt_readings.job_uuid = jobs.uuid))
        AND NOT EXISTS (SELECT 1 FROM jobs AS p WHERE p.transaction_id = jobs.transaction_id AND p.seq < jobs.seq
            AND (CASE WHEN jobs.kind = 'receipt' THEN p.kind = 'create' OR (p.kind = 'receipt' AND p.state != 'needs_attention')
                 ELSE p.kind != 'receipt' END))
        AND NOT EXISTS (SELECT 1 FROM jobs AS f WHERE f.transaction_id = jobs.transaction_id AND f.state = 'sending')
        """

    static func outboxJob(_ r: Row) -> OutboxJob {
        let payload = JobPayload.decode(r.string(4))
        return OutboxJob(
            seq: r.int64(0), uuid: r.string(1), kind: JobKind(rawValue: r.string(2)) ?? .create, transactionID: r.string(3),
            fields: payload.fields, baseVersion: payload.baseVersion, attempts: r.int(5), transientAttempts: r.int(6),
            sends: r.int(7), createdMilliseconds: r.int64(8), receiptFile: r.optionalString(9),
            receiptKind: r.optionalString(10).flatMap(ReceiptKind.init(rawValue:)), receiptSize: r.optionalInt64(11),
            receiptSHA256: r.blob(13), account: r.string(12), uploadURL: r.optionalString(14), uploadOffset: r.optionalInt64(15))
    }

    /// Takes up to `limit` jobs to send and marks them `sending`, in one
    /// commit. New jobs and retried ones take turns (Postfix's incoming and
    /// deferred queues), so a backlog of failing jobs never starves new ones.
    /// The jobs of `paused` accounts (their token refused or missing) stay
    /// where they are: one account's trouble holds up no other. So do jobs
    /// of the `holding` kinds (a metered link's receipt uploads), and the
    /// creates of incomplete expenses (lacking what `requiring` names, with
    /// what waits behind them): held, not failed, they wait with their
    /// attempts and retry time untouched. With `readingWait` (milliseconds;
    /// receipts are read), so does the create of a receipt-only expense
    /// whose reading is still to do, for at most that long after it was
    /// queued (``ReadingWait``).
    public func claim(limit: Int, now: Int64, paused: Set<String> = [], holding: Set<JobKind> = [],
                      requiring: RequiredFields = .none, readingWait: Int64? = nil) async throws -> [OutboxJob] {
        let skip = (paused.isEmpty ? "" : " AND account NOT IN (SELECT value FROM json_each(?3))")
            + (holding.isEmpty ? "" : " AND jobs.kind NOT IN (SELECT value FROM json_each(?4))")
            + (requiring.isEmpty ? "" : " AND NOT \(Store.isIncompleteCreate("jobs", requiring))")
            + (readingWait == nil ? "" : " AND " + ReadingWait.holdsCreate(wait: 5))
        // Bound up to the last number the SQL names (?3 unused is allowed; a value past the last is not).
        let optional: [SQLValue] = [Store.textList(paused.sorted()), Store.textList(holding.map(\.rawValue).sorted()), .integer(readingWait ?? 0)]
        let last = readingWait != nil ? 3 : !holding.isEmpty ? 2 : !paused.isEmpty ? 1 : 0
        let values: [SQLValue] = [.integer(now), .integer(Int64(limit))] + optional.prefix(last)
        // Durable: `sends` must never go back to 0 for a job the server may
        // hold (a create rewritten after it was sent would reuse its key
        // with another body). One fsync for the whole batch.
        return try await write(usingHeadroom: true) { db, watched in
            let fresh = try db.query("""
                SELECT \(Store.jobColumns) FROM jobs \(Store.jobCopies)
                WHERE attempts = 0 AND transient_attempts = 0 AND \(Store.eligible)\(skip)
                ORDER BY seq LIMIT ?2
                """, values, Store.outboxJob)
            let retrying = try db.query("""
                SELECT \(Store.jobColumns) FROM jobs \(Store.jobCopies)
                WHERE (attempts > 0 OR transient_attempts > 0) AND \(Store.eligible)\(skip)
                ORDER BY next_attempt_at LIMIT ?2
                """, values, Store.outboxJob)
            var expenses: Set<String> = []
            let chosen = Lanes.interleave(fresh, retrying, limit: limit).filter { expenses.insert($0.transactionID).inserted }
            let states = try StateChanges(db, watched: watched, chosen.map(\.transactionID))
            try db.execute("UPDATE jobs SET state = 'sending', sends = sends + 1 WHERE seq IN (SELECT value FROM json_each(?))",
                           [Store.seqs(chosen)])
            let claimed = chosen.map { job in
                var sent = job
                sent.sends += 1
                return sent
            }
            return (claimed, try states.changes(db))
        }
    }

    /// Strings as one value, a JSON array, for `IN (SELECT value FROM json_each(?))`.
    static func textList(_ values: [String]) -> SQLValue {
        .text(JSONValue.array(values.map { .string($0) }).serialized())
    }

    /// The jobs' sequence numbers as one value, a JSON array, for
    /// `seq IN (SELECT value FROM json_each(?))`: one statement for a batch
    /// (the counters' trigger still runs per row).
    static func seqs(_ jobs: [OutboxJob]) -> SQLValue {
        .text("[" + jobs.map { String($0.seq) }.joined(separator: ",") + "]")
    }

    /// What a pass does first, in one read of the store (a pass follows
    /// every add): puts back in the queue jobs left `sending` by a pass that
    /// could not record their answer (called when no pass runs, so none is
    /// in flight), and says which uploads are listed to cancel on the server.
    @discardableResult
    public func startPass() async throws -> [(url: String, account: String)] {
        // The counter says whether any job is stranded: in the usual case,
        // one read and no transaction.
        let (sending, cancellations) = try await database.read { db in
            (try db.scalarInt("SELECT value FROM counters WHERE name = 'sending'") ?? 0, try Store.uploadCancellations(db))
        }
        guard sending > 0 else { return cancellations }
        try await write(durability: .deferred, usingHeadroom: true) { db, watched in
            let states = try StateChanges(db, watched: watched,
                                          watched ? try db.query("SELECT DISTINCT transaction_id FROM jobs WHERE state = 'sending'") { $0.string(0) } : [])
            try db.execute("UPDATE jobs SET state = 'queued' WHERE state = 'sending'", [])
            return ((), try states.changes(db) { _, _ in "its answer was not recorded" })
        }
        return cancellations
    }

    /// The network may be back: jobs whose last failure was the transport's
    /// are due now rather than at their retry time. A rejection or a
    /// server's refusal keeps its backoff.
    /// - Returns: how many were waiting for their retry time.
    public func clearTransportBackoff(now: Int64) async throws -> Int {
        try await database.write(durability: .deferred) { db in
            try db.execute("""
                UPDATE jobs SET next_attempt_at = 0 WHERE state = 'queued' AND last_error_class = 'transport' AND next_attempt_at > ?
                """, [.integer(now)])
            return db.changes
        }
    }

    /// Puts a job back in the queue without counting an attempt, noting why
    /// (a transport failure, refused credentials). `wasSent: false` undoes
    /// the claim's count of sends: not one byte reached the server.
    /// - Returns: the transaction id of an expense dropped meanwhile (see
    ///   ``putBack(_:wasSent:error:)``), or nil.
    @discardableResult
    ///
    /// With `settleUntil` (a create cut off while in flight, to a backend
    /// that looks its marker up before sending it again), it is not tried
    /// before then, counted as a transient attempt so that the drain wakes
    /// for it (``reconcile(settlingCreatesFor:now:)`` does the same at start).
    public func requeue(_ job: OutboxJob, error: String, errorClass: String, wasSent: Bool, settleUntil: Int64? = nil) async throws -> String? {
        try await putBack([job], wasSent: wasSent, error: (error, errorClass), settleUntil: settleUntil).first
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
    private func putBack(_ jobs: [OutboxJob], wasSent: Bool, error: (text: String, errorClass: String)?, settleUntil: Int64? = nil) async throws -> [String] {
        let unsentCreates = wasSent ? [] : jobs.filter { $0.kind == .create }
        let dropped = try await write(durability: unsentCreates.isEmpty ? .deferred : .durable, usingHeadroom: true) { db, watched in
            let states = try StateChanges(db, watched: watched, jobs.map(\.transactionID))
            try db.execute("""
                UPDATE jobs SET state = 'queued', last_error = coalesce(?1, last_error), last_error_class = coalesce(?2, last_error_class),
                    sends = CASE WHEN ?3 THEN sends ELSE max(sends - 1, 0) END,
                    transient_attempts = transient_attempts + (?5 IS NOT NULL), next_attempt_at = max(next_attempt_at, coalesce(?5, 0))
                WHERE seq IN (SELECT value FROM json_each(?4)) AND state = 'sending'
                """, [error.map { .text($0.text) } ?? .null, error.map { .text($0.errorClass) } ?? .null,
                      .bool(wasSent), Store.seqs(jobs), settleUntil.map { .integer($0) } ?? .null])
            let dropped = try unsentCreates.compactMap { job in
                try Store.coalesceIntoUnsentCreate(db, transactionID: job.transactionID).map { (job.transactionID, $0) }
            }
            let gone = Set(dropped.map(\.0))
            return (dropped, try states.changes(db) { id, _ in gone.contains(id) ? "never reached the server" : error?.text })
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

    /// What the next wake-up depends on, in one read: whether anything is
    /// queued, and when the first backing-off job is due (if one is); jobs
    /// of the `holding` kinds (held by a metered link) left out, and those
    /// of incomplete expenses (``incompleteCounts(requiring:excluding:in:)``).
    /// With `readingWait` (as ``claim(limit:now:paused:holding:requiring:readingWait:)``
    /// takes it), a create waiting for its reading is due when its wait
    /// ends after `now`.
    public func pendingWork(holding: Set<JobKind> = [], requiring: RequiredFields = .none, readingWait: Int64?,
                            now: Int64) async throws -> (queued: Bool, earliestRetry: Int64?) {
        let pending = try await pendingWork(holding: holding, requiring: requiring)
        guard let readingWait, pending.queued else { return pending }
        let waitEnds = try await database.read { db in
            try db.queryFirst("SELECT min(queued_at) FROM receipt_readings WHERE receipt_only = 1 AND queued_at > ?",
                              [.integer(now - readingWait)]) { $0.optionalInt64(0) }?.map { $0 + readingWait }
        }
        return (pending.queued, [pending.earliestRetry, waitEnds].compactMap { $0 }.min())
    }

    public func pendingWork(holding: Set<JobKind> = [], requiring: RequiredFields = .none) async throws -> (queued: Bool, earliestRetry: Int64?) {
        guard requiring.isEmpty else { return try await pendingCompleteWork(holding: holding, requiring: requiring) }
        return try await database.read { db in
            guard !holding.isEmpty else {
                let queued = (try db.scalarInt("SELECT value FROM counters WHERE name = 'queued'") ?? 0) > 0
                let due = try db.queryFirst("""
                    SELECT next_attempt_at FROM jobs WHERE (attempts > 0 OR transient_attempts > 0) AND state = 'queued'
                    ORDER BY next_attempt_at LIMIT 1
                    """) { $0.int64(0) }
                return (queued, due)
            }
            let kinds = Store.textList(holding.map(\.rawValue).sorted())
            let queued = try db.scalarInt("""
                SELECT EXISTS (SELECT 1 FROM jobs WHERE state = 'queued' AND kind NOT IN (SELECT value FROM json_each(?)))
                """, [kinds]) == 1
            let due = try db.queryFirst("""
                SELECT next_attempt_at FROM jobs WHERE (attempts > 0 OR transient_attempts > 0) AND state = 'queued'
                    AND kind NOT IN (SELECT value FROM json_each(?))
                ORDER BY next_attempt_at LIMIT 1
                """, [kinds]) { $0.int64(0) }
            return (queued, due)
        }
    }

    /// How many queued jobs of `kinds` there are in `scope`: those a
    /// metered link holds. Counted only while something is held (a scan
    /// of the queued jobs: no counter keeps kinds).
    public func queuedCount(of kinds: Set<JobKind>, in scope: AccountScope = .all) async throws -> Int {
        guard !kinds.isEmpty else { return 0 }
        return try await database.read { db in
            let kindList = Store.textList(kinds.map(\.rawValue).sorted())
            switch scope {
            case .all:
                return Int(try db.scalarInt("SELECT count(*) FROM jobs WHERE state = 'queued' AND kind IN (SELECT value FROM json_each(?))",
                                            [kindList]) ?? 0)
            case .account(let account):
                return Int(try db.scalarInt("""
                    SELECT count(*) FROM jobs WHERE account = ? AND state = 'queued' AND kind IN (SELECT value FROM json_each(?))
                    """, [.text(account), kindList]) ?? 0)
            }
        }
    }

    /// Queued jobs that wait for an earlier job of their expense that needs
    /// attention (``eligible``'s order): they go once it is retried or
    /// discarded, not before. Jobs of the `excluding` kinds (what a metered
    /// link holds, counted apart) are left out.
    public func queuedBehindAttention(excluding kinds: Set<JobKind> = [], in scope: AccountScope = .all) async throws -> Int {
        // From the jobs that need attention (few) to theirs by jobs_by_expense:
        // CROSS JOIN keeps that order, where the planner started from the
        // queued ones (100,000 queued, one needing attention: 55 ms a
        // summary against 6 in sqlite3).
        try await database.read { db in
            Int(try db.scalarInt("""
                SELECT count(DISTINCT q.seq) FROM jobs AS p CROSS JOIN jobs AS q ON q.transaction_id = p.transaction_id AND q.seq > p.seq
                WHERE p.state = 'needs_attention' AND q.state = 'queued' AND \(Store.inScope(1, column: "q.account"))
                    AND q.kind NOT IN (SELECT value FROM json_each(?2))
                    AND (CASE WHEN q.kind = 'receipt' THEN p.kind = 'create' ELSE p.kind != 'receipt' END)
                """, [scope.sqlValue, Store.textList(kinds.map(\.rawValue).sorted())]) ?? 0)
        }
    }
}
