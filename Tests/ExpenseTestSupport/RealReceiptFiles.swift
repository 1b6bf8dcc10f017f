import ExpenseCore
import Foundation
import Synchronization

/// Receipt files as a phone, a scanner and a PDF printer make them, made
/// here with Debian's ImageMagick, Ghostscript and img2pdf (installed by
/// `scripts/setup --test`).
public enum RealReceiptFiles {
    /// ImageMagick's own `convert`: `/usr/local/bin/convert` is a stand-in.
    public static let convert = "/usr/bin/convert"

    public static func run(_ executable: String, _ arguments: [String]) throws {
        let result = try runCommand(executable, arguments, timeout: 120)
        guard result.status == 0 else { throw TestFailure("\(executable) \(arguments.joined(separator: " ")): \(result.stderr)") }
    }

    /// An EXIF block as a phone writes one in APP1: a TIFF header, IFD0
    /// (orientation), IFD1 with a JPEG thumbnail, which has its own SOI
    /// and EOI inside the segment.
    static func exifProfile(thumbnail: [UInt8]) -> [UInt8] {
        func le16(_ v: Int) -> [UInt8] { [UInt8(v & 0xFF), UInt8(v >> 8 & 0xFF)] }
        func le32(_ v: Int) -> [UInt8] { le16(v & 0xFFFF) + le16(v >> 16) }
        func entry(_ tag: Int, _ type: Int, _ value: Int) -> [UInt8] { le16(tag) + le16(type) + le32(1) + le32(value) }
        let ifd1 = 8 + 2 + 12 + 4
        let thumb = ifd1 + 2 + 24 + 4
        var tiff = Array("II*\0".utf8) + le32(8)
        tiff += le16(1) + entry(0x0112, 3, 1) + le32(ifd1)
        tiff += le16(2) + entry(0x0201, 4, thumb) + entry(0x0202, 4, thumbnail.count) + le32(0)
        return Array("Exif\0\0".utf8) + tiff + thumbnail
    }

    /// An EXIF block that says the photo must be turned 90° clockwise to
    /// be upright (orientation 6) and where it was taken (a GPS IFD with
    /// GPSLatitudeRef "N"), as a phone writes it.
    public static func exifWithLocation() -> [UInt8] {
        func le16(_ v: Int) -> [UInt8] { [UInt8(v & 0xFF), UInt8(v >> 8 & 0xFF)] }
        func le32(_ v: Int) -> [UInt8] { le16(v & 0xFFFF) + le16(v >> 16) }
        let gps = 8 + 2 + 2 * 12 + 4
        var tiff = Array("II*\0".utf8) + le32(8)
        tiff += le16(2) + le16(0x0112) + le16(3) + le32(1) + le32(6) + le16(0x8825) + le16(4) + le32(1) + le32(gps) + le32(0)
        tiff += le16(1) + le16(0x0001) + le16(2) + le32(2) + [UInt8(ascii: "N"), 0, 0, 0] + le32(0)
        return Array("Exif\0\0".utf8) + tiff
    }

    /// `located.jpg`: a 1200 × 900 photo with ``exifWithLocation()``.
    public static func makeLocated(in directory: TemporaryDirectory) throws -> String {
        try Data(exifWithLocation()).write(to: URL(fileURLWithPath: directory.at("gps.app1")))
        try Self.run(Self.convert, ["-size", "1200x900", "gradient:white-navy", "-quality", "90", "-profile", directory.at("gps.app1"),
                                    directory.at("located.jpg")])
        return directory.at("located.jpg")
    }

    static func bytes(_ name: String, in directory: TemporaryDirectory) throws -> [UInt8] {
        guard let data = FileManager.default.contents(atPath: directory.at(name)) else { throw TestFailure("\(name) was not made") }
        return [UInt8](data)
    }

    /// The files of ``make(in:)``, made once in a test process (ImageMagick
    /// spends seconds on each set, most of them on the HEIC) and copied to
    /// each caller; removed when the process exits.
    private static let madeOnce = Mutex<(directory: TemporaryDirectory, files: [(name: String, kind: ReceiptKind)])?>(nil)

    /// Copies them into `directory`, made once in this process: see ``makeFiles(in:)``.
    /// - Returns: each file's name and kind.
    public static func make(in directory: TemporaryDirectory) throws -> [(name: String, kind: ReceiptKind)] {
        let (source, files) = try madeOnce.withLock { made in
            if let made { return made }
            let source = TemporaryDirectory(prefix: "real-receipts")
            let made = (directory: source, files: try makeFiles(in: source))
            atexit { RealReceiptFiles.madeOnce.withLock { $0 = nil } }
            return made
        }
        for file in files {
            guard let data = FileManager.default.contents(atPath: source.at(file.name)) else { throw TestFailure("\(file.name) was removed") }
            try data.write(to: URL(fileURLWithPath: directory.at(file.name)))
        }
        return files
    }

    /// Makes them in `directory`: `phone.jpg` (EXIF with a thumbnail),
    /// `phone-trailer.jpg` (the same with bytes after EOI), `scan.png`,
    /// `scan.jpg` (progressive), `printer.pdf` (Ghostscript), `scan.pdf`
    /// (img2pdf), and the phone's and the scan's other formats:
    /// `phone.heic`, `phone.webp`, `alpha.png`, `scan.tif`, `pages.tif`
    /// (three pages), `scan.pbm`, `scan.pgm`, `scan16.pgm`, `phone.ppm`, `phone.bmp`.
    /// - Returns: each file's name and kind.
    static func makeFiles(in directory: TemporaryDirectory) throws -> [(name: String, kind: ReceiptKind)] {
        // A phone: a photo with EXIF and its thumbnail; and one with bytes
        // after EOI, as some cameras append.
        try Self.run(Self.convert, ["-size", "64x48", "plasma:fractal", "-quality", "80", directory.at("thumb.jpg")])
        try Data(exifProfile(thumbnail: try bytes("thumb.jpg", in: directory))).write(to: URL(fileURLWithPath: directory.at("exif.app1")))
        try Self.run(Self.convert, ["-size", "1200x900", "plasma:fractal", "-quality", "92", "-sampling-factor", "2x2",
                               "-profile", directory.at("exif.app1"), directory.at("phone.jpg")])
        let trailer = try bytes("phone.jpg", in: directory) + Array("MotionPhoto_Data\0\u{1}\u{2}".utf8) + [UInt8](repeating: 0xFF, count: 300)
        try Data(trailer).write(to: URL(fileURLWithPath: directory.at("phone-trailer.jpg")))
        // A scanner: a grey A4 page at 150 dpi as a noisy PNG (many IDAT
        // chunks) and as a progressive JPEG (many scans, tables between).
        try Self.run(Self.convert, ["-size", "1240x1754", "gradient:white-gray70", "-attenuate", "0.3", "+noise", "Gaussian",
                               "-colorspace", "Gray", "-density", "150", "-units", "PixelsPerInch", directory.at("scan.png")])
        try Self.run(Self.convert, [directory.at("scan.png"), "-interlace", "Plane", "-quality", "75", directory.at("scan.jpg")])
        // A PDF printer: Ghostscript's pdfwrite (what CUPS-PDF runs), and
        // img2pdf around the scan.
        let postscript = "%!PS\n/Helvetica findfont 24 scalefont setfont\n72 720 moveto (Blue Bottle 12.50 EUR) show\nshowpage\n"
        try Data(postscript.utf8).write(to: URL(fileURLWithPath: directory.at("receipt.ps")))
        try Self.run("/usr/bin/gs", ["-q", "-dSAFER", "-dBATCH", "-dNOPAUSE", "-sDEVICE=pdfwrite",
                                "-sOutputFile=\(directory.at("printer.pdf"))", directory.at("receipt.ps")])
        try Self.run("/usr/bin/img2pdf", [directory.at("scan.jpg"), "-o", directory.at("scan.pdf")])
        // What a phone syncs and a scanner writes besides: HEIC, WebP, a
        // PNG with alpha, TIFF (LZW, and three pages), binary PNM of each
        // depth, BMP.
        try Self.run(Self.convert, [directory.at("phone.jpg"), "-quality", "60", directory.at("phone.heic")])
        try Self.run(Self.convert, [directory.at("phone.jpg"), "-quality", "75", directory.at("phone.webp")])
        try Self.run(Self.convert, [directory.at("phone.jpg"), "-alpha", "set", "-channel", "A", "-evaluate", "set", "80%",
                                    directory.at("alpha.png")])
        try Self.run(Self.convert, [directory.at("scan.png"), "-compress", "LZW", directory.at("scan.tif")])
        try Self.run(Self.convert, [directory.at("scan.png"), directory.at("phone.jpg"), directory.at("scan.png"), "-compress", "Zip",
                                    directory.at("pages.tif")])
        try Self.run(Self.convert, [directory.at("scan.png"), "-threshold", "60%", directory.at("scan.pbm")])
        try Self.run(Self.convert, [directory.at("scan.png"), "-depth", "8", directory.at("scan.pgm")])
        try Self.run(Self.convert, [directory.at("scan.png"), "-depth", "16", directory.at("scan16.pgm")])
        try Self.run(Self.convert, [directory.at("phone.jpg"), directory.at("phone.ppm")])
        try Self.run(Self.convert, [directory.at("phone.jpg"), "-resize", "50%", directory.at("phone.bmp")])
        return [("phone.jpg", .jpeg), ("phone-trailer.jpg", .jpeg), ("scan.png", .png), ("scan.jpg", .jpeg),
                ("printer.pdf", .pdf), ("scan.pdf", .pdf), ("phone.heic", .heif), ("phone.webp", .webp), ("alpha.png", .png),
                ("scan.tif", .tiff), ("pages.tif", .tiff), ("scan.pbm", .pnm), ("scan.pgm", .pnm), ("scan16.pgm", .pnm),
                ("phone.ppm", .pnm), ("phone.bmp", .bmp)]
    }
}
