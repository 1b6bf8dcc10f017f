import ExpenseCore
import Posix
import SQLite

/// Where an expense came from, as the store records it (``ExpenseSource``
/// is its display form): written in the transaction that queues the
/// expense, so an expense never exists without it.
package enum SourceRecord: Sendable, Equatable {
    /// A spool drop: the receipt's name (or the sidecar's, alone), the
    /// sidecar's when a pair, and when it was dropped (ms).
    case spool(name: FileName, sidecar: FileName?, droppedMilliseconds: Int64)
    /// The receipt path given to `expensectl add`.
    case file(path: String)

    /// As `show` and the log show it: as read back from its row.
    package var shown: ExpenseSource {
        let row = columns
        return Store.source(kind: row.kind, name: row.name, sidecar: row.sidecar, dropped: row.dropped)
    }

    /// Its columns in `expense_sources`.
    var columns: (kind: String, name: [UInt8], sidecar: [UInt8]?, dropped: Int64?) {
        switch self {
        case .spool(let name, let sidecar, let dropped): ("spool", name.bytes, sidecar?.bytes, dropped)
        case .file(let path): ("file", Array(path.utf8), nil, nil)
        }
    }

    /// The stem a late sidecar is matched by: set only for a receipt taken
    /// without a sidecar.
    var stem: [UInt8]? {
        guard case .spool(let name, nil, _) = self, name.lowercasedExtension != "json" else { return nil }
        return name.stem
    }
}

extension Store {
    static func insertSource(_ db: Connection, transactionID: String, _ source: SourceRecord, account: String, now: Int64) throws {
        let row = source.columns
        try db.execute("""
            INSERT OR IGNORE INTO expense_sources (transaction_id, kind, name, sidecar, dropped_at, stem, account, taken_at)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?)
            """, [.text(transactionID), .text(row.kind), .blob(row.name), row.sidecar.map(SQLValue.blob) ?? .null,
                  row.dropped.map(SQLValue.integer) ?? .null, source.stem.map(SQLValue.blob) ?? .null, .text(account), .integer(now)])
    }

    /// The sources of the expenses `condition` selects in `expense_sources`, by transaction id.
    static func sources(_ db: Connection, where condition: String, _ values: [SQLValue]) throws -> [String: ExpenseSource] {
        let rows = try db.query("SELECT transaction_id, kind, name, sidecar, dropped_at FROM expense_sources WHERE \(condition)", values) { r in
            (r.string(0), Self.source(kind: r.string(1), name: r.blob(2) ?? [], sidecar: r.blob(3), dropped: r.optionalInt64(4)))
        }
        return Dictionary(rows, uniquingKeysWith: { first, _ in first })
    }

    static func source(kind: String, name: [UInt8], sidecar: [UInt8]?, dropped: Int64?) -> ExpenseSource {
        guard kind == "spool" else {
            return ExpenseSource(kind: .file, name: String(decoding: name, as: UTF8.self).escapingControlCharacters(backslashes: true))
        }
        // Names are whatever bytes a writer chose: shown escaped.
        func shown(_ bytes: [UInt8]) -> String { FileName(bytes: bytes)?.displayName ?? "" }
        return ExpenseSource(kind: .spool, name: shown(name), sidecar: sidecar.map(shown), droppedMilliseconds: dropped)
    }

    /// The receipt taken from the spool alone, at `since` or later, whose
    /// stem is `stem`, of `account`, and still an expense that can be
    /// edited: the newest, when several, with its expense's view and the
    /// receipt's name. Nil when there is none.
    static func lateSidecarTarget(_ db: Connection, stem: [UInt8], account: String, since: Int64) throws
        -> (view: ExpenseView, receiptName: FileName)? {
        let candidates = try db.query("""
            SELECT transaction_id, name FROM expense_sources
            WHERE stem = ? AND taken_at >= ? AND account = ? ORDER BY taken_at DESC
            """, [.blob(stem), .integer(since), .text(account)]) { r in (r.string(0), r.blob(1) ?? []) }
        for (transactionID, name) in candidates {
            guard let view = try Store.view(db, transactionID: transactionID), !Store.isBeingDeleted(view),
                  let receiptName = FileName(bytes: name) else { continue }
            return (view, receiptName)
        }
        return nil
    }
}

/// What a late sidecar did (``Store/enqueueLateSidecar(fields:sidecarName:account:since:files:now:)``).
package enum LateSidecarOutcome: Sendable, Equatable {
    /// No receipt of its name was taken alone within the window: it is an expense of its own.
    case noReceipt
    /// Its fields filled the fields of the receipt's expense that were
    /// still empty or only read from the receipt (`filled`); `kept` are those the expense had already,
    /// which keep their values. The files are recorded in `spool_intake`.
    case edited(transactionID: String, receiptName: FileName, filled: [String], kept: [String])
    /// Nothing changed and nothing was recorded: it is rejected, for `reason`.
    case refused(transactionID: String, reason: String)
}

extension Store {
    /// Makes a sidecar that came after its receipt (`since`: the earliest
    /// time a receipt may have been taken) an edit of the receipt's
    /// expense, and records its files in `spool_intake`, in one
    /// transaction: once it has committed, the sidecar is that edit, and a
    /// crash before its removal neither loses its fields nor makes it an
    /// expense of its own. It fills only the fields still empty, or filled
    /// by a reading of the receipt (a suggestion): a value
    /// the expense has (set by a person since, or by the server) is never
    /// overwritten by a file that came late.
    package func enqueueLateSidecar(fields: ExpenseFields, sidecarName: FileName, account: String, since: Int64,
                                    files: [SpoolIntakeRecord], now: Int64) async throws -> LateSidecarOutcome {
        try await write { db, watched in
            guard let target = try Store.lateSidecarTarget(db, stem: sidecarName.stem, account: account, since: since) else { return (.noReceipt, []) }
            let view = target.view, transactionID = target.view.transactionID
            let states = try StateChanges(db, watched: watched, [transactionID])
            let given = ExpenseFields.names.filter { fields[$0] != nil }
            // A value a reading filled is a suggestion: the sidecar's replaces it.
            let filled = given.filter { view.fields[$0] == nil || view.read[$0] != nil }
            let kept = given.filter { view.fields[$0] != nil && view.read[$0] == nil }
            guard !filled.isEmpty else {
                return (.refused(transactionID: transactionID, reason: given.isEmpty
                    ? "is a late sidecar of '\(target.receiptName.displayName)' (\(transactionID)) that sets no field"
                    : "is a late sidecar of '\(target.receiptName.displayName)' (\(transactionID)), whose fields it sets are all set already (\(kept.joined(separator: ", "))); change them with expensectl edit"), [])
            }
            var change = ExpenseFields()
            for name in filled { change[name] = fields[name] }
            let normalized: ExpenseFields
            do {
                normalized = try Validation.normalizedEdit(change, of: view.fields)
            } catch let error as FieldError {
                return (.refused(transactionID: transactionID,
                                 reason: "is a late sidecar of '\(target.receiptName.displayName)' (\(transactionID)) that would make its expense invalid: \(error.description)"), [])
            }
            try Store.queueEdit(db, transactionID: transactionID, change: normalized, version: view.version, now: now)
            // Its receipt has a sidecar now: another late one is an expense of its own.
            try db.execute("UPDATE expense_sources SET sidecar = ?, stem = NULL WHERE transaction_id = ?",
                           [.blob(sidecarName.bytes), .text(transactionID)])
            try Store.insertIntake(db, files, clientID: view.clientID, now: now)
            let reason = "late sidecar '\(sidecarName.displayName)': " + Store.edited(normalized)
            return (.edited(transactionID: transactionID, receiptName: target.receiptName, filled: filled, kept: kept),
                    try states.changes(db) { _, _ in reason })
        }
    }
}
