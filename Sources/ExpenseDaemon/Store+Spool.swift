import ExpenseCore
import Posix
import SQLite

/// A spool file taken as a job, as `spool_intake` remembers it until the
/// file's removal is durable: enough to recognize the very file after a crash.
struct SpoolIntakeRecord: Sendable, Equatable {
    let device: UInt64
    let inode: UInt64
    let size: Int64
    /// Last modification, in nanoseconds since the epoch.
    let modified: Int64
    let name: FileName

    init(device: UInt64, inode: UInt64, size: Int64, modified: Int64, name: FileName) {
        self.device = device
        self.inode = inode
        self.size = size
        self.modified = modified
        self.name = name
    }

    init(_ file: SpoolFile) {
        self.init(device: file.status.device, inode: file.status.inode, size: file.status.size,
                  modified: file.status.modifiedNanoseconds, name: file.name)
    }

    /// True when `status`, found under `name`, is this very file, unchanged.
    func matches(_ status: FileStatus, named name: FileName) -> Bool {
        status.device == device && status.inode == inode && status.size == size
            && status.modifiedNanoseconds == modified && name == self.name
    }
}

/// What queueing a spool drop did.
enum SpoolEnqueueResult: Sendable, Equatable {
    case queued(EnqueueResult)
    /// The file is a job already (its intake was interrupted after the
    /// commit): nothing was added; the file only needs removing.
    case alreadyQueued(clientID: String)
}

extension Store {
    /// Queues an expense made from spool files, and records those files in
    /// `spool_intake`, in one transaction: once it has committed, the files
    /// are a job, and a crash before their removal never makes a second one.
    ///
    /// When one of `files` is recorded already with the same size, mtime
    /// and name, it is a job already: nothing is added (and a staged
    /// receipt is removed).
    func enqueueSpoolCreate(fields: ExpenseFields, clientID: String, receipt: StagedReceipt?,
                            files: [SpoolIntakeRecord], now: Int64) async throws -> SpoolEnqueueResult {
        let transactionID = TransactionID.derive(from: clientID)
        let payload = try JobPayload.encode(fields: fields)
        let result: SpoolEnqueueResult
        do {
            result = try await database.write { db in
                for file in files {
                    let known = try db.queryFirst(
                        "SELECT client_id, size, modified, name FROM spool_intake WHERE device = ? AND inode = ?",
                        [.integer(Int64(bitPattern: file.device)), .integer(Int64(bitPattern: file.inode))]
                    ) { r in (r.string(0), r.int64(1), r.int64(2), r.blob(3) ?? []) }
                    // Not by name: a file renamed within the spool is still the file taken.
                    if let known, known.1 == file.size, known.2 == file.modified {
                        return .alreadyQueued(clientID: known.0)
                    }
                }
                try Store.insertCreate(db, clientID: clientID, transactionID: transactionID, payload: payload, receipt: receipt, now: now)
                for file in files {
                    // REPLACE: a row left for an inode since reused by this file is stale.
                    try db.execute("""
                        INSERT OR REPLACE INTO spool_intake (device, inode, size, modified, name, client_id, taken_at)
                        VALUES (?, ?, ?, ?, ?, ?, ?)
                        """, [.integer(Int64(bitPattern: file.device)), .integer(Int64(bitPattern: file.inode)),
                              .integer(file.size), .integer(file.modified), .blob(file.name.bytes), .text(clientID), .integer(now)])
                }
                return .queued(EnqueueResult(transactionID: transactionID, clientID: clientID, isNew: true, hasReceipt: receipt != nil))
            }
        } catch {
            if let receipt { try? receipts.remove(receipt.fileName) }
            throw error
        }
        if case .alreadyQueued = result, let receipt { try? receipts.remove(receipt.fileName) }
        return result
    }

    /// Spool files recorded as jobs whose removal may not have finished,
    /// with the client id of the expense each became. Blocking: for start-up.
    func spoolIntakeRecords() throws -> [(record: SpoolIntakeRecord, clientID: String)] {
        try database.sync { db in
            try db.query("SELECT device, inode, size, modified, name, client_id FROM spool_intake ORDER BY taken_at") { r in
                guard let name = FileName(bytes: r.blob(4) ?? []) else { return nil }
                let record = SpoolIntakeRecord(device: UInt64(bitPattern: r.int64(0)), inode: UInt64(bitPattern: r.int64(1)),
                                               size: r.int64(2), modified: r.int64(3), name: name)
                return (record: record, clientID: r.string(5))
            }.compactMap { $0 }
        }
    }

    /// Forgets spool files whose removal is durable.
    func forgetSpoolIntake(_ files: [SpoolIntakeRecord]) async throws {
        guard !files.isEmpty else { return }
        try await database.write { db in try Store.deleteIntake(db, files) }
    }

    /// Like ``forgetSpoolIntake(_:)``, blocking: for start-up.
    func forgetSpoolIntakeNow(_ files: [SpoolIntakeRecord]) throws {
        guard !files.isEmpty else { return }
        try database.sync { db in try db.transaction { try Store.deleteIntake(db, files) } }
    }

    private static func deleteIntake(_ db: Connection, _ files: [SpoolIntakeRecord]) throws {
        for file in files {
            try db.execute("DELETE FROM spool_intake WHERE device = ? AND inode = ?",
                           [.integer(Int64(bitPattern: file.device)), .integer(Int64(bitPattern: file.inode))])
        }
    }
}
