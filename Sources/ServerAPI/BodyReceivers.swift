import Digest
import ExpenseCore
import Posix
import ServerStorage

/// Collects a JSON body up to a limit. Past the limit nothing more is kept
/// (the request ends in `413`); a client that keeps sending far past it is
/// disconnected.
final class JSONReceiver {
    let limit: Int
    private(set) var bytes: [UInt8] = []
    private(set) var received: Int64 = 0
    var isOverLimit: Bool { received > Int64(limit) }

    init(limit: Int) { self.limit = limit }

    /// - Returns: false once the client sent 16 times the limit.
    func receive(_ chunk: UnsafeRawBufferPointer) -> Bool {
        received += Int64(chunk.count)
        if isOverLimit {
            bytes = []
            return received <= Int64(limit) * 16
        }
        bytes.append(contentsOf: chunk)
        return true
    }
}

/// Streams a receipt upload to a file of the storage's ``UploadStaging``
/// while hashing it: the magic number is checked before the first byte
/// reaches the disk, and nothing is ever held in memory beyond one chunk.
final class ReceiptUpload {
    let kind: ReceiptKind
    let claimedDigest: [UInt8]
    /// `Content-Length`, already checked against the limit.
    let announcedLength: Int64
    private let staging: UploadStaging
    private var hasher: SHA256? = SHA256()
    /// Leading bytes held until there are enough to check the magic number.
    private var leading: [UInt8] = []
    private var isVerified = false
    private var file: FileDescriptor?
    private var temporaryPath: String?
    private(set) var received: Int64 = 0
    /// Set once the upload cannot succeed; the rest of the body is discarded.
    private(set) var failure: Error?

    init(kind: ReceiptKind, claimedDigest: [UInt8], announcedLength: Int64, staging: UploadStaging) {
        self.kind = kind
        self.claimedDigest = claimedDigest
        self.announcedLength = announcedLength
        self.staging = staging
    }

    deinit { discard() }

    /// - Returns: false when more arrives than `Content-Length` announced
    ///   (the HTTP layer prevents it; this is the last line of defence).
    func receive(_ chunk: UnsafeRawBufferPointer) -> Bool {
        received += Int64(chunk.count)
        guard received <= announcedLength else {
            discard()
            return false
        }
        guard failure == nil else { return true }
        hasher?.update(chunk)
        if isVerified {
            write(chunk)
            return true
        }
        leading.append(contentsOf: chunk)
        if leading.count >= ReceiptKind.magicLength { verifyAndWriteLeading() }
        return true
    }

    /// The body is complete: checks what is left to check and hands the
    /// file over (the storage keeps or removes it from then on).
    /// - Throws: `415` for bytes that are not `kind`, `400 digest_mismatch`,
    ///   or the error that stopped writing.
    func finish() throws -> StagedReceipt {
        if failure == nil && !isVerified { verifyAndWriteLeading() }
        if let failure { discard(); throw failure }
        guard let digest = hasher.take()?.finalize(), digest == claimedDigest else {
            discard()
            throw APIError.digestMismatch
        }
        guard let file, let temporaryPath else { throw APIError.internalError }
        self.file = nil
        self.temporaryPath = nil
        return StagedReceipt(file: file, path: temporaryPath, kind: kind, sha256: Hex.encode(digest), size: received)
    }

    /// Removes the temporary file, if any.
    func discard() {
        file = nil
        if let temporaryPath { try? FileSystem.remove(temporaryPath) }
        temporaryPath = nil
    }

    private func verifyAndWriteLeading() {
        guard ReceiptKind.detect(leading) == kind else {
            failure = APIError.receiptTypeMismatch(kind)
            leading = []
            return
        }
        isVerified = true
        let bytes = leading
        leading = []
        bytes.withUnsafeBytes { write($0) }
    }

    private func write(_ bytes: UnsafeRawBufferPointer) {
        do {
            if file == nil {
                let (fd, path) = try staging.makeFile()
                file = fd
                temporaryPath = path
            }
            try file!.writeAll(bytes)
        } catch {
            failure = StorageError(.unavailable, "the upload could not be written", cause: error)
            discard()
        }
    }
}
