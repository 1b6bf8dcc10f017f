import ExpenseCore
import Foundation
import Synchronization

/// Receipts whose structure is complete, each with bytes no other one has:
/// a JPEG made by ImageMagick with comment segments (the tag and filler)
/// inserted after its SOI, a PDF with its objects, cross-reference table,
/// `startxref` and `%%EOF`, and PNGs made by ImageMagick in batches, each
/// of another colour. For tests that must tell receipts apart by their
/// digest and that any structural check of a receipt accepts.
public final class WholeReceipts: Sendable {
    private let directory: String
    private let jpegBase: [UInt8]
    private let pngs = Mutex<(pool: [[UInt8]], batches: Int)>(([], 0))

    /// ImageMagick's `convert`; `/usr/local/bin/convert` on these machines is not it.
    public static let convert = "/usr/bin/convert"

    /// - Parameter directory: where ImageMagick writes its files.
    public init(directory: String) throws {
        self.directory = directory
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let base = "\(directory)/base.jpg"
        try Self.run([Self.convert, "-size", "48x32", "gradient:#204080-#e0c040", base])
        guard let bytes = FileManager.default.contents(atPath: base), bytes.starts(with: [0xFF, 0xD8]) else {
            throw TestFailure("ImageMagick made no JPEG at \(base)")
        }
        jpegBase = [UInt8](bytes)
    }

    /// A receipt of `kind`, about `size` bytes (a PNG is as small as ImageMagick makes it).
    public func make(_ kind: ReceiptKind, tag: Int, size: Int) throws -> [UInt8] {
        switch kind {
        case .jpeg: jpeg(tag: tag, size: size)
        case .pdf: pdf(tag: tag, size: size)
        case .png: try png()
        default: throw TestFailure("WholeReceipts makes JPEG, PNG and PDF files, not \(kind)")
        }
    }

    /// The base JPEG with `COM` segments after its SOI: the tag first, then
    /// filler up to `size` bytes. Segments walk from SOI to EOI as before.
    public func jpeg(tag: Int, size: Int) -> [UInt8] {
        var filler = SeededRandom(seed: UInt64(truncatingIfNeeded: tag) &+ 0x4A50_4547)
        var payloads = [Array("whole receipt \(tag)".utf8)]
        var remaining = size - jpegBase.count - payloads[0].count - 4
        while remaining > 4 {
            let count = min(remaining - 4, 65_533)
            payloads.append((0..<count).map { _ in UInt8(truncatingIfNeeded: filler.next()) })
            remaining -= count + 4
        }
        var bytes = Array(jpegBase.prefix(2))
        for payload in payloads {
            let length = payload.count + 2
            bytes += [0xFF, 0xFE, UInt8(length >> 8), UInt8(length & 0xFF)] + payload
        }
        return bytes + jpegBase.dropFirst(2)
    }

    /// A one-page PDF that draws a rectangle, with a content stream naming
    /// the tag and an unreferenced stream of filler up to `size` bytes.
    public func pdf(tag: Int, size: Int) -> [UInt8] {
        var filler = SeededRandom(seed: UInt64(truncatingIfNeeded: tag) &+ 0x5044_46)
        let content = Array("% whole receipt \(tag)\n0.2 0.4 0.6 rg 10 10 180 80 re f\n".utf8)
        let fillerCount = max(0, size - 600)
        let objects: [[UInt8]] = [
            Array("<< /Type /Catalog /Pages 2 0 R >>".utf8),
            Array("<< /Type /Pages /Kids [3 0 R] /Count 1 >>".utf8),
            Array("<< /Type /Page /Parent 2 0 R /MediaBox [0 0 200 100] /Contents 4 0 R >>".utf8),
            Array("<< /Length \(content.count) >>\nstream\n".utf8) + content + Array("\nendstream".utf8),
            Array("<< /Length \(fillerCount) >>\nstream\n".utf8) + (0..<fillerCount).map { _ in UInt8(truncatingIfNeeded: filler.next()) }
                + Array("\nendstream".utf8),
        ]
        var bytes = Array("%PDF-1.4\n%\u{E2}\u{E3}\u{CF}\u{D3}\n".utf8)
        var offsets: [Int] = []
        for (index, object) in objects.enumerated() {
            offsets.append(bytes.count)
            bytes += Array("\(index + 1) 0 obj\n".utf8) + object + Array("\nendobj\n".utf8)
        }
        let xref = bytes.count
        // Each entry is exactly 20 bytes, ending in space and newline (PDF 1.7, 7.5.4).
        var table = "xref\n0 \(objects.count + 1)\n0000000000 65535 f \n"
        for offset in offsets { table += String(repeating: "0", count: 10 - String(offset).count) + "\(offset) 00000 n \n" }
        table += "trailer\n<< /Size \(objects.count + 1) /Root 1 0 R >>\nstartxref\n\(xref)\n%%EOF\n"
        return bytes + Array(table.utf8)
    }

    /// The next PNG of the pool, which ImageMagick refills 200 at a time.
    public func png() throws -> [UInt8] {
        try pngs.withLock { state in
            if state.pool.isEmpty {
                state.batches += 1
                state.pool = try makePNGs(batch: state.batches)
            }
            return state.pool.removeLast()
        }
    }

    /// 200 PNGs of 16×12 pixels, each a different colour with noise on it.
    private func makePNGs(batch: Int) throws -> [[UInt8]] {
        let count = 200
        let folder = "\(directory)/png-\(batch)"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        let colours = (0..<count).map { index -> String in
            let value = ((batch * count + index) &* 0x9E_3779) & 0xFF_FFFF
            let hex = String(value, radix: 16)
            return "xc:#" + String(repeating: "0", count: 6 - hex.count) + hex
        }
        try Self.run([Self.convert, "-size", "16x12"] + colours + ["+noise", "Gaussian", "+adjoin", "\(folder)/%03d.png"])
        let files = try FileManager.default.contentsOfDirectory(atPath: folder).sorted()
        let made = files.compactMap { FileManager.default.contents(atPath: "\(folder)/\($0)").map { [UInt8]($0) } }
        guard made.count == count else { throw TestFailure("ImageMagick made \(made.count) of \(count) PNGs in \(folder)") }
        return made
    }

    private static func run(_ command: [String]) throws {
        let result = try runCommand(command[0], Array(command.dropFirst()))
        guard result.status == 0 else { throw TestFailure("\(command[0]) failed (\(result.status)): \(result.stderr)") }
    }
}
