import ExpenseCore
import Posix
import Postgres
import ServerStorage

extension PostgresStore {
    /// Receipt bytes per chunk row.
    static let chunkSize = 256 << 10

    public func create(_ operation: IdempotentOperation, _ request: CreateRequest) throws -> WriteOutcome {
        try write { try ExpenseRules.create($0, operation, request) }
    }

    public func edit(_ operation: IdempotentOperation, transactionID: String, _ request: PatchRequest) throws -> WriteOutcome {
        try write { try ExpenseRules.edit($0, operation, transactionID: transactionID, request) }
    }

    public func delete(_ operation: IdempotentOperation, transactionID: String) throws -> WriteOutcome {
        try write { try ExpenseRules.delete($0, operation, transactionID: transactionID) }
    }

    /// The staged bytes are copied into the database, a chunk at a time,
    /// by the transaction that points the expense at them: committed
    /// together or not at all. The staged file goes whatever happens.
    public func attachReceipt(_ operation: IdempotentOperation, transactionID: String, _ upload: StagedReceipt) throws -> WriteOutcome {
        defer { upload.discard() }
        return try write { writer in
            try ExpenseRules.attachReceipt(writer, operation, transactionID: transactionID,
                                           contentType: upload.kind.contentType, sha256: upload.sha256) { stored, now in
                let receiptID = try Self.copy(upload, into: writer.db)
                try writer.pointAtReceipt(stored, receiptID: receiptID, contentType: upload.kind.contentType,
                                          sha256: upload.sha256, size: upload.size, now: now)
            }
        }
    }

    /// Writes the staged file's bytes as a new receipt's chunks.
    /// - Returns: the receipt's id.
    private static func copy(_ upload: StagedReceipt, into db: Connection) throws -> Int64 {
        guard let receiptID = try db.scalarInt("INSERT INTO receipts (size) VALUES ($1) RETURNING id", [.integer(upload.size)]) else {
            throw StorageError(.failed, "no receipt id was returned")
        }
        var chunk = [UInt8](repeating: 0, count: chunkSize)
        var offset: Int64 = 0
        var seq: Int64 = 0
        while offset < upload.size {
            let count = try read(upload.file, into: &chunk, at: offset)
            guard count > 0 else { throw StorageError(.failed, "the staged receipt is shorter than its \(upload.size) bytes") }
            try db.execute("INSERT INTO receipt_chunks (receipt_id, seq, bytes) VALUES ($1, $2, $3)",
                           [.integer(receiptID), .integer(seq), .bytes(Array(chunk.prefix(count)))])
            offset += Int64(count)
            seq += 1
        }
        return receiptID
    }

    /// Fills `buffer` from `file` at `offset` as far as the file goes.
    /// - Returns: the bytes read; fewer than the buffer holds only at the end.
    private static func read(_ file: FileDescriptor, into buffer: inout [UInt8], at offset: Int64) throws -> Int {
        var filled = 0
        while filled < buffer.count {
            let n = try buffer.withUnsafeMutableBytes { raw in
                try file.read(into: UnsafeMutableRawBufferPointer(rebasing: raw[filled...]), at: offset + Int64(filled))
            }
            if n == 0 { break }
            filled += n
        }
        return filled
    }
}
