import ExpenseCore

/// How a receipt's text is read, and the limits of the sandboxed reader
/// (docs/receipts.md, "Reading"; `expensed.conf`'s `receipt_languages`,
/// `receipt_tessdata` and the decoder's limits).
public struct ReadSettings: Sendable, Equatable {
    /// Tesseract's languages, each a `NAME.traineddata` in ``tessdata``.
    public var languages = ["eng"]
    /// Where Debian's Tesseract 5 packages put their language data.
    public var tessdata = ReadSettings.debianTessdata
    /// A page whose header claims more pixels than this is refused before
    /// a pixel is decoded, as a copy is (`receipt_max_pixels`).
    public var maxPixels = 100_000_000
    /// A document of more pages is refused.
    public var maxPages = TIFFLayout.maxPages
    /// Of a longer document, this many pages are read: a receipt's total
    /// and date are on its first pages.
    public var pagesRead = 4
    /// The long edge, in pixels, of what Tesseract is given: a PDF page
    /// is rendered at it (about 340 dpi for A4), a larger photo shrunk to it.
    public var longEdge = 4000
    public var memoryBytes: UInt64 = 2 << 30
    public var cpuSeconds: UInt64 = 60
    /// Wall-clock time the reader is given before it is killed.
    public var deadlineMilliseconds: Int64 = 120_000

    public static let debianTessdata = "/usr/share/tesseract-ocr/5/tessdata"

    public init() {}

    /// The decoder's command line in reading mode: every limit, nothing secret.
    public var arguments: [String] {
        ["--read", "--languages", languages.joined(separator: "+"), "--tessdata", tessdata, "--max-pixels", "\(maxPixels)",
         "--max-pages", "\(maxPages)", "--pages-read", "\(pagesRead)", "--long-edge", "\(longEdge)",
         "--memory", "\(memoryBytes)", "--cpu-seconds", "\(cpuSeconds)"]
    }

    /// Parses what ``arguments`` wrote.
    public init(arguments: [String]) throws(CopyFailure) {
        var settings = ReadSettings()
        var rest = arguments[...]
        guard rest.popFirst() == "--read" else { throw CopyFailure("reading starts with --read") }
        while let flag = rest.popFirst() {
            guard let text = rest.popFirst() else { throw CopyFailure("\(flag) needs a value") }
            switch flag {
            case "--languages":
                settings.languages = text.split(separator: "+").map(String.init)
                if let bad = ReadingLanguages.firstInvalid(settings.languages) { throw CopyFailure(bad) }
            case "--tessdata":
                guard text.hasPrefix("/") else { throw CopyFailure("--tessdata needs an absolute path") }
                settings.tessdata = text
            default:
                guard let value = UInt64(text) else { throw CopyFailure("\(flag) needs a number") }
                switch flag {
                case "--max-pixels": settings.maxPixels = Int(clamping: value)
                case "--max-pages": settings.maxPages = Int(clamping: value)
                case "--pages-read": settings.pagesRead = Int(clamping: value)
                case "--long-edge": settings.longEdge = Int(clamping: value)
                case "--memory": settings.memoryBytes = value
                case "--cpu-seconds": settings.cpuSeconds = value
                default: throw CopyFailure("unknown option \(flag)")
                }
            }
        }
        guard settings.longEdge >= 100, settings.longEdge <= 20_000, settings.pagesRead >= 1, settings.maxPages >= 1 else {
            throw CopyFailure("--long-edge must be from 100 to 20000, --pages-read and --max-pages at least 1")
        }
        self = settings
    }
}
