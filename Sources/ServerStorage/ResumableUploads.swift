import Digest
import ExpenseCore
import Posix

/// A resumable receipt upload (docs/contract.md, "Resumable uploads"):
/// what its creation declared, and how many of its bytes the server holds.
public struct UploadRecord: Sendable, Equatable {
    /// 32 hex digits, random: the `{id}` of `/v1/uploads/{id}`.
    public let id: String
    public let user: Int64
    /// The Idempotency-Key of the creation: one upload per (user, key).
    public let key: String
    public let transactionID: String
    public let contentType: String
    /// `Upload-Length`: the receipt's size.
    public let length: Int64
    /// The `Repr-Digest` of the whole receipt, SHA-256 hex.
    public let sha256: String
    /// Bytes held, from the start, durably.
    public var offset: Int64
    /// When a request last appended to it (or created it), server clock.
    public var touchedMilliseconds: Int64

    public init(id: String, user: Int64, key: String, transactionID: String, contentType: String,
                length: Int64, sha256: String, offset: Int64, touchedMilliseconds: Int64) {
        self.id = id
        self.user = user
        self.key = key
        self.transactionID = transactionID
        self.contentType = contentType
        self.length = length
        self.sha256 = sha256
        self.offset = offset
        self.touchedMilliseconds = touchedMilliseconds
    }

    /// The columns ``init(row:)`` reads, in its order.
    public static let columns = "id, user_id, idem_key, transaction_id, content_type, length, sha256, upload_offset, touched_at_ms"

    public init(row: some StorageRow) {
        self.init(id: row.string(0), user: row.int64(1), key: row.string(2), transactionID: row.string(3),
                  contentType: row.string(4), length: row.int64(5), sha256: row.string(6),
                  offset: row.int64(7), touchedMilliseconds: row.int64(8))
    }

    /// True when nothing appended to it for `expiryMilliseconds`.
    public func isExpired(nowMilliseconds: Int64, expiryMilliseconds: Int64) -> Bool {
        nowMilliseconds - touchedMilliseconds >= expiryMilliseconds
    }

    /// The upload's path, its `Location`.
    public var path: String { "/v1/uploads/\(id)" }

    /// A new id: 128 random bits, hex.
    public static func newID() -> String { Hex.encode(SecureRandom.bytes(16)) }

    /// True for what ``newID()`` makes: anything else names no upload.
    public static func isValidID(_ text: String) -> Bool {
        text.utf8.count == 32 && text.utf8.allSatisfy { ($0 >= 0x30 && $0 <= 0x39) || ($0 >= 0x61 && $0 <= 0x66) }
    }
}

/// Where resumable uploads live while they arrive: their records and their
/// bytes, in the database, so that every server process on it sees them
/// (a request's bytes are appended when it ends, however it ends; the
/// bytes of a request cut by the server's own crash are lost, and the
/// client resumes from the offset the record holds).
public protocol ResumableUploads {
    /// Makes `record` (offset 0), unless (user, key) has an upload:
    /// UNIQUE(user, key) decides.
    /// - Returns: the upload of (user, key): `record` or the earlier one.
    func openUpload(_ record: UploadRecord) throws -> UploadRecord
    /// The upload `id` of `user`, expired or not; nil when there is none.
    func upload(id: String, user: Int64) throws -> UploadRecord?
    /// Appends `count` bytes read from `file` (from its position 0) to the
    /// upload `id`, if it still holds exactly `offset` bytes; the record's
    /// offset and time move in the same transaction.
    /// - Returns: false when the upload is gone or its offset moved (nothing written).
    func appendUpload(id: String, at offset: Int64, from file: FileDescriptor, count: Int64, nowMilliseconds: Int64) throws -> Bool
    /// Hands the bytes the upload holds to `sink`, in order.
    func readUpload(id: String, _ sink: (UnsafeRawBufferPointer) throws -> Void) throws
    /// Removes the upload and its bytes (nothing when there is none).
    func removeUpload(id: String) throws
    /// Removes the uploads nothing appended to since `cutoffMilliseconds`.
    /// - Returns: how many.
    func removeUploads(touchedBefore cutoffMilliseconds: Int64) throws -> Int
    /// The answer to `operation` when its key has a record (the upload it
    /// created was completed: a repeat is a replay); nil when it has none.
    func replay(_ operation: IdempotentOperation) throws -> WriteOutcome?
}

/// Bytes of an upload are kept in parts of at most this size.
public let uploadPartSize = 1 << 20

extension FileDescriptor {
    /// Reads `count` bytes from position 0 in parts of ``uploadPartSize``.
    public func forEachPart(count: Int64, _ body: ([UInt8]) throws -> Void) throws {
        var buffer = [UInt8](repeating: 0, count: uploadPartSize)
        var position: Int64 = 0
        while position < count {
            let want = Int(min(Int64(uploadPartSize), count - position))
            var filled = 0
            while filled < want {
                let n = try buffer.withUnsafeMutableBytes { raw in
                    try read(into: UnsafeMutableRawBufferPointer(rebasing: raw[filled..<want]), at: position + Int64(filled))
                }
                guard n > 0 else { throw StorageError(.failed, "the upload's file is shorter than the \(count) bytes it received") }
                filled += n
            }
            try body(Array(buffer[0..<want]))
            position += Int64(want)
        }
    }
}
