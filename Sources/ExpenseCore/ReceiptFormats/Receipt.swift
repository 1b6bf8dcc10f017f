/// The kinds of receipt file the product accepts, recognized by their bytes.
/// A backend is sent JPEG, PNG or PDF (``isSendable``); the other kinds
/// arrive from phones and scanners and go as a legible copy.
public enum ReceiptKind: String, Sendable, CaseIterable, Codable {
    case jpeg, png, pdf, heif, webp, tiff, pnm, bmp

    /// The kinds a backend takes as they are (contract.md, `PUT …/receipt`).
    public static let sendable: [ReceiptKind] = [.jpeg, .png, .pdf]

    public var isSendable: Bool { Self.sendable.contains(self) }

    /// The `Content-Type` the receipt is uploaded with (contract.md, `PUT …/receipt`).
    public var contentType: String {
        switch self {
        case .jpeg: "image/jpeg"
        case .png: "image/png"
        case .pdf: "application/pdf"
        case .heif: "image/heif"
        case .webp: "image/webp"
        case .tiff: "image/tiff"
        case .pnm: "image/x-portable-anymap"
        case .bmp: "image/bmp"
        }
    }

    /// The extension the daemon names stored receipts with.
    public var fileExtension: String {
        switch self {
        case .jpeg: "jpg"
        case .png: "png"
        case .pdf: "pdf"
        case .heif: "heic"
        case .webp: "webp"
        case .tiff: "tif"
        case .pnm: "pnm"
        case .bmp: "bmp"
        }
    }

    /// The kind whose magic number starts `prefix`, if any: JPEG `FF D8 FF`,
    /// PNG's 8-byte signature, PDF `%PDF-`, an ISO media `ftyp` box (HEIF;
    /// its brand is the validator's), `RIFF….WEBP`, TIFF `II*\0` or
    /// `MM\0*`, binary PNM `P4`–`P6`, BMP `BM`.
    public static func detect(_ prefix: some Collection<UInt8>) -> ReceiptKind? {
        let head = Array(prefix.prefix(magicLength))
        if head.starts(with: [0xFF, 0xD8, 0xFF]) { return .jpeg }
        if head.starts(with: [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]) { return .png }
        if head.starts(with: Array("%PDF-".utf8)) { return .pdf }
        if head.count >= 8, head[4..<8].elementsEqual("ftyp".utf8) { return .heif }
        if head.count >= 12, head.starts(with: Array("RIFF".utf8)), head[8..<12].elementsEqual("WEBP".utf8) { return .webp }
        if head.starts(with: [0x49, 0x49, 0x2A, 0x00]) || head.starts(with: [0x4D, 0x4D, 0x00, 0x2A]) { return .tiff }
        if head.count >= 3, head[0] == UInt8(ascii: "P"), (UInt8(ascii: "4")...UInt8(ascii: "6")).contains(head[1]),
           [0x20, 0x09, 0x0A, 0x0D].contains(head[2]) { return .pnm }
        if head.starts(with: Array("BM".utf8)) { return .bmp }
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
        case "heic", "heif", "hif": self = .heif
        case "webp": self = .webp
        case "tif", "tiff": self = .tiff
        case "pnm", "pbm", "pgm", "ppm": self = .pnm
        case "bmp": self = .bmp
        default: return nil
        }
    }

    /// How many leading bytes ``detect(_:)`` needs.
    public static let magicLength = 12
}
