import ExpenseCore

/// How the legible copy of a receipt is made, and the limits of the
/// sandboxed decoder that makes it (docs/receipts.md; `expensed.conf`'s
/// `receipt_*` settings).
public struct CopySettings: Sendable, Equatable {
    /// The longest edge of a copy, in pixels: a photo larger than this is
    /// shrunk to it (never enlarged). 2,500 px keeps 6-point receipt type
    /// legible from a 12-megapixel photo of a receipt filling the frame.
    public var maxEdge = 2500
    /// An image whose header claims more pixels than this is refused
    /// before a pixel is decoded (a decompression bomb).
    public var maxPixels = 100_000_000
    /// At most this many pages (a multi-page TIFF becomes a PDF of them).
    public var maxPages = TIFFLayout.maxPages
    /// JPEG quality of a copy.
    public var quality = 85
    /// The decoder's address space (`RLIMIT_AS`).
    public var memoryBytes: UInt64 = 2 << 30
    /// The decoder's CPU time (`RLIMIT_CPU`).
    public var cpuSeconds: UInt64 = 60
    /// Wall-clock time the decoder is given before it is killed.
    public var deadlineMilliseconds: Int64 = 120_000

    public init() {}

    /// The decoder's command line: every limit, nothing secret.
    public var arguments: [String] {
        ["--max-edge", "\(maxEdge)", "--max-pixels", "\(maxPixels)", "--max-pages", "\(maxPages)", "--quality", "\(quality)",
         "--memory", "\(memoryBytes)", "--cpu-seconds", "\(cpuSeconds)"]
    }

    /// Parses what ``arguments`` wrote.
    public init(arguments: [String]) throws(CopyFailure) {
        var settings = CopySettings()
        var rest = arguments[...]
        while let flag = rest.popFirst() {
            guard let text = rest.popFirst(), let value = UInt64(text) else { throw CopyFailure("\(flag) needs a number") }
            switch flag {
            case "--max-edge": settings.maxEdge = Int(clamping: value)
            case "--max-pixels": settings.maxPixels = Int(clamping: value)
            case "--max-pages": settings.maxPages = Int(clamping: value)
            case "--quality": settings.quality = Int(clamping: value)
            case "--memory": settings.memoryBytes = value
            case "--cpu-seconds": settings.cpuSeconds = value
            default: throw CopyFailure("unknown option \(flag)")
            }
        }
        guard settings.maxEdge >= 16, (1...100).contains(settings.quality), settings.maxPages >= 1 else {
            throw CopyFailure("--max-edge must be at least 16, --quality 1 to 100, --max-pages at least 1")
        }
        self = settings
    }
}

/// Why no copy was made: a line for `show`, the journal and a quarantine.
public struct CopyFailure: Error, Sendable, Equatable, CustomStringConvertible {
    public let reason: String
    public init(_ reason: String) { self.reason = reason }

    /// The daemon is stopping: not the receipt's fault, nothing recorded.
    public static let stopped = CopyFailure("the decoder was stopped with the daemon")
    public var description: String { reason }
}
