import ExpenseCore
import ExpenseTestSupport
import Foundation
import Testing

/// The receipt check: whole files pass, whatever chunks they arrive in;
/// cut ones are truncated; damaged ones and other files are invalid.
@Suite struct ReceiptValidatorTests {
    /// Feeds `bytes` in chunks of `chunk` bytes.
    static func verdict(_ bytes: [UInt8], chunk: Int) -> ReceiptVerdict {
        var validator = ReceiptValidator()
        var start = 0
        while start < bytes.count {
            validator.append(contentsOf: bytes[start..<min(bytes.count, start + chunk)])
            start += chunk
        }
        #expect(validator.byteCount == Int64(bytes.count))
        return validator.verdict
    }

    /// The verdict, the same whether the bytes come at once, one by one,
    /// or in chunks of a few sizes.
    static func verdictInAnyChunks(_ bytes: [UInt8], sourceLocation: SourceLocation = #_sourceLocation) -> ReceiptVerdict {
        let whole = ReceiptValidator.check(bytes)
        for chunk in [1, 2, 3, 7, 64, 4096, 65_536] where chunk < bytes.count {
            #expect(verdict(bytes, chunk: chunk) == whole, "in chunks of \(chunk)", sourceLocation: sourceLocation)
        }
        return whole
    }

    static var jpeg: [UInt8] { ReceiptBytes.make(.jpeg, size: 3000, label: "a") }
    static var png: [UInt8] { ReceiptBytes.make(.png, size: 3000, label: "a") }
    static var pdf: [UInt8] { ReceiptBytes.make(.pdf, size: 3000, label: "a") }

    @Test func crc32_matchesTheStandardCheckValue() {
        #expect(CRC32.checksum(Array("123456789".utf8)) == 0xCBF4_3926)
        #expect(CRC32.checksum([UInt8]()) == 0)
        var split = CRC32()
        split.update(Array("1234".utf8))
        split.update(Array("56789".utf8))
        #expect(split.value == 0xCBF4_3926)
    }

    @Test(arguments: [(ReceiptKind.jpeg, 1), (.jpeg, 2048), (.jpeg, 65_541), (.jpeg, 200 * 1024),
                      (.png, 1), (.png, 2048), (.png, 70_000), (.pdf, 1), (.pdf, 2048), (.pdf, 200 * 1024)])
    func sampleFiles_ofEveryKindAndSize_areComplete(_ kind: ReceiptKind, size: Int) {
        let bytes = ReceiptBytes.make(kind, size: size, label: "sample")
        #expect(Self.verdictInAnyChunks(bytes) == .complete(kind))
        if size > 1000 { #expect(bytes.count == size) }
    }

    @Test(arguments: [ReceiptKind.jpeg, .png])
    func everyCutOfAWholeImage_isTruncated(_ kind: ReceiptKind) {
        let bytes = kind == .jpeg ? Self.jpeg : Self.png
        for length in 1..<bytes.count {
            let verdict = ReceiptValidator.check(bytes[0..<length])
            guard case .truncated(kind, _) = verdict else {
                Issue.record("\(length) of \(bytes.count) bytes: \(verdict)")
                return
            }
        }
    }

    @Test func aPDFCutBeforeItsEnd_isTruncated_andComplete_fromItsEOFMarkerOn() {
        let bytes = Self.pdf
        let eof = bytes.count - 6  // "%%EOF\n"
        #expect(Array(bytes[eof..<(eof + 5)]) == Array("%%EOF".utf8))
        for length in 1..<bytes.count {
            let verdict = ReceiptValidator.check(bytes[0..<length])
            if length >= eof + 5 {
                #expect(verdict == .complete(.pdf), "\(length)")
            } else if case .truncated(.pdf, _) = verdict {
            } else {
                Issue.record("\(length) of \(bytes.count) bytes: \(verdict)")
            }
        }
    }

    @Test func reasons_sayWhatIsWrong() {
        #expect(ReceiptValidator.check([0xFF, 0xD8, 0xFF]).reason == "is truncated: a JPEG that ends before its end-of-image marker")
        #expect(ReceiptValidator.check(Self.png.dropLast(5)).reason == "is truncated: a PNG that ends before its IEND chunk")
        #expect(ReceiptValidator.check(Array("%PDF-1.4\n1 0 obj".utf8)).reason == "is truncated: a PDF without %%EOF in its last kilobyte")
        #expect(ReceiptValidator.check([UInt8]()) == .invalid(reason: "is empty"))
        #expect(ReceiptValidator.check(Self.jpeg).reason == nil)
    }

    static func replacing(_ bytes: [UInt8], _ old: [UInt8], with new: [UInt8]) -> [UInt8] {
        guard let start = (0...(bytes.count - old.count)).first(where: { Array(bytes[$0..<($0 + old.count)]) == old }) else {
            return bytes
        }
        return Array(bytes[..<start]) + new + Array(bytes[(start + old.count)...])
    }

    /// Files that are not receipts, or damaged ones, with the start of the reason.
    static let invalid: [(String, [UInt8], String)] = [
        ("a GIF", Array("GIF89a\u{1}\u{0}\u{1}\u{0}".utf8), "is not a JPEG, PNG, PDF, HEIF, WebP, TIFF, PNM or BMP file"),
        ("UTF-16 text", [0xFF, 0xFE, 0x41, 0x00], "is not a JPEG, PNG, PDF, HEIF, WebP, TIFF, PNM or BMP file"),
        ("PostScript", Array("%!PS-Adobe-3.0\n".utf8), "is not a JPEG, PNG, PDF, HEIF, WebP, TIFF, PNM or BMP file"),
        ("a PNG signature cut wrong", [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x0A, 0x0A], "is not a JPEG, PNG, PDF, HEIF, WebP, TIFF, PNM or BMP file"),
        ("JPEG: SOI then EOI", [0xFF, 0xD8, 0xFF, 0xD9], "is a damaged JPEG: its end-of-image marker comes before any image data"),
        ("JPEG: two SOIs", [0xFF, 0xD8, 0xFF, 0xD8], "is a damaged JPEG: a second start-of-image marker"),
        ("JPEG: no marker after a segment", [0xFF, 0xD8, 0xFF, 0xFE, 0x00, 0x03, 0x41, 0x42], "is a damaged JPEG: no marker where"),
        ("JPEG: a length under 2", [0xFF, 0xD8, 0xFF, 0xFE, 0x00, 0x01], "is a damaged JPEG: segment length 1"),
        ("JPEG: 0xFF 0x00 for a marker", [0xFF, 0xD8, 0xFF, 0x00], "is a damaged JPEG: no marker code"),
        ("JPEG: a scan before the frame", replacing(jpeg, [0xFF, 0xC0, 0x00, 0x0B, 0x08, 0x00, 0x01, 0x00, 0x01, 0x01, 0x01, 0x11, 0x00], with: []),
         "is a damaged JPEG: a scan comes before its frame header"),
        ("PNG: a bit flipped in IDAT", replacing(png, [0x08, 0xD7, 0x63, 0x68], with: [0x08, 0xD7, 0x63, 0x69]),
         "is a damaged PNG: chunk 'IDAT' fails its CRC"),
        ("PNG: no IDAT", Array(ReceiptBytes.tinyPNGParts.head) + ReceiptBytes.tinyPNGParts.iend, "is a damaged PNG: it has no image data"),
        ("PNG: IHDR not first", ReceiptBytes.tinyPNGParts.signature + ReceiptBytes.tinyPNGParts.iend, "is a damaged PNG: it does not start with its IHDR"),
        ("PNG: a chunk type with a digit", replacing(png, Array("exPd".utf8), with: Array("ex1d".utf8)), "is a damaged PNG: a chunk type"),
        ("PDF: %%EOF without startxref", Array("%PDF-1.4\ntrailer\n<<>>\n%%EOF\n".utf8), "is a damaged PDF: no startxref"),
        ("ISO media that is a video", box("ftyp", Array("isom".utf8) + [0, 0, 2, 0] + Array("isommp41".utf8)) + box("meta", []),
         "is an ISO media file but not a HEIF image (brand 'isom')"),
        ("HEIF: a first box that is not ftyp", box("meta", []) + box("ftyp", Array("heic".utf8)), "is not a JPEG, PNG, PDF, HEIF"),
        ("HEIF: a box shorter than its header", box("ftyp", Array("heic".utf8)) + [0, 0, 0, 4] + Array("meta".utf8), "is a damaged HEIF file: box 'meta'"),
        ("WebP: bytes after its chunk", Array("RIFF".utf8) + [4, 0, 0, 0] + Array("WEBP".utf8) + [1, 2], "is a damaged WebP file: bytes follow"),
        ("WebP: RIFF of another kind", Array("RIFF".utf8) + [4, 0, 0, 0] + Array("WAVE".utf8), "is not a JPEG, PNG, PDF, HEIF"),
        ("PNM: plain (ASCII) graymap", Array("P2\n2 2\n255\n0 0 0 0\n".utf8), "is a plain (ASCII) PNM image"),
        ("PNM: bytes after its raster", Array("P5\n2 1\n255\n".utf8) + [1, 2, 3], "is a damaged PNM image: bytes follow its raster"),
        ("PNM: 0 pixels wide", Array("P6 0 5 255\n".utf8), "is a damaged PNM image: it is 0 pixels wide"),
        ("PNM: a size past 64 bits", Array("P6 4294967296 4294967296 65535\n".utf8), "is a damaged PNM image: 4294967296 × 4294967296 is too large"),
        ("PNM: a letter in its header", Array("P5\n2 x\n".utf8), "is a damaged PNM image: its header holds 'x'"),
        ("BMP: pixels past its size", Array("BM".utf8) + [40, 0, 0, 0, 0, 0, 0, 0, 64, 0, 0, 0], "is a damaged BMP file"),
        ("TIFF: a wrong byte order mark", Array("IM*\0".utf8) + [8, 0, 0, 0], "is not a JPEG, PNG, PDF, HEIF"),
    ]

    /// An ISO media box: size, type, payload.
    static func box(_ type: String, _ payload: [UInt8]) -> [UInt8] {
        let size = 8 + payload.count
        return [UInt8(size >> 24), UInt8(size >> 16 & 0xFF), UInt8(size >> 8 & 0xFF), UInt8(size & 0xFF)] + Array(type.utf8) + payload
    }

    /// Little-endian TIFF with `pages` one-strip pages, IFD `k` pointing to
    /// IFD `k+1` (the last to `last`), each strip one byte at offset 8.
    static func tiff(pages: Int, last: UInt32 = 0, stripBytes: UInt32 = 1) -> [UInt8] {
        func le16(_ v: Int) -> [UInt8] { [UInt8(v & 0xFF), UInt8(v >> 8 & 0xFF)] }
        func le32(_ v: UInt32) -> [UInt8] { le16(Int(v & 0xFFFF)) + le16(Int(v >> 16)) }
        let ifdLength = 2 + 2 * 12 + 4
        var bytes = Array("II*\0".utf8) + le32(12) + [0x7F, 0, 0, 0]
        for page in 0..<pages {
            let next = page == pages - 1 ? last : UInt32(12 + (page + 1) * ifdLength)
            bytes += le16(2) + le16(273) + le16(4) + le32(1) + le32(8) + le16(279) + le16(4) + le32(1) + le32(stripBytes) + le32(next)
        }
        return bytes
    }

    @Test func tiffLayouts_areCheckedToTheirEnd() {
        func layout(_ bytes: [UInt8]) -> ReceiptVerdict {
            TIFFLayout.check(size: Int64(bytes.count)) { at, count in Array(bytes[min(Int(at), bytes.count)..<min(Int(at) + count, bytes.count)]) }
        }
        #expect(layout(Self.tiff(pages: 1)) == .complete(.tiff))
        #expect(layout(Self.tiff(pages: 3)) == .complete(.tiff))
        #expect(layout(Self.tiff(pages: TIFFLayout.maxPages)) == .complete(.tiff))
        #expect(layout(Self.tiff(pages: 10_000)) == .invalid(reason: "is a TIFF file of more than \(TIFFLayout.maxPages) pages"))
        #expect(layout(Self.tiff(pages: 2, last: 12)) == .invalid(reason: "is a damaged TIFF file: its IFDs form a loop"))
        #expect(layout(Self.tiff(pages: 1, stripBytes: 5000)) == .truncated(.tiff, reason: "is truncated: a TIFF file whose page 1 has image data past its end"))
        #expect(layout(Self.tiff(pages: 1, last: 4000)) == .truncated(.tiff, reason: "is truncated: a TIFF file whose IFD at 4000 is past its end"))
        #expect(layout(Array(Self.tiff(pages: 1).dropLast(3))) == .truncated(.tiff, reason: "is truncated: a TIFF file whose IFD at 12 runs past its end"))
        #expect(ReceiptValidator.check(Self.tiff(pages: 1)) == .complete(.tiff), "the streaming check sees its header")
    }

    @Test(arguments: invalid.indices)
    func damagedFilesAndOthers_areInvalid_sayingWhy(_ index: Int) {
        let (what, bytes, reason) = Self.invalid[index]
        let verdict = Self.verdictInAnyChunks(bytes)
        guard case .invalid(let why) = verdict else {
            Issue.record("\(what): \(verdict)")
            return
        }
        #expect(why.hasPrefix(reason), "\(what): \(why)")
    }

    @Test func jpegOddities_thatAreValid_pass() {
        let jpeg = Self.jpeg
        // Fill bytes before a marker, restart markers and stuffed 0xFF in
        // the entropy-coded data, bytes after EOI.
        let filled = Self.replacing(jpeg, [0xFF, 0xC0], with: [0xFF, 0xFF, 0xFF, 0xC0])
        let scanned = Self.replacing(jpeg, [0x3F, 0x00, 0x54, 0xDF], with: [0x3F, 0x00, 0x54, 0xFF, 0x00, 0xFF, 0xD0, 0xDF, 0xFF, 0xFF, 0xD3, 0x12])
        for (what, bytes) in [("fill bytes", filled), ("stuffing and restarts", scanned), ("bytes after EOI", jpeg + [0, 1, 0xFF, 0xD8, 2])] {
            #expect(bytes != jpeg, "\(what) changed something")
            #expect(Self.verdictInAnyChunks(bytes) == .complete(.jpeg), "\(what)")
        }
    }

    /// A scan of 70,000 bytes (a photo's are most of it), its 0xFF stuffed
    /// or restarts at every place in a word and across the chunks' edges:
    /// whole in any chunks, and cut anywhere in it, truncated.
    @Test func aLongScan_isWalkedToItsEnd() {
        var entropy: [UInt8] = []
        var seed: UInt32 = 0x2545_F491
        while entropy.count < 70_000 {
            seed = seed &* 1_664_525 &+ 1_013_904_223
            let byte = UInt8(truncatingIfNeeded: seed >> 24)
            entropy.append(byte)
            if byte == 0xFF { entropy.append(entropy.count % 3 == 0 ? 0xD0 + UInt8(entropy.count % 8) : 0x00) }
        }
        #expect(entropy.filter { $0 == 0xFF }.count > 200)
        let jpeg = Self.replacing(Self.jpeg, [0x3F, 0x00, 0x54, 0xDF], with: [0x3F, 0x00] + entropy)
        #expect(jpeg.count > 70_000)
        #expect(Self.verdictInAnyChunks(jpeg) == .complete(.jpeg))
        for cut in [jpeg.count - 1, jpeg.count - 2, jpeg.count - 3, jpeg.count - 1000, jpeg.count / 2, 65_536, 4097, 4096] {
            guard case .truncated(.jpeg, _) = ReceiptValidator.check(jpeg[0..<cut]) else {
                Issue.record("cut at \(cut) of \(jpeg.count): \(ReceiptValidator.check(jpeg[0..<cut]))")
                continue
            }
        }
    }

    @Test func aPDFWhoseEOFIsFartherThanAKilobyteFromTheEnd_isNotComplete() {
        let bytes = Self.pdf + [UInt8](repeating: 0x20, count: 1100)
        #expect(ReceiptValidator.check(bytes).reason == "is truncated: a PDF without %%EOF in its last kilobyte")
        #expect(ReceiptValidator.check(Self.pdf + [UInt8](repeating: 0x20, count: 900)) == .complete(.pdf))
    }

    @Test func theKind_comesFromTheBytes() {
        #expect(ReceiptValidator.check(Self.jpeg) == .complete(.jpeg))
        #expect(ReceiptValidator.check(Self.png) == .complete(.png))
        #expect(ReceiptValidator.check(Self.pdf) == .complete(.pdf))
    }
}
