import ExpenseCore
import SQLite

/// An upload whose legible copy is still to be made (docs/receipts.md).
public struct PendingCopy: Sendable, Equatable {
    public let jobUUID: String
    public let transactionID: String
    public let account: String
    /// The bytes as received, in the receipts directory.
    public let fileName: String
    public let kind: ReceiptKind
    public let size: Int64
}

/// What was made of a receipt, to record with ``Store/recordCopy(_:_:now:)``.
public enum MadeCopy: Sendable, Equatable {
    /// It goes as it is.
    case original
    /// A copy, staged durably in the receipts directory.
    case copy(fileName: String, kind: ReceiptKind, size: Int64, sha256: [UInt8])
}

extension Store {
    /// The uploads waiting for their copy, from the list of copies to make
    /// (schema 12): asked after every add, it reads no job but theirs
    /// (`CROSS JOIN` keeps SQLite to that order: left to itself it walks
    /// every job in `seq` order to spare a sort of the few).
    static let pendingCopiesQuery = """
        SELECT j.uuid, j.transaction_id, j.account, j.receipt_file, j.receipt_type, j.receipt_size
        FROM copies_to_make c CROSS JOIN jobs j ON j.transaction_id = c.transaction_id AND j.uuid = c.job_uuid AND j.kind = 'receipt'
        WHERE j.state = 'queued' AND j.receipt_file IS NOT NULL
          AND NOT EXISTS (SELECT 1 FROM receipt_copies WHERE job_uuid = j.uuid)
        ORDER BY j.seq LIMIT ?
        """

    /// Uploads queued whose copy is not made yet, oldest first.
    public func pendingCopies(limit: Int = 16) async throws -> [PendingCopy] {
        try await database.read { db in
            try db.query(Store.pendingCopiesQuery, [.integer(Int64(limit))]) {
                PendingCopy(jobUUID: $0.string(0), transactionID: $0.string(1), account: $0.string(2), fileName: $0.string(3),
                            kind: ReceiptKind(rawValue: $0.string(4)) ?? .jpeg, size: $0.optionalInt64(5) ?? 0)
            }
        }
    }

    /// Records what was made of `pending`'s receipt, in one commit; the
    /// upload may be sent from then on, and a copy's original is kept.
    /// - Returns: false when the upload is gone or taken care of meanwhile
    ///   (discarded, superseded, copied by another pass): a copy made for
    ///   it is then the caller's to remove.
    @discardableResult
    public func recordCopy(_ pending: PendingCopy, _ made: MadeCopy, now: Int64) async throws -> Bool {
        try await write(usingHeadroom: true) { db, _ in
            let waiting = try db.queryFirst("""
                SELECT 1 FROM jobs WHERE uuid = ? AND state = 'queued'
                  AND NOT EXISTS (SELECT 1 FROM receipt_copies WHERE job_uuid = jobs.uuid)
                """, [.text(pending.jobUUID)]) { _ in true } ?? false
            guard waiting else { return (false, []) }
            switch made {
            case .original:
                try db.execute("INSERT INTO receipt_copies (job_uuid, made_at) VALUES (?, ?)", [.text(pending.jobUUID), .integer(now)])
            case .copy(let fileName, let kind, let size, let sha256):
                try db.execute("INSERT INTO receipt_copies (job_uuid, file, kind, size, sha256, made_at) VALUES (?, ?, ?, ?, ?, ?)",
                               [.text(pending.jobUUID), .text(fileName), .text(kind.rawValue), .integer(size), .blob(sha256), .integer(now)])
                try db.execute("""
                    INSERT INTO receipt_originals (transaction_id, job_uuid, file, kind, size, sha256, taken_at)
                    VALUES (?, ?, ?, ?, ?, (SELECT sha256 FROM receipt_digests WHERE job_uuid = ?2), ?)
                    """, [.text(pending.transactionID), .text(pending.jobUUID), .text(pending.fileName), .text(pending.kind.rawValue),
                          .integer(pending.size), .integer(now)])
            }
            return (true, [])
        }
    }

    /// No copy can be made of `pending`'s receipt: the upload needs
    /// attention with `reason` (`retry` tries again, `discard` drops it;
    /// the bytes as received stay until then).
    public func copyFailed(_ pending: PendingCopy, reason: String) async throws {
        try await write(durability: .deferred, usingHeadroom: true) { db, watched in
            let states = try StateChanges(db, watched: watched, [pending.transactionID])
            try db.execute("""
                UPDATE jobs SET state = 'needs_attention', last_error = ?, last_error_class = 'local' WHERE uuid = ? AND state = 'queued'
                """, [.text("receipt cannot be read: \(reason)"), .text(pending.jobUUID)])
            return ((), try states.changes(db) { _, _ in "receipt cannot be read" })
        }
    }

    /// The bytes as received of the receipt of `transactionID` that went
    /// as a copy, newest first.
    public func originals(of transactionID: String) async throws -> [KeptOriginal] {
        try await database.read { db in
            try db.query("""
                SELECT file, kind, sha256, size, taken_at, removed_at FROM receipt_originals WHERE transaction_id = ?
                ORDER BY taken_at DESC, rowid DESC
                """, [.text(transactionID)]) {
                KeptOriginal(fileName: $0.string(0), kind: ReceiptKind(rawValue: $0.string(1)) ?? .jpeg, sha256: $0.blob(2),
                             size: $0.int64(3), receivedAt: $0.int64(4), removedAt: $0.optionalInt64(5))
            }
        }
    }

    /// An original (`o`) received at or before `?` whose upload is gone: kept no longer.
    static let originalDue = "o.removed_at IS NULL AND o.taken_at <= ? AND NOT EXISTS (SELECT 1 FROM jobs j WHERE j.uuid = o.job_uuid)"

    /// Removes the originals received at or before `cutoff` (wall-clock
    /// milliseconds) whose copy was sent, or whose upload is gone: their
    /// rows stay, marked removed, and their files go after the commit.
    /// An original whose upload still waits is kept whatever its age.
    /// - Returns: each original removed, with its expense and account.
    public func removeOriginals(receivedBy cutoff: Int64, now: Int64) async throws -> [RemovedOriginal] {
        // Asked after every drain that changed something: a read, and a
        // durable commit only when an original is due.
        let anyDue = try await database.read { db in
            try db.queryFirst("SELECT 1 FROM receipt_originals o WHERE \(Store.originalDue) LIMIT 1", [.integer(cutoff)]) { _ in true } ?? false
        }
        guard anyDue else { return [] }
        let removed: [RemovedOriginal] = try await write(usingHeadroom: true) { db, _ in
            let due = try db.query("""
                SELECT o.job_uuid, o.transaction_id, o.file,
                       coalesce((SELECT account FROM expenses e WHERE e.transaction_id = o.transaction_id), '')
                FROM receipt_originals o WHERE \(Store.originalDue)
                """, [.integer(cutoff)]) {
                (uuid: $0.string(0), original: RemovedOriginal(transactionID: $0.string(1), account: $0.string(3), fileName: $0.string(2)))
            }
            for row in due {
                try db.execute("UPDATE receipt_originals SET removed_at = ? WHERE job_uuid = ?", [.integer(now), .text(row.uuid)])
            }
            return (due.map(\.original), [])
        }
        for original in removed { try? receipts.remove(original.fileName) }
        return removed
    }
}

/// An original kept of a receipt sent as a copy (``Store/originals(of:)``).
public struct KeptOriginal: Sendable, Equatable {
    public let fileName: String
    public let kind: ReceiptKind
    public let sha256: [UInt8]?
    public let size: Int64
    /// When its copy was made, just after it was received (wall-clock
    /// milliseconds); the retention counts from then.
    public let receivedAt: Int64
    /// When it was removed as the retention says (wall-clock
    /// milliseconds); nil while it is kept.
    public let removedAt: Int64?
}

/// An original that ``Store/removeOriginals(receivedBy:now:)`` removed.
public struct RemovedOriginal: Sendable, Equatable {
    public let transactionID: String
    /// Empty when no expense of that id is cached.
    public let account: String
    public let fileName: String
}
