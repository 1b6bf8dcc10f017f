import ExpenseCore

/// Whole receipt files of a given size, for tests and benchmarks: a 1×1
/// image that ImageMagick wrote (or a one-page PDF), padded to the size
/// in a way its format allows (comment segments in a JPEG, a private
/// ancillary chunk in a PNG, a comment line in a PDF), so that every
/// reader opens them and ``ReceiptValidator`` finds them complete. The
/// padding starts with `label` and goes on with `filler`, so that files
/// with different labels or fillers differ.
public enum ReceiptBytes {
    public static func make(_ kind: ReceiptKind, size: Int, label: String = "", filler: @escaping (Int) -> UInt8 = { UInt8(truncatingIfNeeded: $0) }) -> [UInt8] {
        var padding = PaddingStream(label: Array(label.utf8), filler: filler)
        switch kind {
        case .jpeg: return jpeg(size: size, padding: &padding)
        case .png: return png(size: size, padding: &padding)
        case .pdf: return pdf(size: size, padding: &padding)
        default: preconditionFailure("ReceiptBytes pads JPEG, PNG and PDF files, not \(kind)")
        }
    }

    /// `/usr/bin/convert -size 1x1 xc:white -strip -quality 90 tiny.jpg`
    static let tinyJPEG: [UInt8] = [
        0xFF, 0xD8, 0xFF, 0xE0, 0x00, 0x10, 0x4A, 0x46, 0x49, 0x46, 0x00, 0x01, 0x01, 0x00, 0x00, 0x01, 0x00, 0x01, 0x00, 0x00,
        0xFF, 0xDB, 0x00, 0x43, 0x00, 0x03, 0x02, 0x02, 0x03, 0x02, 0x02, 0x03, 0x03, 0x03, 0x03, 0x04, 0x03, 0x03, 0x04, 0x05,
        0x08, 0x05, 0x05, 0x04, 0x04, 0x05, 0x0A, 0x07, 0x07, 0x06, 0x08, 0x0C, 0x0A, 0x0C, 0x0C, 0x0B, 0x0A, 0x0B, 0x0B, 0x0D,
        0x0E, 0x12, 0x10, 0x0D, 0x0E, 0x11, 0x0E, 0x0B, 0x0B, 0x10, 0x16, 0x10, 0x11, 0x13, 0x14, 0x15, 0x15, 0x15, 0x0C, 0x0F,
        0x17, 0x18, 0x16, 0x14, 0x18, 0x12, 0x14, 0x15, 0x14, 0xFF, 0xC0, 0x00, 0x0B, 0x08, 0x00, 0x01, 0x00, 0x01, 0x01, 0x01,
        0x11, 0x00, 0xFF, 0xC4, 0x00, 0x14, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
        0x00, 0x00, 0x00, 0x09, 0xFF, 0xC4, 0x00, 0x14, 0x10, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0xFF, 0xDA, 0x00, 0x08, 0x01, 0x01, 0x00, 0x00, 0x3F, 0x00, 0x54, 0xDF, 0xFF, 0xD9,
    ]

    /// `/usr/bin/convert -size 1x1 xc:white -strip tiny.png`
    static let tinyPNG: [UInt8] = [
        0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A, 0x00, 0x00, 0x00, 0x0D, 0x49, 0x48, 0x44, 0x52, 0x00, 0x00, 0x00, 0x01,
        0x00, 0x00, 0x00, 0x01, 0x01, 0x00, 0x00, 0x00, 0x00, 0x37, 0x6E, 0xF9, 0x24, 0x00, 0x00, 0x00, 0x0A, 0x49, 0x44, 0x41,
        0x54, 0x08, 0xD7, 0x63, 0x68, 0x00, 0x00, 0x00, 0x82, 0x00, 0x81, 0xDD, 0x43, 0x6A, 0xF4, 0x00, 0x00, 0x00, 0x00, 0x49,
        0x45, 0x4E, 0x44, 0xAE, 0x42, 0x60, 0x82,
    ]

    /// The tiny PNG's signature, its signature and IHDR, and its IEND chunk.
    public static let tinyPNGParts = (signature: Array(tinyPNG[0..<8]), head: Array(tinyPNG[0..<33]), iend: Array(tinyPNG[55...]))

    /// SOI, then comment segments (COM, at most 65,537 bytes each) up to
    /// the size, then the image; a remainder too small for a segment goes
    /// after EOI, where bytes are allowed.
    private static func jpeg(size: Int, padding: inout PaddingStream) -> [UInt8] {
        var bytes = Array(tinyJPEG[0..<2])
        var remaining = max(size - tinyJPEG.count, min(4 + padding.label.count, 65537))
        while remaining >= 4 {
            var total = min(remaining, 65537)
            if (1...3).contains(remaining - total) { total -= 4 }
            bytes += [0xFF, 0xFE, UInt8((total - 2) >> 8), UInt8((total - 2) & 0xFF)]
            bytes += padding.next(total - 4)
            remaining -= total
        }
        bytes += tinyJPEG[2...]
        bytes += padding.next(remaining)
        return bytes
    }

    /// Signature and IHDR, then a private ancillary chunk (`exPd`, which
    /// readers skip) up to the size, then IDAT and IEND; a remainder too
    /// small for a chunk goes after IEND.
    private static func png(size: Int, padding: inout PaddingStream) -> [UInt8] {
        var bytes = Array(tinyPNG[0..<33])
        var remaining = max(size - tinyPNG.count, min(12 + padding.label.count, 12 + 65536))
        if remaining >= 12 {
            let data = padding.next(remaining - 12)
            let type = Array("exPd".utf8)
            bytes += bigEndian(UInt32(data.count)) + type + data + bigEndian(CRC32.checksum(type + data))
            remaining = 0
        }
        bytes += tinyPNG[33...]
        bytes += padding.next(remaining)
        return bytes
    }

    /// A one-page PDF with a comment line after its header, long enough
    /// for the size; its cross-reference table and `startxref` right.
    private static func pdf(size: Int, padding: inout PaddingStream) -> [UInt8] {
        let objects = [
            "<< /Type /Catalog /Pages 2 0 R >>",
            "<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
            "<< /Type /Page /Parent 2 0 R /MediaBox [0 0 72 72] >>",
        ]
        func build(comment: [UInt8]) -> [UInt8] {
            var bytes = Array("%PDF-1.7\n%".utf8) + comment + [0x0A]
            var offsets: [Int] = []
            for (index, object) in objects.enumerated() {
                offsets.append(bytes.count)
                bytes += Array("\(index + 1) 0 obj\n\(object)\nendobj\n".utf8)
            }
            let xref = bytes.count
            var table = "xref\n0 \(objects.count + 1)\n0000000000 65535 f \n"
            for offset in offsets { table += String(repeating: "0", count: 10 - String(offset).count) + "\(offset) 00000 n \n" }
            table += "trailer\n<< /Size \(objects.count + 1) /Root 1 0 R >>\nstartxref\n\(xref)\n%%EOF\n"
            return bytes + Array(table.utf8)
        }
        // A comment is one line: printable, no line end in it.
        let label = padding.label.map { (0x20...0x7E).contains($0) ? $0 : UInt8(ascii: "_") }
        func built(_ fill: Int) -> [UInt8] { build(comment: label + padding.printable(fill)) }
        // Only startxref's number changes length (offsets in the table are
        // ten digits): a step or two converges, or ends one byte over.
        var fill = max(0, size - built(0).count)
        var bytes = built(fill)
        for _ in 0..<3 where bytes.count != size && fill + size - bytes.count >= 0 {
            fill += size - bytes.count
            bytes = built(fill)
        }
        return bytes
    }

    private static func bigEndian(_ value: UInt32) -> [UInt8] {
        [UInt8(value >> 24), UInt8((value >> 16) & 0xFF), UInt8((value >> 8) & 0xFF), UInt8(value & 0xFF)]
    }
}

/// The padding's bytes: the label, then the filler.
private struct PaddingStream {
    let label: [UInt8]
    let filler: (Int) -> UInt8
    private var position = 0

    init(label: [UInt8], filler: @escaping (Int) -> UInt8) {
        self.label = label
        self.filler = filler
    }

    mutating func next(_ count: Int) -> [UInt8] {
        let bytes = (position..<(position + max(0, count))).map { $0 < label.count ? label[$0] : filler($0 - label.count) }
        position += max(0, count)
        return bytes
    }

    /// `count` filler bytes made printable ASCII.
    func printable(_ count: Int) -> [UInt8] {
        (0..<max(0, count)).map { 0x21 + filler($0) % 94 }
    }
}
