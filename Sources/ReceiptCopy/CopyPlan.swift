import ExpenseCore

/// What a receipt's header says about it, read by the decoder before any
/// pixel is decoded.
public struct ImageHeader: Sendable, Equatable {
    public var width: Int
    /// One page's height.
    public var height: Int
    public var pages: Int
    /// EXIF orientation, 1 (or 0, none) when upright.
    public var orientation: Int
    /// EXIF GPS tags are present.
    public var hasLocation: Bool

    public init(width: Int, height: Int, pages: Int = 1, orientation: Int = 1, hasLocation: Bool = false) {
        self.width = width
        self.height = height
        self.pages = pages
        self.orientation = orientation
        self.hasLocation = hasLocation
    }
}

/// What becomes of a receipt on its way to a backend (docs/receipts.md):
/// a PDF and a small, upright JPEG or PNG that tells no location go as
/// they are, byte for byte; anything else becomes one JPEG at most
/// `maxEdge` on its long edge, upright and without metadata; a TIFF of
/// several pages becomes one PDF, a page per image. A header that claims
/// too many pixels or pages is refused before decoding.
public enum CopyPlan: Sendable, Equatable {
    case original
    case jpeg
    case pdf(pages: Int)

    public static func decide(kind: ReceiptKind, header: ImageHeader, settings: CopySettings) throws(CopyFailure) -> CopyPlan {
        try check(header, maxPixels: settings.maxPixels, maxPages: settings.maxPages)
        if kind == .pdf { return .original }
        if kind == .tiff && header.pages > 1 { return .pdf(pages: header.pages) }
        let small = max(header.width, header.height) <= settings.maxEdge
        let upright = header.orientation <= 1
        if (kind == .jpeg || kind == .png) && small && upright && !header.hasLocation { return .original }
        return .jpeg
    }

    /// Refuses a header that claims no pixels, more than `maxPixels` on a
    /// page, or more than `maxPages` pages: before a pixel is decoded, for a
    /// copy and for reading alike.
    public static func check(_ header: ImageHeader, maxPixels: Int, maxPages: Int) throws(CopyFailure) {
        guard header.width > 0, header.height > 0 else { throw CopyFailure("has no pixels (\(header.width) × \(header.height))") }
        let pixels = header.width.multipliedReportingOverflow(by: header.height)
        if pixels.overflow || pixels.partialValue > maxPixels {
            throw CopyFailure("claims \(header.width) × \(header.height) pixels, more than the \(maxPixels) a receipt may have (receipt_max_pixels)")
        }
        if header.pages > maxPages {
            throw CopyFailure("has \(header.pages) pages, more than the \(maxPages) a receipt may have")
        }
    }
}
