import ExpenseCore
import Posix
import SQLite

/// A spool file taken as a job, as `spool_intake` remembers it until the
/// file's removal is durable: what start-up needs to finish that removal
/// after a crash, and to prove which file in the spool, if any, is the
/// one taken (docs/spool.md, crash safety).
package struct SpoolIntakeRecord: Sendable, Equatable {
    package let name: FileName
    /// The private name the file is renamed to before it is removed:
    /// chosen before the commit, and unique to the intake (it is made of
    /// the job's client id), so only this intake's rename can make it.
    package let takenName: FileName
    package let device: UInt64
    package let inode: UInt64
    package let size: Int64
    /// Last modification, in nanoseconds since the epoch.
    package let modified: Int64
    /// The inode's last change (`st_ctim`) in nanoseconds: unchanged
    /// while the file is, and never settable by a writer. Nil in a row an
    /// older version wrote.
    package let changed: Int64?
    /// SHA-256 of the bytes the daemon read (the receipt it staged, the
    /// sidecar it parsed). Nil in a row an older version wrote.
    package let digest: [UInt8]?

    package init(name: FileName, takenName: FileName, device: UInt64, inode: UInt64, size: Int64, modified: Int64,
         changed: Int64?, digest: [UInt8]?) {
        self.name = name
        self.takenName = takenName
        self.device = device
        self.inode = inode
        self.size = size
        self.modified = modified
        self.changed = changed
        self.digest = digest
    }

    /// The same record for the file now under `name` (renamed by its writer).
    package func renamed(_ name: FileName) -> SpoolIntakeRecord {
        SpoolIntakeRecord(name: name, takenName: takenName, device: device, inode: inode, size: size, modified: modified,
                          changed: changed, digest: digest)
    }

    /// False for a row of schema 1, which has no digest nor change time:
    /// nothing in it can prove that a file in the spool is the one taken.
    package var isProof: Bool { changed != nil && digest != nil }

    /// True when `status` shows the file untouched since it was taken:
    /// the same inode, size and change time (a write, a rename, a chmod
    /// all set the change time). A new file that got the inode back shows
    /// a change time of its own; the digest settles the rest.
    package func isUntouched(_ status: FileStatus) -> Bool {
        guard let changed else { return false }
        return status.device == device && status.inode == inode && status.size == size
            && status.changedNanoseconds == changed
    }
}

extension Store {
    /// Queues an expense made from spool files, and records those files in
    /// `spool_intake`, in one transaction: once it has committed, the files
    /// are a job, and a crash before their removal never makes a second one.
    /// `account` is the files' owner's; `source` is kept with the expense.
    /// - Throws: ``OutboxRefusal`` when it does not fit the outbox's limits
    ///   or the file system was full (the files are then the spool's still).
    package func enqueueSpoolCreate(fields: ExpenseFields, clientID: String, receipt: StagedReceipt?, files: [SpoolIntakeRecord],
                                    source: SourceRecord, now: Int64, account: String = AccountName.defaultName) async throws -> EnqueueResult {
        let transactionID = TransactionID.derive(from: clientID)
        let payload = try JobPayload.encode(fields: fields)
        let held: String?
        do {
            held = try await write { [room] db, watched in
                try Store.admit(db, .add(receiptBytes: receipt.map { Int64($0.size) }, copied: true), room: room)
                let held = try Store.insertCreate(db, clientID: clientID, transactionID: transactionID, payload: payload, receipt: receipt,
                                                  now: now, account: account, reading: self.readsReceipts ? fields : nil)
                try Store.insertSource(db, transactionID: transactionID, source, account: account, now: now)
                try Store.insertIntake(db, files, clientID: clientID, now: now)
                let change = ExpenseChange(account: account, transactionID: transactionID, from: nil, to: held == nil ? "queued" : "needs_attention",
                                           reason: "from the spool" + (held.map { "; \($0)" } ?? ""))
                return (held, watched ? [change] : [])
            }
        } catch {
            if let receipt { try? receipts.remove(receipt.fileName) }
            throw refusal(forFailure: error) ?? error
        }
        return EnqueueResult(transactionID: transactionID, clientID: clientID, isNew: true, hasReceipt: receipt != nil,
                             state: held == nil ? .queued : .needsAttention, held: held)
    }

    /// Records taken spool files in `spool_intake`, inside the caller's transaction.
    static func insertIntake(_ db: Connection, _ files: [SpoolIntakeRecord], clientID: String, now: Int64) throws {
        for file in files {
            try db.execute("""
                INSERT INTO spool_intake (taken_name, name, device, inode, size, modified, changed, digest, client_id, taken_at)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                """, [.blob(file.takenName.bytes), .blob(file.name.bytes), .integer(Int64(bitPattern: file.device)),
                      .integer(Int64(bitPattern: file.inode)), .integer(file.size), .integer(file.modified),
                      file.changed.map(SQLValue.integer) ?? .null, file.digest.map(SQLValue.blob) ?? .null,
                      .text(clientID), .integer(now)])
        }
    }

    /// Spool files recorded as jobs whose removal may not have finished,
    /// with the client id of the expense each became. Blocking: for start-up.
    package func spoolIntakeRecords() throws -> [(record: SpoolIntakeRecord, clientID: String)] {
        try database.sync { db in
            try db.query("""
                SELECT taken_name, name, device, inode, size, modified, changed, digest, client_id
                FROM spool_intake ORDER BY taken_at
                """) { r in
                guard let taken = FileName(bytes: r.blob(0) ?? []), let name = FileName(bytes: r.blob(1) ?? []) else { return nil }
                let record = SpoolIntakeRecord(name: name, takenName: taken, device: UInt64(bitPattern: r.int64(2)),
                                               inode: UInt64(bitPattern: r.int64(3)), size: r.int64(4), modified: r.int64(5),
                                               changed: r.optionalInt64(6), digest: r.blob(7))
                return (record: record, clientID: r.string(8))
            }.compactMap { $0 }
        }
    }

    /// Forgets spool files whose removal is durable.
    package func forgetSpoolIntake(_ files: [SpoolIntakeRecord]) async throws {
        guard !files.isEmpty else { return }
        try await database.write { db in try Store.deleteIntake(db, files) }
    }

    /// Like ``forgetSpoolIntake(_:)``, blocking: for start-up.
    package func forgetSpoolIntakeNow(_ files: [SpoolIntakeRecord]) throws {
        guard !files.isEmpty else { return }
        try database.sync { db in try db.transaction { try Store.deleteIntake(db, files) } }
    }

    private static func deleteIntake(_ db: Connection, _ files: [SpoolIntakeRecord]) throws {
        for file in files {
            try db.execute("DELETE FROM spool_intake WHERE taken_name = ? AND device = ?",
                           [.blob(file.takenName.bytes), .integer(Int64(bitPattern: file.device))])
        }
    }
}
