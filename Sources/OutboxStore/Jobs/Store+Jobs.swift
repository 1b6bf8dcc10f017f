import ExpenseCore
import SQLite

/// What `enqueueCreate` did.
public struct EnqueueResult: Sendable, Equatable {
    public let transactionID: String
    public let clientID: String
    /// False when the client id was already known: the add was a retry.
    public let isNew: Bool
    public let hasReceipt: Bool
    /// `queued` for a new add (`needs_attention` when held); for a
    /// retried one, where that expense is now.
    public var state: ExpenseView.State = .queued
    /// Why a new expense is held: its receipt is another expense's
    /// (docs/receipts.md, "The same receipt twice").
    public var held: String? = nil
}

extension Store {
    /// Queues a new expense (and its receipt upload, when one was staged)
    /// in one transaction, which has committed when this returns.
    ///
    /// The same `clientID` again returns the existing expense instead of a
    /// second one: a client whose answer was lost can retry safely. The
    /// staged receipt of such a retry is removed.
    ///
    /// `account` is whose expense it is: every job of it is sent with that
    /// account's token. A client id already used by another account is
    /// refused as unknown, without saying whose it is.
    ///
    /// A new expense is refused with an ``OutboxRefusal`` when it does not
    /// fit the outbox's limits (checked in the transaction, against counts
    /// that include every write before it), or when the file system is
    /// full at its commit; nothing of it remains. A retry of one already
    /// queued is answered whatever the limits.
    public func enqueueCreate(fields: ExpenseFields, clientID: String, receipt: StagedReceipt?, now: Int64,
                              account: String = AccountName.defaultName, receiptPath: String? = nil) async throws -> EnqueueResult {
        try await withCheckedThrowingContinuation { continuation in
            enqueueCreate(fields: fields, clientID: clientID, receipt: receipt, now: now, account: account,
                          receiptPath: receiptPath) { continuation.resume(with: $0) }
        }
    }

    /// ``enqueueCreate(fields:clientID:receipt:now:account:receiptPath:)`` without waiting:
    /// `completion` runs on the store's thread once the commit returned.
    /// `receiptPath`, the path the receipt was given as, is kept as the expense's source.
    public func enqueueCreate(fields: ExpenseFields, clientID: String, receipt: StagedReceipt?, now: Int64,
                              account: String = AccountName.defaultName, receiptPath: String? = nil,
                              completion: @escaping @Sendable (Result<EnqueueResult, Error>) -> Void) {
        let transactionID = TransactionID.derive(from: clientID)
        let payload: String
        do {
            payload = try JobPayload.encode(fields: fields)
        } catch {
            completion(.failure(error))
            return
        }
        database.write({ [room] db in
            let owners = try Store.owners(db, transactionID: transactionID)
            if !owners.isEmpty {
                guard owners == [account] else {
                    throw StoreError(.invalidState, "client_id \(clientID) is already used by another expense; send a new one")
                }
                let receiptKnown = try db.scalarInt("SELECT count(*) FROM jobs WHERE transaction_id = ? AND kind = 'receipt'", [.text(transactionID)]) ?? 0
                let state = try Store.view(db, transactionID: transactionID)?.state ?? .synced
                return EnqueueResult(transactionID: transactionID, clientID: clientID, isNew: false, hasReceipt: receiptKnown > 0, state: state)
            }
            try Store.admit(db, .add(receiptBytes: receipt.map { Int64($0.size) }, copied: true), room: room)
            let held = try Store.insertCreate(db, clientID: clientID, transactionID: transactionID, payload: payload, receipt: receipt,
                                              now: now, account: account, reading: self.readsReceipts ? fields : nil)
            if let receiptPath, receipt != nil {
                try Store.insertSource(db, transactionID: transactionID, .file(path: receiptPath), account: account, now: now)
            }
            return EnqueueResult(transactionID: transactionID, clientID: clientID, isNew: true, hasReceipt: receipt != nil,
                                 state: held == nil ? .queued : .needsAttention, held: held)
        }, completion: { [self] result in
            // A receipt copy that did not become (or was already) a job goes.
            if let receipt, (try? result.get())?.isNew != true { try? receipts.remove(receipt.fileName) }
            if let added = try? result.get(), added.isNew {
                emit { [ExpenseChange(account: account, transactionID: transactionID, from: nil, to: added.state.rawValue, reason: added.held)] }
            }
            // A full file system at the commit refuses the add as a limit does.
            completion(result.mapError { refusal(forFailure: $0) ?? $0 })
        })
    }

    /// Inserts a create job, and its receipt job when a receipt was staged,
    /// inside the caller's transaction; with `reading` (the create's
    /// fields, when receipts are read), the receipt's reading too.
    /// - Returns: why the expense is held when its receipt is another's
    ///   (``recordReceived(_:_:transactionID:now:)``), else nil.
    @discardableResult
    static func insertCreate(_ db: Connection, clientID: String, transactionID: String, payload: String,
                             receipt: StagedReceipt?, now: Int64, account: String, reading: ExpenseFields? = nil) throws -> String? {
        try db.execute("""
            INSERT INTO jobs (seq, uuid, kind, transaction_id, payload, created_at, account)
            VALUES (\(Store.nextSeq), ?, 'create', ?, ?, ?, ?)
            """, [.text(clientID), .text(transactionID), .text(payload), .integer(now), .text(account)])
        if let receipt {
            try db.execute("""
                INSERT INTO jobs (seq, uuid, kind, transaction_id, payload, created_at, receipt_file, receipt_type, receipt_size, account)
                VALUES (\(Store.nextSeq), ?, 'receipt', ?, '{}', ?, ?, ?, ?, ?)
                """, [.text(receipt.jobUUID), .text(transactionID), .integer(now), .text(receipt.fileName),
                      .text(receipt.kind.rawValue), .integer(Int64(receipt.size)), .text(account)])
            try Store.recordDigest(db, of: receipt, transactionID: transactionID)
            if let reading {
                try Store.insertReading(db, jobUUID: receipt.jobUUID, transactionID: transactionID, account: account,
                                        receiptOnly: ReadingWait.isReceiptOnly(reading), now: now)
            }
            return try Store.recordReceived(db, receipt, transactionID: transactionID, now: now)
        }
        return nil
    }

    /// Every expense to show: the cache with pending work folded on top,
    /// oldest first (by the server's creation time once synced, by the
    /// device's before), so the order holds while expenses sync.
    public func views(in scope: AccountScope = .all) async throws -> [ExpenseView] {
        try await database.read { db in
            let views = try Store.views(db, where: Store.inScope(1), [scope.sqlValue])
            func added(_ view: ExpenseView) -> Int64 {
                if let createdAt = view.createdAt { return Timestamp.parse(createdAt) ?? 0 }
                return view.jobs.first { $0.kind == .create }?.createdMilliseconds ?? 0
            }
            return views.values.sorted { (added($0), $0.transactionID) < (added($1), $1.transactionID) }
        }
    }

    /// One expense with its pending jobs, by a reference a person typed.
    /// One deleted on the server is shown as `deleted`, with its last values.
    public func view(ref: String, in scope: AccountScope = .all) async throws -> ExpenseView {
        try await database.read { db in
            let transactionID = try Store.resolve(db, ref: ref, in: scope)
            guard let view = try Store.view(db, transactionID: transactionID, keepingTombstone: true) else {
                throw StoreError(.notFound, "no expense matches '\(ref)'")
            }
            return view
        }
    }

    static func view(_ db: Connection, transactionID: String, keepingTombstone: Bool = false) throws -> ExpenseView? {
        try views(db, where: "transaction_id = ?", [.text(transactionID)], keepingTombstone: keepingTombstone)[transactionID]
    }

    /// The views of the expenses `condition` selects (in `expenses`,
    /// `jobs` and `expense_sources` alike), by transaction id: the cache
    /// row, the pending jobs folded on top, and where each came from, in
    /// three queries whatever their number. An expense with nothing to
    /// show is left out.
    static func views(_ db: Connection, where condition: String, _ values: [SQLValue],
                      keepingTombstone: Bool = false) throws -> [String: ExpenseView] {
        var cached: [String: CanonicalExpense] = [:]
        for expense in try cachedExpenses(db, where: condition, values) { cached[expense.transactionID] = expense }
        var jobs: [String: [PendingJob]] = [:]
        for (transactionID, job) in try pendingJobs(db, where: condition, values) { jobs[transactionID, default: []].append(job) }
        let sources = try sources(db, where: condition, values)
        var views: [String: ExpenseView] = [:]
        for transactionID in Set(cached.keys).union(jobs.keys) {
            guard var view = ExpenseView.fold(cached: cached[transactionID], jobs: jobs[transactionID] ?? [], transactionID: transactionID,
                                              keepingTombstone: keepingTombstone) else { continue }
            view.source = sources[transactionID]
            views[transactionID] = view
        }
        try addReadMarks(db, to: &views)
        return views
    }

    /// The view of an expense a change is about to touch. One the server
    /// deleted can take none: `invalid_state`, saying so, not "no expense".
    static func viewToChange(_ db: Connection, transactionID: String, ref: String) throws -> ExpenseView {
        guard let view = try view(db, transactionID: transactionID, keepingTombstone: true) else {
            throw StoreError(.notFound, "no expense matches '\(ref)'")
        }
        if view.state == .deleted { throw StoreError(.invalidState, "\(transactionID) was deleted on the server; there is nothing left to change") }
        return view
    }

    /// Resolves a transaction id, a create's client UUID, or a unique prefix
    /// of either, to a transaction id, among the expenses of `scope`: one
    /// of another account is not found, as if it did not exist.
    static func resolve(_ db: Connection, ref: String, in scope: AccountScope) throws -> String {
        // Ids are ASCII below 0x7F, so [ref, ref + DEL) holds exactly the
        // strings that start with ref, and each branch can use an index.
        let low = SQLValue.text(ref), high = SQLValue.text(ref + "\u{7F}")
        let matches = try db.query("""
            SELECT transaction_id FROM jobs WHERE transaction_id >= ?1 AND transaction_id < ?2 AND \(inScope(3))
            UNION SELECT transaction_id FROM jobs WHERE kind = 'create' AND uuid >= ?1 AND uuid < ?2 AND \(inScope(3))
            UNION SELECT transaction_id FROM expenses WHERE transaction_id >= ?1 AND transaction_id < ?2 AND \(inScope(3))
            UNION SELECT transaction_id FROM expenses WHERE client_id >= ?1 AND client_id < ?2 AND \(inScope(3))
            LIMIT 2
            """, [low, high, scope.sqlValue]) { $0.string(0) }
        if matches.count > 1 { throw StoreError(.ambiguous, "'\(ref)' matches more than one expense; give more characters") }
        guard let match = matches.first else { throw StoreError(.notFound, "no expense matches '\(ref)'") }
        return match
    }

    /// Puts an expense's jobs that need attention (or are backing off) back
    /// in the queue with fresh budgets, to be sent now; not those that can
    /// never apply (``AttentionHint/canRetry(errorClass:)``), which wait
    /// for `discard`.
    public func retry(ref: String, in scope: AccountScope = .all) async throws -> ExpenseView {
        try await write { db, watched in
            let transactionID = try Store.resolve(db, ref: ref, in: scope)
            let states = try StateChanges(db, watched: watched, [transactionID])
            let pending = try db.scalarInt("SELECT count(*) FROM jobs WHERE transaction_id = ?", [.text(transactionID)]) ?? 0
            if pending == 0 { throw StoreError(.invalidState, "\(transactionID) has nothing pending to retry; it is synced") }
            let held = try db.query("SELECT seq, last_error_class FROM jobs WHERE transaction_id = ? AND state IN ('queued', 'needs_attention')",
                                    [.text(transactionID)]) { (seq: $0.int64(0), errorClass: $0.optionalString(1)) }
            if held.isEmpty { throw StoreError(.invalidState, "\(transactionID) is being sent right now") }
            let retryable = held.filter { AttentionHint.canRetry(errorClass: $0.errorClass) }
            if retryable.isEmpty {
                throw StoreError(.invalidState, AttentionHint.text(errorClass: held[0].errorClass, transactionID: transactionID))
            }
            for job in retryable {
                try db.execute("""
                    UPDATE jobs SET state = 'queued', attempts = 0, transient_attempts = 0, next_attempt_at = 0 WHERE seq = ?
                    """, [.integer(job.seq)])
            }
            guard let view = try Store.view(db, transactionID: transactionID) else {
                throw StoreError(.notFound, "no expense matches '\(ref)'")
            }
            return (view, try states.changes(db) { _, _ in "retry asked" })
        }
    }

    /// Removes all pending work of an expense, and its receipt files once
    /// that removal has committed. What the server already has stays.
    /// - Returns: the transaction id and how many jobs were removed.
    public func discard(ref: String, in scope: AccountScope = .all) async throws -> (transactionID: String, removed: Int) {
        let (transactionID, files, removed) = try await write(usingHeadroom: true) { db, watched in
            let transactionID = try Store.resolve(db, ref: ref, in: scope)
            let states = try StateChanges(db, watched: watched, [transactionID])
            let sending = try db.scalarInt("SELECT count(*) FROM jobs WHERE transaction_id = ? AND state = 'sending'", [.text(transactionID)]) ?? 0
            if sending > 0 { throw StoreError(.invalidState, "\(transactionID) is being sent right now; try again when the request finishes") }
            let files = try db.query("SELECT receipt_file FROM jobs WHERE transaction_id = ? AND receipt_file IS NOT NULL", [.text(transactionID)]) { $0.string(0) }
            try db.execute("DELETE FROM jobs WHERE transaction_id = ?", [.text(transactionID)])
            let removed = db.changes
            if removed == 0 { throw StoreError(.invalidState, "\(transactionID) has nothing pending to discard; it is synced") }
            // What is left is the server's last word (or nothing: `discarded`).
            return ((transactionID, files, removed), try states.changes(db, gone: "discarded") { _, _ in "pending work discarded" })
        }
        // After the commit: a crash before this leaves orphans, which the
        // next start-up sweeps; never a job whose receipt is gone.
        for file in files { try? receipts.remove(file) }
        return (transactionID, removed)
    }

    /// Counts per state and the oldest job's age, without scanning the outbox.
    /// `scope`: one account's queue (from its own counters), or everyone's.
    public func summary(in scope: AccountScope = .all) async throws -> QueueSummary {
        try await database.read { db in try Store.summary(db, scope: scope) }
    }

    /// The SQL expression for the next sequence number: never reused, even
    /// when the job that had the last one is gone.
    static let nextSeq = "(SELECT value + 1 FROM counters WHERE name = 'seq')"

    static func summary(_ db: Connection, scope: AccountScope) throws -> QueueSummary {
        var summary = QueueSummary()
        switch scope {
        case .all:
            for (state, n) in try db.query("SELECT name, value FROM counters WHERE name IN ('queued', 'sending', 'needs_attention')", [],
                                           { ($0.string(0), $0.int(1)) }) {
                summary.count(state: state, n)
            }
            summary.oldestJobMilliseconds = try db.scalarInt("SELECT created_at FROM jobs ORDER BY seq LIMIT 1")
        case .account(let account):
            let names = ["queued", "sending", "needs_attention"].map { SQLValue.text(accountCounter(account, $0)) }
            for (name, n) in try db.query("SELECT name, value FROM counters WHERE name IN (?, ?, ?)", names, { ($0.string(0), $0.int(1)) }) {
                summary.count(state: String(name.dropFirst(accountCounter(account, "").count)), n)
            }
            if summary.queued + summary.sending + summary.needsAttention > 0 {
                summary.oldestJobMilliseconds = try oldestJob(db, account: account)
            }
        }
        // Small: a row per receipt still to read (none once reading keeps up).
        summary.reading = Int(try db.scalarInt("SELECT count(*) FROM receipt_readings WHERE \(inScope(1))", [scope.sqlValue]) ?? 0)
        return summary
    }

    // MARK: Row decoding

    static func cachedExpenses(_ db: Connection, where condition: String, _ values: [SQLValue]) throws -> [CanonicalExpense] {
        try db.query("""
            SELECT transaction_id, client_id, merchant, amount, currency, date, category, comment, tax_tag,
                   receipt_url, assigned, version, created_at, updated_at, deleted, conflict, conflicts
            FROM expenses WHERE \(condition)
            """, values) { r in
            var expense = CanonicalExpense(
                transactionID: r.string(0), clientID: r.string(1),
                fields: ExpenseFields(merchant: r.optionalString(2), amount: r.optionalString(3), currency: r.optionalString(4),
                                      date: r.optionalString(5), category: r.optionalString(6), comment: r.optionalString(7),
                                      taxTag: r.optionalString(8)),
                receiptURL: r.optionalString(9), assigned: r.bool(10), version: r.int(11),
                createdAt: r.string(12), updatedAt: r.string(13), deleted: r.bool(14), conflict: r.bool(15))
            expense.conflicts = ConflictValues.decode(r.string(16))
            return expense
        }
    }

    static func pendingJobs(_ db: Connection, where condition: String, _ values: [SQLValue]) throws -> [(String, PendingJob)] {
        try db.query("""
            SELECT transaction_id, seq, uuid, kind, state, payload, attempts, transient_attempts,
                   last_error, last_error_class, next_attempt_at, created_at, sends
            FROM jobs WHERE \(condition) ORDER BY seq
            """, values) { r in
            let kind = JobKind(rawValue: r.string(3)) ?? .create
            let payload = JobPayload.decode(r.string(5))
            return (r.string(0), PendingJob(
                seq: r.int64(1), uuid: r.string(2), kind: kind, state: JobState(rawValue: r.string(4)) ?? .queued,
                fields: payload.fields, attempts: r.int(6), transientAttempts: r.int(7),
                lastError: r.optionalString(8), lastErrorClass: r.optionalString(9),
                nextAttemptMilliseconds: r.int64(10), createdMilliseconds: r.int64(11), sends: r.int(12)))
        }
    }
}
