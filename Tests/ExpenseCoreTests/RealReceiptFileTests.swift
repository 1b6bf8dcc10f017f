import ExpenseCore
import ExpenseTestSupport
import Foundation
import Testing

/// Files as a phone, a scanner and a PDF printer make them (ImageMagick,
/// img2pdf and Ghostscript from Debian, run here) are whole receipts, and
/// each cut short is truncated, whatever chunks its bytes come in.
@Suite struct RealReceiptFileTests {
    let directory = TemporaryDirectory(prefix: "receipt-files")

    func bytes(_ name: String) throws -> [UInt8] {
        guard let data = FileManager.default.contents(atPath: directory.at(name)) else { throw TestFailure("\(name) was not made") }
        return [UInt8](data)
    }

    func makeFiles() throws -> [(String, ReceiptKind)] { try RealReceiptFiles.make(in: directory) }

    @Test func filesFromAPhoneAScannerAndAPDFPrinter_areWhole_andCutShort_areTruncated() throws {
        let files = try makeFiles()
        let phone = try bytes("phone.jpg")
        #expect((1..<phone.count).contains { phone[$0 - 1] == 0xFF && phone[$0] == 0xD8 && $0 > 1 },
                "the EXIF thumbnail's own SOI is inside the photo")
        var generator = SystemRandomNumberGenerator()
        for (name, kind) in files {
            let whole = try bytes(name)
            #expect(ReceiptValidator.check(whole) == .complete(kind), "\(name)")
            #expect(ReceiptKind.detect(whole) == kind, "\(name)")
            if kind == .tiff { #expect(Self.layout(whole) == .complete(.tiff), "\(name)") }
            // In chunks of random sizes, as reads return them.
            var validator = ReceiptValidator()
            var start = 0
            while start < whole.count {
                let end = min(whole.count, start + Int.random(in: 1...70_000, using: &generator))
                validator.append(contentsOf: whole[start..<end])
                start = end
            }
            #expect(validator.verdict == .complete(kind), "\(name) in random chunks")
            // Cut: at half, and just before the end marker.
            let endMarker: Int
            switch kind {
            case .jpeg: endMarker = name == "phone-trailer.jpg" ? phone.count - 2 : whole.count - 2
            case .png: endMarker = whole.count - 12
            case .pdf: endMarker = Self.lastIndex(of: Array("%%EOF".utf8), in: whole) ?? 0
            case .heif, .webp, .tiff, .pnm, .bmp: endMarker = whole.count - 1
            }
            for cut in [whole.count / 2, endMarker] {
                // A TIFF's streaming check sees its header only; the layout check sees the rest.
                let verdict = kind == .tiff ? Self.layout(Array(whole[0..<cut])) : ReceiptValidator.check(whole[0..<cut])
                guard case .truncated(kind, _) = verdict else {
                    Issue.record("\(name) cut at \(cut) of \(whole.count): \(verdict)")
                    continue
                }
            }
        }
    }

    static func layout(_ bytes: [UInt8]) -> ReceiptVerdict {
        TIFFLayout.check(size: Int64(bytes.count)) { at, count in Array(bytes[min(Int(at), bytes.count)..<min(Int(at) + count, bytes.count)]) }
    }

    static func lastIndex(of needle: [UInt8], in haystack: [UInt8]) -> Int? {
        stride(from: haystack.count - needle.count, through: 0, by: -1).first { Array(haystack[$0..<($0 + needle.count)]) == needle }
    }
}
