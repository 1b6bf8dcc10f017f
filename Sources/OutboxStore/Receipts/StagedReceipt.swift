import ExpenseCore

/// A receipt copied into the state directory, durable, and not yet
/// referenced by any job (the job's commit does that).
public struct StagedReceipt: Sendable, Equatable {
    /// The receipt job's UUID, which also names the file.
    public let jobUUID: String
    /// The kind its bytes are, whatever the name it came with.
    public let kind: ReceiptKind
    public let size: Int
    /// SHA-256 of the bytes copied, when the copy was asked to compute it
    /// (the spool records it to recognize the file after a crash).
    public let digest: [UInt8]?

    public init(jobUUID: String, kind: ReceiptKind, size: Int, digest: [UInt8]? = nil) {
        self.jobUUID = jobUUID
        self.kind = kind
        self.size = size
        self.digest = digest
    }

    /// `<uuid>.<ext>`, inside the receipts directory.
    public var fileName: String { "\(jobUUID).\(kind.fileExtension)" }
}
