import ExpenseCore
import ReceiptReading
import SQLite

/// A receipt whose text is still to be read (docs/receipts.md, "Reading").
public struct PendingReading: Sendable, Equatable {
    /// The upload whose bytes as received are read.
    public let jobUUID: String
    public let transactionID: String
    public let account: String
    /// In the receipts directory.
    public let fileName: String
    public let kind: ReceiptKind
    /// When it was queued (wall-clock milliseconds): the receipt's latest date.
    public let queuedAt: Int64
}

/// One field a reading suggested, and what became of it.
public struct ReadField: Sendable, Equatable {
    public let field: String
    public let value: String
    public let confidence: Double
    /// The parser's rule, in its own words (never the receipt's text).
    public let note: String
    /// True when the expense took it; false when the expense has a value
    /// a person typed or a sidecar gave, which is kept.
    public let applied: Bool

    public init(field: String, value: String, confidence: Double, note: String, applied: Bool) {
        self.field = field
        self.value = value
        self.confidence = confidence
        self.note = note
        self.applied = applied
    }
}

/// What applying a reading did to its expense.
public struct ReadingOutcome: Sendable, Equatable {
    public let transactionID: String
    public let account: String
    /// Every field suggested, in the expense's field order.
    public let fields: [ReadField]
    /// False when the expense is gone or on its way out: nothing applied.
    public let isApplied: Bool

    public var filled: [ReadField] { fields.filter(\.applied) }
    public var kept: [ReadField] { fields.filter { !$0.applied } }
}

extension Store {
    /// Records a reading to do of the upload `jobUUID`, inside the
    /// caller's transaction (the one that queues the upload).
    static func insertReading(_ db: Connection, jobUUID: String, transactionID: String, account: String, receiptOnly: Bool, now: Int64) throws {
        try db.execute("""
            INSERT OR REPLACE INTO receipt_readings (job_uuid, transaction_id, account, receipt_only, queued_at) VALUES (?, ?, ?, ?, ?)
            """, [.text(jobUUID), .text(transactionID), .text(account), .bool(receiptOnly), .integer(now)])
    }

    /// Readings to do, oldest first: those a crash interrupted come first.
    public func pendingReadings(limit: Int = 16) async throws -> [PendingReading] {
        try await database.read { db in
            // jobs is found by transaction id (its index); uuid alone has none.
            try db.query("""
                SELECT r.job_uuid, r.transaction_id, r.account, j.receipt_file, j.receipt_type, r.queued_at
                FROM receipt_readings r JOIN jobs j ON j.transaction_id = r.transaction_id AND j.uuid = r.job_uuid AND j.kind = 'receipt'
                WHERE j.receipt_file IS NOT NULL
                ORDER BY r.queued_at, r.rowid LIMIT ?
                """, [.integer(Int64(limit))]) {
                PendingReading(jobUUID: $0.string(0), transactionID: $0.string(1), account: $0.string(2), fileName: $0.string(3),
                               kind: ReceiptKind(rawValue: $0.string(4)) ?? .jpeg, queuedAt: $0.int64(5))
            }
        }
    }

    /// The reading still to do of `transactionID`'s receipt, for `show`:
    /// when it was queued, and whether the expense is receipt-only (its
    /// create waits for the reading, at most `reading_wait`). Nil once read.
    public func readingToDo(of transactionID: String) async throws -> (queuedMilliseconds: Int64, receiptOnly: Bool)? {
        try await database.read { db in
            try db.queryFirst("SELECT queued_at, receipt_only FROM receipt_readings WHERE transaction_id = ? ORDER BY queued_at DESC LIMIT 1",
                              [.text(transactionID)]) { ($0.int64(0), $0.int(1) != 0) }
        }
    }

    /// How many readings are still to do.
    public func readingsToDo() async throws -> Int {
        try await database.read { db in Int(try db.scalarInt("SELECT count(*) FROM receipt_readings") ?? 0) }
    }

    /// The reading of `pending` ended without suggestions (nothing read, a
    /// refusal, the deadline): it is done, and what waited for it goes.
    public func readingEnded(_ pending: PendingReading) async throws {
        try await write(durability: .deferred) { db, _ in
            try db.execute("DELETE FROM receipt_readings WHERE job_uuid = ?", [.text(pending.jobUUID)])
            return ((), [])
        }
    }

    /// Readings are off (`reading = off`): those a previous run left are
    /// dropped, so that nothing waits for them.
    /// - Returns: how many were dropped.
    public func dropReadings() async throws -> Int {
        try await write(durability: .deferred) { db, _ in
            try db.execute("DELETE FROM receipt_readings")
            return (db.changes, [])
        }
    }

    /// Applies what a reading suggested to its expense, in one transaction
    /// that decides on the fields as they are now: it fills only the fields
    /// the expense does not have, or has as an earlier reading left them
    /// (marked read and unchanged since), as an edit through the outbox
    /// (``queueEdit(_:_:fields:now:)``: merged into a create still queued),
    /// and marks each field it filled with its confidence. A field a person
    /// typed or a sidecar gave, even after the reading began, is kept.
    /// - Parameters:
    ///   - jobUUID: the reading's upload, whose reading is done with this
    ///     commit; nil for a reading asked for (`expensectl read`).
    /// - Returns: nil when the reading is not to do any more (its upload
    ///   gone meanwhile: discarded, replaced, deleted).
    public func applyReading(transactionID: String, jobUUID: String?, _ suggestions: ReceiptSuggestions, now: Int64) async throws -> ReadingOutcome? {
        try await write { db, watched -> (ReadingOutcome?, [ExpenseChange]) in
            if let jobUUID {
                guard try db.scalarInt("SELECT 1 FROM receipt_readings WHERE job_uuid = ?", [.text(jobUUID)]) != nil else { return (nil, []) }
                try db.execute("DELETE FROM receipt_readings WHERE job_uuid = ?", [.text(jobUUID)])
            }
            let account = try Store.account(db, transactionID: transactionID)
            let suggested = suggestions.byField
            func unapplied() -> [ReadField] {
                suggested.map { ReadField(field: $0.field, value: $0.suggestion.value, confidence: $0.suggestion.confidence,
                                          note: $0.suggestion.note, applied: false) }
            }
            guard let view = try Store.view(db, transactionID: transactionID), view.state != .deleted, !Store.isBeingDeleted(view) else {
                return (ReadingOutcome(transactionID: transactionID, account: account, fields: unapplied(), isApplied: false), [])
            }
            let states = try StateChanges(db, watched: watched, [transactionID])
            // A field an earlier reading filled, unchanged since, may be read again.
            var current = view.fields
            for field in view.read.keys { current[field] = nil }
            var (change, names) = suggestions.filling(current)
            // What an earlier reading wrote and this one reads the same needs no edit; its mark is renewed.
            for name in names where change[name] == view.fields[name] { change[name] = nil }
            if !change.isEmpty {
                do {
                    try Store.queueEdit(db, view, fields: change, now: now)
                } catch is FieldFailure {
                    // The parser's values together would not make a valid expense: none is applied.
                    names = []
                }
            }
            let after = try Store.view(db, transactionID: transactionID)?.fields ?? view.fields
            var fields: [ReadField] = []
            for (field, suggestion) in suggested {
                let applied = names.contains(field)
                let value = applied ? (after[field] ?? suggestion.value) : suggestion.value
                if applied {
                    try db.execute("""
                        INSERT OR REPLACE INTO read_marks (transaction_id, field, value, confidence, read_at) VALUES (?, ?, ?, ?, ?)
                        """, [.text(transactionID), .text(field), .text(value), .real(suggestion.confidence), .integer(now)])
                }
                fields.append(ReadField(field: field, value: value, confidence: suggestion.confidence, note: suggestion.note, applied: applied))
            }
            let filled = fields.filter(\.applied).map(\.field)
            let reason = filled.isEmpty ? nil : "read from the receipt: \(filled.joined(separator: ", "))"
            return (ReadingOutcome(transactionID: transactionID, account: account, fields: fields, isApplied: true),
                    try states.changes(db) { _, _ in reason })
        }
    }

    /// Removes the marks of `fields` of an expense: a value set by a person,
    /// a sidecar or a resolve is no reading's any more. Inside the caller's transaction.
    static func clearReadMarks(_ db: Connection, transactionID: String, fields: [String]) throws {
        guard !fields.isEmpty else { return }
        try db.execute("DELETE FROM read_marks WHERE transaction_id = ? AND field IN (SELECT value FROM json_each(?))",
                       [.text(transactionID), Store.textList(fields)])
    }

    /// The marks of `views`' expenses, each kept only while the field still
    /// has the value the reading wrote (the server's or another device's
    /// change ends it as an edit here does).
    static func addReadMarks(_ db: Connection, to views: inout [String: ExpenseView]) throws {
        guard !views.isEmpty else { return }
        let ids = Store.textList(Array(views.keys))
        let marks = try db.query("""
            SELECT transaction_id, field, value, confidence FROM read_marks WHERE transaction_id IN (SELECT value FROM json_each(?))
            """, [ids]) { (id: $0.string(0), field: $0.string(1), value: $0.string(2), confidence: $0.double(3)) }
        for mark in marks where views[mark.id]?.fields[mark.field] == mark.value {
            views[mark.id]?.read[mark.field] = mark.confidence
        }
    }

    /// The merchants an account's expenses have, as spelled there, for the
    /// parser to recognize on a receipt: the most used first, at most `limit`.
    public func knownMerchants(of account: String, limit: Int = 500) async throws -> [String] {
        try await readListing { db in
            try db.query("""
                SELECT merchant FROM listing WHERE account = ? AND merchant IS NOT NULL
                GROUP BY merchant ORDER BY count(*) DESC, merchant LIMIT ?
                """, [.text(account), .integer(Int64(limit))]) { $0.string(0) }
        }
    }
}
