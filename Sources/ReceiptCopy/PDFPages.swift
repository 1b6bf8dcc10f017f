/// One PDF whose pages are JPEG images, each page the image's size at
/// 150 dpi: what a multi-page scan becomes. The JPEG bytes are embedded as
/// they are (`DCTDecode`), so nothing is encoded twice; the file is a
/// header, one catalog, one page tree, a page, its image and its content
/// stream per image, the cross-reference table and the trailer (PDF 1.4,
/// ISO 32000-1 §7.5).
public enum PDFPages {
    public struct Page: Sendable {
        public let jpeg: [UInt8]
        public let width: Int
        public let height: Int
        /// Gray (1) or RGB (3) JPEG.
        public let components: Int

        public init(jpeg: [UInt8], width: Int, height: Int, components: Int) {
            self.jpeg = jpeg
            self.width = width
            self.height = height
            self.components = components
        }
    }

    public static func make(_ pages: [Page]) -> [UInt8] {
        var out = Array("%PDF-1.4\n%\u{E2}\u{E3}\u{CF}\u{D3}\n".utf8)
        var offsets: [Int] = []
        func object(_ body: [UInt8]) {
            offsets.append(out.count)
            out += Array("\(offsets.count) 0 obj\n".utf8) + body + Array("\nendobj\n".utf8)
        }
        // Objects: 1 catalog, 2 page tree, then per page: page, image, content.
        let kids = pages.indices.map { "\(3 + $0 * 3) 0 R" }.joined(separator: " ")
        object(Array("<< /Type /Catalog /Pages 2 0 R >>".utf8))
        object(Array("<< /Type /Pages /Kids [\(kids)] /Count \(pages.count) >>".utf8))
        for (index, page) in pages.enumerated() {
            let first = 3 + index * 3
            // Points at 150 dpi: 72/150 of a pixel.
            let w = Double(page.width) * 72 / 150, h = Double(page.height) * 72 / 150
            let size = "\(format(w)) \(format(h))"
            object(Array("<< /Type /Page /Parent 2 0 R /MediaBox [0 0 \(size)] /Resources << /XObject << /Im0 \(first + 1) 0 R >> >> /Contents \(first + 2) 0 R >>".utf8))
            let space = page.components == 1 ? "/DeviceGray" : "/DeviceRGB"
            object(Array("<< /Type /XObject /Subtype /Image /Width \(page.width) /Height \(page.height) /ColorSpace \(space) /BitsPerComponent 8 /Filter /DCTDecode /Length \(page.jpeg.count) >>\nstream\n".utf8)
                   + page.jpeg + Array("\nendstream".utf8))
            let content = Array("q \(size.split(separator: " ")[0]) 0 0 \(size.split(separator: " ")[1]) 0 0 cm /Im0 Do Q".utf8)
            object(Array("<< /Length \(content.count) >>\nstream\n".utf8) + content + Array("\nendstream".utf8))
        }
        let xref = out.count
        out += Array("xref\n0 \(offsets.count + 1)\n0000000000 65535 f \n".utf8)
        for offset in offsets {
            let digits = String(offset)
            out += Array((String(repeating: "0", count: 10 - digits.count) + digits + " 00000 n \n").utf8)
        }
        out += Array("trailer\n<< /Size \(offsets.count + 1) /Root 1 0 R >>\nstartxref\n\(xref)\n%%EOF\n".utf8)
        return out
    }

    private static func format(_ value: Double) -> String {
        let hundredths = Int((value * 100).rounded())
        let fraction = hundredths % 100
        return "\(hundredths / 100).\(fraction < 10 ? "0" : "")\(fraction)"
    }
}
