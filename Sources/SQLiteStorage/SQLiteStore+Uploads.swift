import ExpenseCore
import Posix
import ServerStorage
import SQLite

extension SQLiteStore {
    public func openUpload(_ record: UploadRecord) throws -> UploadRecord {
        try write { writer in
            try writer.db.execute("""
                INSERT INTO uploads (\(UploadRecord.columns)) VALUES (?, ?, ?, ?, ?, ?, ?, 0, ?)
                ON CONFLICT (user_id, idem_key) DO NOTHING
                """, [.text(record.id), .integer(record.user), .text(record.key), .text(record.transactionID),
                      .text(record.contentType), .integer(record.length), .text(record.sha256), .integer(record.touchedMilliseconds)])
            guard let stored = try writer.db.queryFirst("SELECT \(UploadRecord.columns) FROM uploads WHERE user_id = ? AND idem_key = ?",
                                                        [.integer(record.user), .text(record.key)], UploadRecord.init(row:)) else {
                throw StorageError(.failed, "the upload of a key was neither made nor found")
            }
            return stored
        }
    }

    public func upload(id: String, user: Int64) throws -> UploadRecord? {
        try read { db in
            try db.queryFirst("SELECT \(UploadRecord.columns) FROM uploads WHERE id = ? AND user_id = ?",
                              [.text(id), .integer(user)], UploadRecord.init(row:))
        }
    }

    public func appendUpload(id: String, at offset: Int64, from file: FileDescriptor, count: Int64, nowMilliseconds: Int64) throws -> Bool {
        try write { writer in
            try writer.db.execute("UPDATE uploads SET upload_offset = upload_offset + ?, touched_at_ms = ? WHERE id = ? AND upload_offset = ?",
                                  [.integer(count), .integer(nowMilliseconds), .text(id), .integer(offset)])
            guard writer.db.changes == 1 else { return false }
            var start = offset
            try file.forEachPart(count: count) { part in
                try writer.db.execute("INSERT INTO upload_parts (upload_id, start, bytes) VALUES (?, ?, ?)",
                                      [.text(id), .integer(start), .blob(part)])
                start += Int64(part.count)
            }
            return true
        }
    }

    public func readUpload(id: String, _ sink: (UnsafeRawBufferPointer) throws -> Void) throws {
        try read { db in
            try db.forEach("SELECT bytes FROM upload_parts WHERE upload_id = ? ORDER BY start", [.text(id)]) { row in
                try (row.blob(0) ?? []).withUnsafeBytes { try sink($0) }
            }
        }
    }

    public func removeUpload(id: String) throws {
        try write { writer in try writer.db.execute("DELETE FROM uploads WHERE id = ?", [.text(id)]) }
    }

    public func removeUploads(touchedBefore cutoffMilliseconds: Int64) throws -> Int {
        try write { writer in
            try writer.db.execute("DELETE FROM uploads WHERE touched_at_ms < ?", [.integer(cutoffMilliseconds)])
            return writer.db.changes
        }
    }

    public func replay(_ operation: IdempotentOperation) throws -> WriteOutcome? {
        try write { writer in
            guard try writer.keyRecord(user: operation.user, key: operation.key) != nil else { return nil }
            return try ExpenseRules.replay(writer, operation)
        }
    }
}
