// The whole-file checks of the image formats a backend is never sent as
// they are (HEIF, WebP, TIFF, PNM, BMP): each walks the structure its
// header announces, fed bytes in chunks, and says whether the file ends
// where that structure does. What the pixels are is the sandboxed
// decoder's business; these only refuse a file cut short or padded.

/// Reads big- or little-endian integers out of a few header bytes.
struct HeaderBytes {
    let bytes: [UInt8]
    var bigEndian = true

    func uint(_ at: Int, _ width: Int) -> UInt64 {
        var value: UInt64 = 0
        for k in 0..<width {
            let byte = UInt64(bytes[at + (bigEndian ? k : width - 1 - k)])
            value = value << 8 | byte
        }
        return value
    }

    /// A four-character code as text, bytes outside printable ASCII as `?`.
    static func printable(_ code: String) -> String {
        String(code.unicodeScalars.map { (0x20...0x7E).contains($0.value) ? Character($0) : "?" })
    }
}

// MARK: HEIF

/// Walks an ISO base media file's boxes (ISO/IEC 14496-12) from the first
/// to the last: a HEIF image is `ftyp` first, naming a HEIF brand, then
/// boxes each exactly as long as its header says, one of them `meta`.
struct HEIFWalk: Sendable {
    /// The brands libheif reads as images (HEVC-coded HEIF and its sequences).
    static let brands: Set<String> = ["heic", "heix", "heim", "heis", "hevc", "hevx", "mif1", "msf1"]
    private var header: [UInt8] = []
    /// Bytes of the current box's payload still to come; nil while a header arrives.
    private var remaining: UInt64?
    private var boxType = ""
    private var boxes = 0
    private var ftypPayload: [UInt8] = []
    private var hasMeta = false
    /// A box of size 0 runs to the end of the file.
    private var toTheEnd = false
    private(set) var failure: String?

    var verdict: ReceiptVerdict {
        if let failure { return .invalid(reason: failure) }
        let atBoundary = toTheEnd || (remaining == nil && header.isEmpty)
        if atBoundary && hasMeta { return .complete(.heif) }
        return .truncated(.heif, reason: atBoundary ? "is a HEIF file without its meta box" : "is truncated: a HEIF file that ends inside a box")
    }

    mutating func feed(_ bytes: UnsafeRawBufferPointer) {
        var i = 0
        let count = bytes.count
        while i < count && failure == nil && !toTheEnd {
            if var left = remaining {
                let taken = Int(min(left, UInt64(count - i)))
                if boxType == "ftyp", ftypPayload.count < 256 {
                    ftypPayload.append(contentsOf: UnsafeRawBufferPointer(rebasing: bytes[i..<(i + min(taken, 256 - ftypPayload.count))]))
                }
                i += taken
                left -= UInt64(taken)
                remaining = left
                if left == 0 {
                    remaining = nil
                    if boxType == "ftyp" { checkBrand() }
                }
                continue
            }
            header.append(bytes[i])
            i += 1
            guard header.count >= 8 else { continue }
            let fields = HeaderBytes(bytes: header)
            let size32 = fields.uint(0, 4)
            if size32 == 1 && header.count < 16 { continue }
            boxType = String(decoding: header[4..<8], as: UTF8.self)
            let headerLength: UInt64 = size32 == 1 ? 16 : 8
            let size = size32 == 1 ? fields.uint(8, 8) : size32
            header.removeAll(keepingCapacity: true)
            boxes += 1
            if boxes == 1 && boxType != "ftyp" {
                failure = ReceiptValidator.notAReceipt
                return
            }
            if boxType == "meta" { hasMeta = true }
            if size == 0 {
                toTheEnd = true
                return
            }
            guard size >= headerLength else {
                failure = "is a damaged HEIF file: box '\(HeaderBytes.printable(boxType))' is shorter than its header"
                return
            }
            remaining = size - headerLength
            if remaining == 0 {
                remaining = nil
                if boxType == "ftyp" { checkBrand() }
            }
        }
    }

    private mutating func checkBrand() {
        guard ftypPayload.count >= 4 else {
            failure = "is a damaged HEIF file: its ftyp box names no brand"
            return
        }
        var named: [String] = [String(decoding: ftypPayload[0..<4], as: UTF8.self)]
        var at = 8
        while at + 4 <= ftypPayload.count {
            named.append(String(decoding: ftypPayload[at..<(at + 4)], as: UTF8.self))
            at += 4
        }
        if !named.contains(where: Self.brands.contains) {
            failure = "is an ISO media file but not a HEIF image (brand '\(HeaderBytes.printable(named[0]))')"
        }
    }
}

// MARK: WebP

/// A WebP file is one RIFF chunk: `RIFF`, its length, `WEBP`; whole when
/// the file ends exactly where that length says (RIFF pads to even).
struct WebPWalk: Sendable {
    private var header: [UInt8] = []
    private var total: UInt64?
    private var seen: UInt64 = 0
    private(set) var failure: String?

    var verdict: ReceiptVerdict {
        if let failure { return .invalid(reason: failure) }
        guard let total, seen == total else { return .truncated(.webp, reason: "is truncated: a WebP file that ends before its RIFF chunk does") }
        return .complete(.webp)
    }

    mutating func feed(_ bytes: UnsafeRawBufferPointer) {
        seen += UInt64(bytes.count)
        if header.count < 12 { header.append(contentsOf: bytes.prefix(12 - header.count)) }
        if total == nil, header.count == 12 {
            guard header[0..<4].elementsEqual("RIFF".utf8), header[8..<12].elementsEqual("WEBP".utf8) else {
                failure = ReceiptValidator.notAReceipt
                return
            }
            let length = HeaderBytes(bytes: header, bigEndian: false).uint(4, 4)
            total = length + (length & 1) + 8
        }
        if let total, seen > total { failure = "is a damaged WebP file: bytes follow its RIFF chunk" }
    }
}

// MARK: PNM

/// A binary Netpbm image (P4 bitmap, P5 graymap, P6 pixmap, as scanners
/// write them): a text header of width, height and (but for P4) the
/// largest value, then exactly the raster those imply. The plain (ASCII)
/// variants are refused: where they end cannot be told from the header.
struct PNMWalk: Sendable {
    private var header: [UInt8] = []
    private var raster: UInt64?
    private var seen: UInt64 = 0
    private(set) var failure: String?

    var verdict: ReceiptVerdict {
        if let failure { return .invalid(reason: failure) }
        guard let raster, seen == raster else { return .truncated(.pnm, reason: "is truncated: a PNM image that ends before its raster does") }
        return .complete(.pnm)
    }

    mutating func feed(_ bytes: UnsafeRawBufferPointer) {
        var i = 0
        while raster == nil && i < bytes.count && failure == nil {
            header.append(bytes[i])
            i += 1
            parseHeader()
            if header.count > 1024 && raster == nil && failure == nil { failure = "is a damaged PNM image: its header runs past 1 KiB" }
        }
        seen += UInt64(bytes.count - i)
        if let raster, seen > raster { failure = "is a damaged PNM image: bytes follow its raster" }
    }

    /// Once the header's last number and the one whitespace byte after it have arrived, sets `raster`.
    private mutating func parseHeader() {
        guard header.count >= 2 else { return }
        guard header[0] == UInt8(ascii: "P"), let variant = [UInt8(ascii: "4"): 4, UInt8(ascii: "5"): 5, UInt8(ascii: "6"): 6][header[1]] else {
            if header[0] == UInt8(ascii: "P"), (UInt8(ascii: "1")...UInt8(ascii: "3")).contains(header[1]) {
                failure = "is a plain (ASCII) PNM image, which is not taken: save it as binary (P4, P5 or P6)"
            } else {
                failure = ReceiptValidator.notAReceipt
            }
            return
        }
        // Tokens: numbers separated by whitespace, '#' comments to the end of a line.
        var numbers: [UInt64] = []
        var current: UInt64?
        var inComment = false
        var endedAt: Int?
        let wanted = variant == 4 ? 2 : 3
        for (offset, byte) in header.enumerated().dropFirst(2) {
            if inComment {
                if byte == 0x0A || byte == 0x0D { inComment = false }
                continue
            }
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"):
                current = (current ?? 0) &* 10 &+ UInt64(byte - UInt8(ascii: "0"))
                if current! > 1 << 32 { failure = "is a damaged PNM image: a header number is too large"; return }
            case UInt8(ascii: "#"):
                if current != nil { failure = "is a damaged PNM image: a comment inside a number"; return }
                inComment = true
            case 0x20, 0x09, 0x0A, 0x0D, 0x0B, 0x0C:
                if let value = current {
                    numbers.append(value)
                    current = nil
                    if numbers.count == wanted { endedAt = offset }
                }
            default:
                if offset == 2 || numbers.count < wanted { failure = "is a damaged PNM image: its header holds '\(Character(Unicode.Scalar(byte)))'"; return }
            }
            if endedAt != nil { break }
        }
        guard endedAt != nil else { return }
        let (width, height) = (numbers[0], numbers[1])
        guard width > 0, height > 0 else { failure = "is a damaged PNM image: it is 0 pixels wide or high"; return }
        let maxValue = variant == 4 ? 1 : numbers[2]
        guard maxValue >= 1, maxValue <= 65535 else { failure = "is a damaged PNM image: its largest value is \(maxValue)"; return }
        let sampleBytes: UInt64 = maxValue > 255 ? 2 : 1
        // Each number is at most 2³²: their product may not fit 64 bits.
        let row = variant == 4 ? (width + 7) / 8 : width * (variant == 5 ? 1 : 3) * sampleBytes
        let (total, overflow) = row.multipliedReportingOverflow(by: height)
        guard !overflow else { failure = "is a damaged PNM image: \(width) × \(height) is too large"; return }
        raster = total
    }
}

// MARK: BMP

/// A Windows bitmap: `BM`, the file's size, and where its pixels start;
/// whole when at least that size has arrived and the pixels start inside
/// it (some writers pad after the declared size, which is allowed).
struct BMPWalk: Sendable {
    private var header: [UInt8] = []
    private var declared: UInt64?
    private var seen: UInt64 = 0
    private(set) var failure: String?

    var verdict: ReceiptVerdict {
        if let failure { return .invalid(reason: failure) }
        guard let declared, seen >= declared else { return .truncated(.bmp, reason: "is truncated: a BMP file shorter than the size its header gives") }
        return .complete(.bmp)
    }

    mutating func feed(_ bytes: UnsafeRawBufferPointer) {
        seen += UInt64(bytes.count)
        if header.count < 14 { header.append(contentsOf: bytes.prefix(14 - header.count)) }
        guard declared == nil, header.count == 14 else { return }
        guard header[0] == UInt8(ascii: "B"), header[1] == UInt8(ascii: "M") else {
            failure = ReceiptValidator.notAReceipt
            return
        }
        let fields = HeaderBytes(bytes: header, bigEndian: false)
        let size = fields.uint(2, 4), pixels = fields.uint(10, 4)
        guard size >= 26, pixels >= 26, pixels < size else {
            failure = "is a damaged BMP file: its header gives size \(size) with pixels at \(pixels)"
            return
        }
        declared = size
    }
}

// MARK: TIFF

/// A TIFF's first eight bytes: the byte order (`II` or `MM`), 42, and the
/// first IFD's offset. Where the rest is cannot be told in one pass (IFDs
/// and strips point anywhere), so the whole file is checked after it was
/// read, by ``TIFFLayout``.
struct TIFFWalk: Sendable {
    private var header: [UInt8] = []
    private(set) var failure: String?

    var verdict: ReceiptVerdict {
        if let failure { return .invalid(reason: failure) }
        guard header.count == 8 else { return .truncated(.tiff, reason: "is truncated: a TIFF file shorter than its header") }
        return .complete(.tiff)
    }

    mutating func feed(_ bytes: UnsafeRawBufferPointer) {
        guard header.count < 8 else { return }
        header.append(contentsOf: bytes.prefix(8 - header.count))
        guard header.count >= 4 else { return }
        let little: [UInt8] = [0x49, 0x49, 0x2A, 0x00], big: [UInt8] = [0x4D, 0x4D, 0x00, 0x2A]
        if !header.starts(with: little) && !header.starts(with: big) { failure = ReceiptValidator.notAReceipt }
    }
}

/// Checks that a TIFF file holds everything its IFDs point to: each IFD
/// of the chain, each strip or tile, every value stored out of line, all
/// inside the file, and the chain ending (no loop), within `maxPages`
/// pages. Reads only what it needs, through `read(offset, count)`.
public enum TIFFLayout {
    /// More pages than a receipt has: a file of 10,000 pages is refused here.
    public static let maxPages = 100

    public static func check<Failure: Error>(size: Int64, read: (Int64, Int) throws(Failure) -> [UInt8]) throws(Failure) -> ReceiptVerdict {
        let head = try read(0, 8)
        guard head.count == 8 else { return .truncated(.tiff, reason: "is truncated: a TIFF file shorter than its header") }
        let little = head[0] == 0x49
        func number(_ bytes: [UInt8], _ at: Int, _ width: Int) -> UInt64 { HeaderBytes(bytes: bytes, bigEndian: !little).uint(at, width) }
        let fileSize = UInt64(size)
        var next = number(head, 4, 4)
        var visited: Set<UInt64> = []
        var pages = 0
        while next != 0 {
            guard !visited.contains(next) else { return .invalid(reason: "is a damaged TIFF file: its IFDs form a loop") }
            visited.insert(next)
            pages += 1
            guard pages <= maxPages else { return .invalid(reason: "is a TIFF file of more than \(maxPages) pages") }
            guard next + 2 <= fileSize else { return .truncated(.tiff, reason: "is truncated: a TIFF file whose IFD at \(next) is past its end") }
            let entries = number(try read(Int64(next), 2), 0, 2)
            let length = 2 + Int(entries) * 12 + 4
            guard next + UInt64(length) <= fileSize else { return .truncated(.tiff, reason: "is truncated: a TIFF file whose IFD at \(next) runs past its end") }
            let ifd = try read(Int64(next), length)
            guard ifd.count == length else { return .truncated(.tiff, reason: "is truncated: a TIFF file whose IFD at \(next) runs past its end") }
            var offsets: [UInt64] = [], counts: [UInt64] = []
            for e in 0..<Int(entries) {
                let at = 2 + e * 12
                let tag = number(ifd, at, 2), type = number(ifd, at + 2, 2), count = number(ifd, at + 4, 4)
                let width: UInt64 = [1: 1, 2: 1, 3: 2, 4: 4, 5: 8, 6: 1, 7: 1, 8: 2, 9: 4, 10: 8, 11: 4, 12: 8, 16: 8][type] ?? 1
                let bytes = count * width
                var values: [UInt64]
                if bytes <= 4 {
                    values = (0..<Int(count)).map { number(ifd, at + 8 + $0 * Int(width), Int(width)) }
                } else {
                    let valueOffset = number(ifd, at + 8, 4)
                    guard valueOffset + bytes <= fileSize else {
                        return .truncated(.tiff, reason: "is truncated: a TIFF file whose tag \(tag) points past its end")
                    }
                    values = []
                    if [273, 279, 324, 325].contains(tag), width <= 4, count <= 1_000_000 {
                        let stored = try read(Int64(valueOffset), Int(bytes))
                        values = (0..<Int(count)).map { number(stored, $0 * Int(width), Int(width)) }
                    }
                }
                switch tag {
                case 273, 324: offsets = values  // StripOffsets, TileOffsets
                case 279, 325: counts = values   // StripByteCounts, TileByteCounts
                default: break
                }
            }
            guard !offsets.isEmpty, offsets.count == counts.count else {
                return .invalid(reason: "is a damaged TIFF file: page \(pages) has no strips or tiles it can be read from")
            }
            for (offset, count) in zip(offsets, counts) where offset + count > fileSize {
                return .truncated(.tiff, reason: "is truncated: a TIFF file whose page \(pages) has image data past its end")
            }
            next = number(ifd, length - 4, 4)
        }
        return pages == 0 ? .invalid(reason: "is a damaged TIFF file: it has no IFD") : .complete(.tiff)
    }
}
