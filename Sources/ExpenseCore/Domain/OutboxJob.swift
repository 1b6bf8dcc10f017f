/// A job as the sync engine sends it.
public struct OutboxJob: Sendable, Equatable {
    public var seq: Int64
    public var uuid: String
    public var kind: JobKind
    public var transactionID: String
    /// A create's fields, or an edit's.
    public var fields: ExpenseFields
    /// An edit's `base_version`.
    public var baseVersion: Int?
    public var attempts: Int
    public var transientAttempts: Int
    public var sends: Int
    public var createdMilliseconds: Int64
    public var receiptFile: String?
    public var receiptKind: ReceiptKind?
    public var receiptSize: Int64?
    /// The SHA-256 of the receipt's bytes, recorded when the daemon staged
    /// them; nil for a job queued before digests were recorded.
    public var receiptSHA256: [UInt8]?
    /// The account whose token sends it (``AccountName``).
    public var account: String
    /// A receipt's resumable upload on the server, once made, and the
    /// bytes the server last said it held (docs/sync.md, "Resumable uploads").
    public var uploadURL: String?
    public var uploadOffset: Int64?

    public init(seq: Int64, uuid: String, kind: JobKind, transactionID: String, fields: ExpenseFields = ExpenseFields(),
                baseVersion: Int? = nil, attempts: Int = 0, transientAttempts: Int = 0, sends: Int = 0,
                createdMilliseconds: Int64 = 0, receiptFile: String? = nil, receiptKind: ReceiptKind? = nil, receiptSize: Int64? = nil,
                receiptSHA256: [UInt8]? = nil, account: String = AccountName.defaultName,
                uploadURL: String? = nil, uploadOffset: Int64? = nil) {
        self.seq = seq
        self.uuid = uuid
        self.kind = kind
        self.transactionID = transactionID
        self.fields = fields
        self.baseVersion = baseVersion
        self.attempts = attempts
        self.transientAttempts = transientAttempts
        self.sends = sends
        self.createdMilliseconds = createdMilliseconds
        self.receiptFile = receiptFile
        self.receiptKind = receiptKind
        self.receiptSize = receiptSize
        self.receiptSHA256 = receiptSHA256
        self.account = account
        self.uploadURL = uploadURL
        self.uploadOffset = uploadOffset
    }
}
