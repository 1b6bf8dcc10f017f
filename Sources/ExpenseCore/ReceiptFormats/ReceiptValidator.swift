/// What a receipt's bytes are, judged once all of them have been seen.
public enum ReceiptVerdict: Sendable, Equatable {
    /// A whole file of this kind.
    case complete(ReceiptKind)
    /// Every byte seen is a valid start of a file of this kind, but the
    /// bytes end before its structure does: still being written, or cut short.
    case truncated(ReceiptKind, reason: String)
    /// Not a receipt of any kind, or a damaged one: more bytes cannot help.
    case invalid(reason: String)

    /// Why it is not a receipt, as a predicate ("is truncated: …"); nil when complete.
    public var reason: String? {
        switch self {
        case .complete: nil
        case .truncated(_, let reason), .invalid(let reason): reason
        }
    }
}

/// Checks that a receipt is a whole JPEG, PNG, PDF, HEIF, WebP, TIFF, PNM
/// or BMP file (system.md,
/// invariant 10), fed its bytes in chunks as they are read, so that the
/// copy that stores a receipt checks it without reading it twice.
///
/// The kind comes from the bytes, never from a name. Whole means:
/// - JPEG: the segments walk from SOI to EOI, each marker where the
///   previous segment's length says, a frame header before the first scan,
///   and each scan's entropy-coded data read up to the marker that ends it;
///   bytes after EOI (some cameras append data there) are allowed;
/// - PNG: the signature, IHDR first, every chunk's CRC right, at least one
///   IDAT, up to IEND;
/// - PDF: `%PDF-` first, and `startxref` then `%%EOF` in the last kilobyte
///   (what a reader looks for first: the file is written front to back and
///   ends with them);
/// - HEIF, WebP, PNM, BMP: the structure their headers announce, to its
///   end (`ImageWalks.swift`); TIFF: its header here, and the rest, which
///   points anywhere in the file, by ``TIFFLayout`` once the file is read.
///
/// Pure: no I/O. Tested with tables and with files from ImageMagick,
/// Ghostscript and img2pdf.
public struct ReceiptValidator: Sendable {
    /// The kind the first byte announced, once a byte has been seen.
    public private(set) var kind: ReceiptKind?
    /// How many bytes were fed.
    public private(set) var byteCount: Int64 = 0
    private var failure: String?
    private var jpeg = JPEGWalk()
    private var png = PNGWalk()
    private var pdf = PDFWalk()
    private var heif = HEIFWalk()
    private var webp = WebPWalk()
    private var tiff = TIFFWalk()
    private var pnm = PNMWalk()
    private var bmp = BMPWalk()

    /// The window at the end of a PDF where `startxref` and `%%EOF` must be.
    public static let pdfTrailerWindow = 1024

    static let notAReceipt = "is not a JPEG, PNG, PDF, HEIF, WebP, TIFF, PNM or BMP file (by its bytes)"

    public init() {}

    /// True once the bytes seen cannot start a whole receipt: reading
    /// more is pointless.
    public var hasFailed: Bool { failure != nil }

    /// Feeds the next bytes of the file.
    public mutating func append(_ bytes: UnsafeRawBufferPointer) {
        defer { byteCount += Int64(bytes.count) }
        guard failure == nil, !bytes.isEmpty else { return }
        if kind == nil {
            switch bytes[0] {
            case 0xFF: kind = .jpeg
            case 0x89: kind = .png
            case UInt8(ascii: "%"): kind = .pdf
            case 0x00: kind = .heif
            case UInt8(ascii: "R"): kind = .webp
            case UInt8(ascii: "I"), UInt8(ascii: "M"): kind = .tiff
            case UInt8(ascii: "P"): kind = .pnm
            case UInt8(ascii: "B"): kind = .bmp
            default:
                failure = Self.notAReceipt
                return
            }
        }
        switch kind {
        case .jpeg:
            jpeg.feed(bytes, at: byteCount)
            failure = jpeg.failure
        case .png:
            png.feed(bytes)
            failure = png.failure
        case .pdf:
            pdf.feed(bytes)
            failure = pdf.failure
        case .heif:
            heif.feed(bytes)
            failure = heif.failure
        case .webp:
            webp.feed(bytes)
            failure = webp.failure
        case .tiff:
            tiff.feed(bytes)
            failure = tiff.failure
        case .pnm:
            pnm.feed(bytes)
            failure = pnm.failure
        case .bmp:
            bmp.feed(bytes)
            failure = bmp.failure
        case nil:
            break
        }
    }

    /// Feeds the next bytes of the file.
    public mutating func append(contentsOf bytes: some Collection<UInt8>) {
        Array(bytes).withUnsafeBytes { append($0) }
    }

    /// The verdict if the file ends here.
    public var verdict: ReceiptVerdict {
        if let failure { return .invalid(reason: failure) }
        switch kind {
        case nil:
            return .invalid(reason: "is empty")
        case .jpeg:
            return jpeg.isDone ? .complete(.jpeg)
                : .truncated(.jpeg, reason: "is truncated: a JPEG that ends before its end-of-image marker")
        case .png:
            return png.isDone ? .complete(.png)
                : .truncated(.png, reason: "is truncated: a PNG that ends before its IEND chunk")
        case .pdf:
            return pdf.verdict
        case .heif: return heif.verdict
        case .webp: return webp.verdict
        case .tiff: return tiff.verdict
        case .pnm: return pnm.verdict
        case .bmp: return bmp.verdict
        }
    }

    /// The verdict on a whole file in memory.
    public static func check(_ bytes: some Collection<UInt8>) -> ReceiptVerdict {
        var validator = ReceiptValidator()
        validator.append(contentsOf: bytes)
        return validator.verdict
    }
}

// MARK: JPEG

/// Walks a JPEG's markers (ITU T.81, annex B).
private struct JPEGWalk: Sendable {
    private enum State: Sendable {
        /// Expecting SOI's first (0) or second (1) byte.
        case magic(Int)
        /// Expecting the 0xFF that starts a marker.
        case marker
        /// Expecting a marker's code (more 0xFF are fill bytes).
        case code
        case lengthHigh, lengthLow
        /// Skipping a segment's payload.
        case payload
        /// In a scan's entropy-coded data, and just after a 0xFF in it.
        case entropy, entropyFF
        /// After EOI.
        case done
    }

    private var state = State.magic(0)
    private var code: UInt8 = 0
    private var lengthHigh: UInt8 = 0
    private var remaining = 0
    private var hasFrame = false
    private var hasScan = false
    private(set) var failure: String?

    var isDone: Bool {
        if case .done = state { return true }
        return false
    }

    mutating func feed(_ bytes: UnsafeRawBufferPointer, at base: Int64) {
        let count = bytes.count
        var i = 0
        while i < count && failure == nil {
            switch state {
            case .magic(let seen):
                guard bytes[i] == (seen == 0 ? 0xFF : 0xD8) else {
                    failure = ReceiptValidator.notAReceipt
                    return
                }
                state = seen == 0 ? .magic(1) : .marker
                i += 1
            case .marker:
                guard bytes[i] == 0xFF else {
                    fail("no marker where a segment should start", at: base + Int64(i))
                    return
                }
                state = .code
                i += 1
            case .code:
                begin(bytes[i], at: base + Int64(i))
                i += 1
            case .lengthHigh:
                lengthHigh = bytes[i]
                state = .lengthLow
                i += 1
            case .lengthLow:
                let length = Int(lengthHigh) << 8 | Int(bytes[i])
                guard length >= 2 else {
                    fail("segment length \(length) is less than 2", at: base + Int64(i))
                    return
                }
                remaining = length - 2
                i += 1
                if remaining == 0 { endSegment() } else { state = .payload }
            case .payload:
                let taken = min(remaining, count - i)
                i += taken
                remaining -= taken
                if remaining == 0 { endSegment() }
            case .entropy:
                guard let found = Self.firstFF(in: bytes, from: i) else {
                    i = count
                    break
                }
                i = found + 1
                state = .entropyFF
            case .entropyFF:
                let byte = bytes[i]
                switch byte {
                case 0x00, 0xD0...0xD7: state = .entropy  // a stuffed 0xFF, a restart marker
                case 0xFF: break  // fill
                default: begin(byte, at: base + Int64(i))  // the marker that ends the scan
                }
                i += 1
            case .done:
                return
            }
        }
    }

    /// The offset of the first 0xFF in `bytes` at or after `start`, or nil.
    /// Most of a photo's bytes are entropy-coded data with few 0xFF among
    /// them: they are looked at a word (8 bytes) at a time, a 0xFF being a
    /// zero byte of the word inverted (the lowest such byte is the first:
    /// the subtraction's borrows run only upward).
    static func firstFF(in bytes: UnsafeRawBufferPointer, from start: Int) -> Int? {
        var i = start
        let count = bytes.count
        while i + 8 <= count {
            let inverted = ~UInt64(littleEndian: bytes.loadUnaligned(fromByteOffset: i, as: UInt64.self))
            let zeros = (inverted &- 0x0101_0101_0101_0101) & ~inverted & 0x8080_8080_8080_8080
            if zeros != 0 { return i + zeros.trailingZeroBitCount / 8 }
            i += 8
        }
        while i < count {
            if bytes[i] == 0xFF { return i }
            i += 1
        }
        return nil
    }

    /// A marker's code was read.
    private mutating func begin(_ byte: UInt8, at offset: Int64) {
        code = byte
        switch byte {
        case 0xFF:
            state = .code
        case 0xD9:
            guard hasScan else {
                fail("its end-of-image marker comes before any image data", at: offset)
                return
            }
            state = .done
        case 0x01, 0xD0...0xD7:
            state = .marker  // stand-alone: no length
        case 0x00:
            fail("no marker code after 0xFF", at: offset)
        case 0xD8:
            fail("a second start-of-image marker", at: offset)
        default:
            state = .lengthHigh
        }
    }

    private mutating func endSegment() {
        switch code {
        case 0xC4, 0xC8, 0xCC:
            state = .marker  // DHT, JPG, DAC: not frame headers
        case 0xC0...0xCF:
            hasFrame = true
            state = .marker
        case 0xDA:
            guard hasFrame else {
                failure = "is a damaged JPEG: a scan comes before its frame header"
                return
            }
            hasScan = true
            state = .entropy
        default:
            state = .marker
        }
    }

    private mutating func fail(_ what: String, at offset: Int64) {
        failure = "is a damaged JPEG: \(what) (byte \(offset))"
    }
}

// MARK: PNG

/// Walks a PNG's chunks (RFC 2083 / ISO 15948), checking each CRC.
private struct PNGWalk: Sendable {
    private enum State: Sendable { case signature, header, data, crc, done }

    private static let signature: [UInt8] = [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]
    private static let ihdr = Array("IHDR".utf8), idat = Array("IDAT".utf8), iend = Array("IEND".utf8)

    private var state = State.signature
    /// The signature, a chunk's length and type, or its CRC, while it arrives.
    private var field: [UInt8] = []
    private var type: [UInt8] = []
    private var remaining = 0
    private var crc = CRC32()
    private var chunks = 0
    private var hasData = false
    private(set) var failure: String?

    var isDone: Bool { state == .done }

    mutating func feed(_ bytes: UnsafeRawBufferPointer) {
        let count = bytes.count
        var i = 0
        while i < count && failure == nil {
            switch state {
            case .signature, .header, .crc:
                let wanted = state == .crc ? 4 : 8
                let taken = min(wanted - field.count, count - i)
                field.append(contentsOf: UnsafeRawBufferPointer(rebasing: bytes[i..<(i + taken)]))
                i += taken
                if field.count == wanted {
                    fieldComplete()
                    field.removeAll(keepingCapacity: true)
                }
            case .data:
                let taken = min(remaining, count - i)
                crc.update(UnsafeRawBufferPointer(rebasing: bytes[i..<(i + taken)]))
                i += taken
                remaining -= taken
                if remaining == 0 { state = .crc }
            case .done:
                return  // bytes after IEND are not looked at
            }
        }
    }

    private mutating func fieldComplete() {
        switch state {
        case .signature:
            guard field == Self.signature else {
                failure = ReceiptValidator.notAReceipt
                return
            }
            state = .header
        case .header:
            let length = field[0..<4].reduce(0) { $0 << 8 | Int($1) }
            type = Array(field[4..<8])
            let name = String(decoding: type, as: UTF8.self)
            guard type.allSatisfy({ (0x41...0x5A).contains($0) || (0x61...0x7A).contains($0) }) else {
                failure = "is a damaged PNG: a chunk type that is not four letters (chunk \(chunks + 1))"
                return
            }
            guard length <= 0x7FFF_FFFF else {
                failure = "is a damaged PNG: chunk '\(name)' is longer than 2^31 - 1 bytes"
                return
            }
            if chunks == 0 && (type != Self.ihdr || length != 13) {
                failure = "is a damaged PNG: it does not start with its IHDR chunk"
                return
            }
            crc = CRC32()
            crc.update(type)
            remaining = length
            state = length == 0 ? .crc : .data
        case .crc:
            let stored = field.reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
            guard stored == crc.value else {
                failure = "is a damaged PNG: chunk '\(String(decoding: type, as: UTF8.self))' fails its CRC (chunk \(chunks + 1))"
                return
            }
            chunks += 1
            if type == Self.idat { hasData = true }
            if type == Self.iend {
                guard hasData else {
                    failure = "is a damaged PNG: it has no image data (no IDAT chunk)"
                    return
                }
                state = .done
            } else {
                state = .header
            }
        case .data, .done:
            break
        }
    }
}

// MARK: PDF

/// Checks a PDF's header, and keeps its last kilobyte for the trailer.
private struct PDFWalk: Sendable {
    private static let magic = Array("%PDF-".utf8)
    private var matched = 0
    private var tail: [UInt8] = []
    private(set) var failure: String?

    mutating func feed(_ bytes: UnsafeRawBufferPointer) {
        let count = bytes.count
        var i = 0
        while matched < Self.magic.count && i < count {
            guard bytes[i] == Self.magic[matched] else {
                failure = ReceiptValidator.notAReceipt
                return
            }
            matched += 1
            i += 1
        }
        let window = ReceiptValidator.pdfTrailerWindow
        if count - i >= window {
            tail = Array(UnsafeRawBufferPointer(rebasing: bytes[(count - window)..<count]))
        } else {
            tail.append(contentsOf: UnsafeRawBufferPointer(rebasing: bytes[i..<count]))
            // Trimmed in batches, not on every call.
            if tail.count > 2 * window { tail.removeFirst(tail.count - window) }
        }
    }

    var verdict: ReceiptVerdict {
        if let failure { return .invalid(reason: failure) }
        guard matched == Self.magic.count else {
            return .truncated(.pdf, reason: "is truncated: a PDF that ends within its header")
        }
        let window = Array(tail.suffix(ReceiptValidator.pdfTrailerWindow))
        guard let end = Self.lastOccurrence(of: Array("%%EOF".utf8), in: window) else {
            return .truncated(.pdf, reason: "is truncated: a PDF without %%EOF in its last kilobyte")
        }
        guard Self.lastOccurrence(of: Array("startxref".utf8), in: Array(window[..<end])) != nil else {
            return .invalid(reason: "is a damaged PDF: no startxref before its final %%EOF")
        }
        return .complete(.pdf)
    }

    private static func lastOccurrence(of needle: [UInt8], in haystack: [UInt8]) -> Int? {
        guard haystack.count >= needle.count else { return nil }
        for start in stride(from: haystack.count - needle.count, through: 0, by: -1)
            where haystack[start..<(start + needle.count)].elementsEqual(needle) {
            return start
        }
        return nil
    }
}
