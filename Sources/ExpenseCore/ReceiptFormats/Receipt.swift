/// The kinds of receipt file the product accepts, recognized by their bytes.
public enum ReceiptKind: String, Sendable, CaseIterable, Codable {
    case jpeg, png, pdf

    /// The `Content-Type` the receipt is uploaded with (contract.md, `PUT …/receipt`).
    public var contentType: String {
        switch self {
        case .jpeg: "image/jpeg"
        case .png: "image/png"
        case .pdf: "application/pdf"
        }
    }

    /// The extension the daemon names stored receipts with.
    public var fileExtension: String {
        switch self {
        case .jpeg: "jpg"
        case .png: "png"
        case .pdf: "pdf"
        }
    }

    /// The kind whose magic number starts `prefix`, if any: JPEG `FF D8 FF`,
    /// PNG's 8-byte signature, PDF `%PDF-`.
    public static func detect(_ prefix: some Collection<UInt8>) -> ReceiptKind? {
        let head = Array(prefix.prefix(8))
        if head.starts(with: [0xFF, 0xD8, 0xFF]) { return .jpeg }
        if head.starts(with: [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]) { return .png }
        if head.starts(with: Array("%PDF-".utf8)) { return .pdf }
        return nil
    }

    /// The kind a content type names.
    public init?(contentType: String) {
        guard let kind = ReceiptKind.allCases.first(where: { $0.contentType == contentType.lowercased() }) else { return nil }
        self = kind
    }

    /// The kind a file extension names (`jpg`, `jpeg`, `png`, `pdf`, any case).
    public init?(fileExtension: String) {
        switch fileExtension.lowercased() {
        case "jpg", "jpeg": self = .jpeg
        case "png": self = .png
        case "pdf": self = .pdf
        default: return nil
        }
    }

    /// How many leading bytes ``detect(_:)`` needs.
    public static let magicLength = 8
}
