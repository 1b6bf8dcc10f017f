import ExpenseCore
import SQLite

/// What `delete` did.
public struct Deletion: Sendable, Equatable {
    public let transactionID: String
    /// True when the expense never reached the server: its jobs were
    /// removed and nothing will be sent.
    public let droppedLocally: Bool
}

extension Store {
    /// Changes fields of an expense, synced or not (a cleared field becomes
    /// null), in one transaction that also coalesces the outbox: the change
    /// merges into the expense's create when that was never sent, else into
    /// its last queued edit when that was never sent, else it becomes a new
    /// edit based on the cached version. A job being (or once) sent is
    /// never rewritten.
    public func edit(ref: String, fields: ExpenseFields, now: Int64, in scope: AccountScope = .all) async throws -> ExpenseView {
        try await write { db, watched in
            let transactionID = try Store.resolve(db, ref: ref, in: scope)
            let states = try StateChanges(db, watched: watched, [transactionID])
            let view = try Store.viewToChange(db, transactionID: transactionID, ref: ref)
            try Store.checkEditable(view)
            try Store.queueEdit(db, view, fields: fields, now: now)
            return (try Store.view(db, transactionID: transactionID)!, try states.changes(db) { _, _ in Store.edited(fields) })
        }
    }

    /// "edited: merchant, amount", as `watch` says it.
    static func edited(_ fields: ExpenseFields) -> String {
        "edited: \(fields.changedNames.joined(separator: ", "))"
    }

    /// Refuses a change to an expense on its way out.
    static func checkEditable(_ view: ExpenseView) throws {
        if isBeingDeleted(view) { throw StoreError(.invalidState, "\(view.transactionID) is being deleted") }
    }

    /// Whether an expense is on its way out: deleting, or with a delete queued.
    static func isBeingDeleted(_ view: ExpenseView) -> Bool {
        view.state == .deleting || view.jobs.contains { $0.kind == .delete }
    }

    /// Folds a change of fields into the outbox, inside the caller's
    /// transaction, once it is normalized against the expense's fields and
    /// checked (``queueEdit(_:transactionID:change:version:now:)``).
    static func queueEdit(_ db: Connection, _ view: ExpenseView, fields: ExpenseFields, now: Int64) throws {
        // The result must be a valid expense (an amount against the
        // currency it ends with), and an amount given alone is written
        // with that currency's minor units.
        let change: ExpenseFields
        do {
            change = try Validation.normalizedEdit(fields, of: view.fields)
        } catch {
            throw FieldFailure(field: error.field, reason: error.reason)
        }
        try queueEdit(db, transactionID: view.transactionID, change: change, version: view.version, now: now)
    }

    /// Queues `change` (normalized and checked) of an expense whose cached
    /// version is `version`, coalescing as ``edit(ref:fields:now:in:)`` says,
    /// inside the caller's transaction.
    static func queueEdit(_ db: Connection, transactionID: String, change: ExpenseFields, version: Int?, now: Int64) throws {
        // A field set again is the setter's now, not a reading's (a reading marks its own after this).
        try Store.clearReadMarks(db, transactionID: transactionID, fields: change.changedNames)
        let jobs = try Store.rawJobs(db, transactionID: transactionID)
        if let create = jobs.first(where: { $0.kind == .create }), create.isUntouched {
            // A create sends no nulls: a field it clears is one it leaves out.
            try Store.rewrite(db, create, fields: create.fields.merging(change).values, baseVersion: nil)
        } else if let last = jobs.last(where: { $0.kind != .receipt }), last.kind == .edit, last.isUntouched {
            try Store.rewrite(db, last, fields: last.fields.merging(change), baseVersion: last.baseVersion)
        } else {
            // Before the create is applied, the expense it makes will have version 1.
            try Store.insertEdit(db, transactionID: transactionID, fields: change, baseVersion: version ?? 1, now: now)
        }
    }

    /// Deletes an expense. One that never reached the server loses its
    /// whole chain (create, edits, receipt job and file) and nothing is
    /// sent; otherwise queued edits and receipt uploads are dropped and one
    /// delete is queued.
    public func delete(ref: String, now: Int64, in scope: AccountScope = .all) async throws -> Deletion {
        let (result, files) = try await write(usingHeadroom: true) { db, watched -> ((Deletion, [String]), [ExpenseChange]) in
            let transactionID = try Store.resolve(db, ref: ref, in: scope)
            let states = try StateChanges(db, watched: watched, [transactionID])
            let view = try Store.viewToChange(db, transactionID: transactionID, ref: ref)
            let jobs = try Store.rawJobs(db, transactionID: transactionID)
            if let files = try Store.dropIfNeverSent(db, transactionID: transactionID, jobs: jobs, cached: view.version != nil) {
                return ((Deletion(transactionID: transactionID, droppedLocally: true), files), try states.changes(db) { _, _ in "never reached the server" })
            }
            if jobs.contains(where: { $0.kind == .delete }) {
                return ((Deletion(transactionID: transactionID, droppedLocally: false), []), [])
            }
            // Edits and uploads still waiting are moot once the expense goes.
            let moot = jobs.filter { ($0.kind == .edit || $0.kind == .receipt) && $0.state != .sending }
            for job in moot { try db.execute("DELETE FROM jobs WHERE seq = ?", [.integer(job.seq)]) }
            try db.execute("""
                INSERT INTO jobs (seq, uuid, kind, transaction_id, payload, created_at, account)
                VALUES (\(Store.nextSeq), ?1, 'delete', ?2, '{}', ?3, \(Store.accountOf(2)))
                """, [.text(ClientID.make(milliseconds: now)), .text(transactionID), .integer(now)])
            // A delete behind a job that needs attention leaves that state: say it is queued.
            return ((Deletion(transactionID: transactionID, droppedLocally: false), moot.compactMap(\.receiptFile)),
                    try states.changes(db) { _, to in to == "deleting" ? nil : "delete queued" })
        }
        for file in files { try? receipts.remove(file) }
        return result
    }

    /// Settles a conflict flagged by the server: sends, at the cached
    /// version, either the server's values (`takeMine: false`) or the ones
    /// this device sent, for every conflicted field.
    public func resolve(ref: String, takeMine: Bool, now: Int64, in scope: AccountScope = .all) async throws -> ExpenseView {
        try await write { db, watched in
            let transactionID = try Store.resolve(db, ref: ref, in: scope)
            let states = try StateChanges(db, watched: watched, [transactionID])
            guard let cached = try Store.cachedExpenses(db, where: "transaction_id = ?", [.text(transactionID)]).first,
                  cached.conflict, !cached.conflicts.isEmpty else {
                throw StoreError(.invalidState, "\(transactionID) has no conflict to resolve")
            }
            var fields = ExpenseFields()
            for (name, values) in cached.conflicts where ExpenseFields.names.contains(name) {
                // A side whose value is null asks for the field to be cleared.
                if let value = takeMine ? values.client : values.server { fields[name] = value } else { fields.clear(name) }
            }
            // Chosen by the person now, not a reading's any more (as an edit's fields are).
            try Store.clearReadMarks(db, transactionID: transactionID, fields: fields.changedNames)
            let jobs = try Store.rawJobs(db, transactionID: transactionID)
            if let last = jobs.last(where: { $0.kind != .receipt }), last.kind == .edit, last.isUntouched {
                // The user has decided: the waiting edit now applies at the current version.
                try Store.rewrite(db, last, fields: last.fields.merging(fields), baseVersion: cached.version)
            } else {
                try Store.insertEdit(db, transactionID: transactionID, fields: fields, baseVersion: cached.version, now: now)
            }
            let reason = "conflict resolved with \(takeMine ? "this device's" : "the server's") values"
            return (try Store.view(db, transactionID: transactionID)!, try states.changes(db) { _, _ in reason })
        }
    }

    /// Removes the whole chain (create, edits, receipt jobs) of an expense
    /// the server never saw: not in the cache, its create never sent.
    /// - Returns: the chain's receipt files, to remove once this commits;
    ///   nil when the server may have the expense.
    static func dropIfNeverSent(_ db: Connection, transactionID: String, jobs: [RawJob], cached: Bool) throws -> [String]? {
        guard !cached, jobs.contains(where: { $0.kind == .create && $0.isUntouched }) else { return nil }
        try db.execute("DELETE FROM jobs WHERE transaction_id = ?", [.text(transactionID)])
        return jobs.compactMap(\.receiptFile)
    }

    /// A job row with what coalescing needs.
    struct RawJob {
        let seq: Int64
        let kind: JobKind
        let state: JobState
        let sends: Int
        let fields: ExpenseFields
        let baseVersion: Int?
        let receiptFile: String?

        /// Queued and never handed to the network: safe to rewrite.
        var isUntouched: Bool { state == .queued && sends == 0 }
    }

    static func rawJobs(_ db: Connection, transactionID: String) throws -> [RawJob] {
        try db.query("SELECT seq, kind, state, sends, payload, receipt_file FROM jobs WHERE transaction_id = ? ORDER BY seq",
                     [.text(transactionID)]) { r in
            let payload = JobPayload.decode(r.string(4))
            return RawJob(seq: r.int64(0), kind: JobKind(rawValue: r.string(1)) ?? .create, state: JobState(rawValue: r.string(2)) ?? .queued,
                          sends: r.int(3), fields: payload.fields, baseVersion: payload.baseVersion, receiptFile: r.optionalString(5))
        }
    }

    static func rewrite(_ db: Connection, _ job: RawJob, fields: ExpenseFields, baseVersion: Int?) throws {
        let payload = try JobPayload.encode(fields: fields, baseVersion: baseVersion)
        try db.execute("UPDATE jobs SET payload = ? WHERE seq = ? AND state = 'queued' AND sends = 0", [.text(payload), .integer(job.seq)])
        guard db.changes == 1 else { throw StoreError(.invalidState, "the job changed while it was being edited; try again") }
    }

    static func insertEdit(_ db: Connection, transactionID: String, fields: ExpenseFields, baseVersion: Int, now: Int64) throws {
        let payload = try JobPayload.encode(fields: fields, baseVersion: baseVersion)
        try db.execute("""
            INSERT INTO jobs (seq, uuid, kind, transaction_id, payload, created_at, account)
            VALUES (\(Store.nextSeq), ?1, 'edit', ?2, ?3, ?4, \(Store.accountOf(2)))
            """, [.text(ClientID.make(milliseconds: now)), .text(transactionID), .text(payload), .integer(now)])
    }
}

/// An edit whose result would not be a valid expense.
public struct FieldFailure: Error, Sendable {
    public let field: String
    public let reason: String
}
