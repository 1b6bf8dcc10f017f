import ExpenseCore

/// `receipt`'s answer. The bytes are not in it: a descriptor of a file
/// holding them, open for reading, comes with the answer's line
/// (`SCM_RIGHTS`), already checked against `sha256` by the daemon.
public struct ReceiptResult: ControlResult, Equatable {
    /// Where the daemon read the bytes from.
    public enum Source: String, Sendable, Equatable {
        /// Its own copy of an upload still in the outbox.
        case queued
        /// The copy it keeps for a backend that stores no files.
        case keptLocally = "kept locally"
        /// The server, with the expense's account's credentials.
        case server
        /// The bytes as received, kept when a legible copy was sent (docs/receipts.md).
        case original
    }

    public var transactionID: String
    public var kind: ReceiptKind
    public var size: Int64
    /// Lowercase hex SHA-256 of the bytes.
    public var sha256: String
    public var source: Source

    public init(transactionID: String, kind: ReceiptKind, size: Int64, sha256: String, source: Source) {
        self.transactionID = transactionID
        self.kind = kind
        self.size = size
        self.sha256 = sha256
        self.source = source
    }

    public var json: JSONValue {
        ["transaction_id": .string(transactionID), "kind": .string(kind.rawValue), "content_type": .string(kind.contentType),
         "size": .integer(size), "sha256": .string(sha256), "source": .string(source.rawValue)]
    }

    public init(json: JSONValue) throws(ControlDecodingError) {
        let m = try Members(json, path: "result")
        guard let kind = ReceiptKind(rawValue: try m.string("kind")) else { throw ControlDecodingError(path: m.at("kind"), "is not a receipt kind (jpeg, png, pdf, heif, webp, tiff, pnm, bmp)") }
        guard let source = Source(rawValue: try m.string("source")) else { throw ControlDecodingError(path: m.at("source"), "is not queued, kept locally, server or original") }
        self.init(transactionID: try m.string("transaction_id"), kind: kind, size: try m.integer("size"), sha256: try m.string("sha256"),
                  source: source)
    }
}
