// The corpus as phones and tired scanners deliver it, made in this run
// with ImageMagick (and libvips for the PDFs' pages: Debian's ImageMagick
// policy refuses PDF): each receipt's
// pages as one image, turned 2.5°, blurred, with noise, then saved as a
// JPEG of quality 60 and as a HEIC of quality 60; and what has nothing to
// read: a blank page and a photo of no text.
import ExpenseTestSupport
import Foundation

enum DegradedSet {
    static let convert = "/usr/bin/convert"
    static let vips = "/usr/bin/vips"

    /// All of `path`'s pages, one under the other, as a PNG on white.
    static func pages(of path: String, to png: String) throws {
        let isPDF = path.lowercased().hasSuffix(".pdf")
        try run(vips, ["copy", isPDF ? "\(path)[dpi=150,n=-1]" : path, png + "[compression=1]"])
        try run(convert, [png, "-background", "white", "-alpha", "remove", "-alpha", "off", png])
    }

    /// Each receipt of `corpus` as a degraded JPEG and HEIC in `directory`.
    static func make(from corpus: [CorpusReceipt], in directory: String) throws -> [CorpusReceipt] {
        var made: [CorpusReceipt] = []
        for receipt in corpus {
            let stem = (receipt.file as NSString).deletingPathExtension
            let pages = "\(directory)/\(stem)-pages.png"
            // Every page, one under the other, at a phone photo's resolution of a receipt.
            try Self.pages(of: receipt.path, to: pages)
            let degraded = "\(directory)/\(stem)-degraded.png"
            try run(convert, [pages, "-background", "white", "-rotate", "2.5", "-seed", "28", "-attenuate", "0.4", "+noise", "Gaussian",
                              "-blur", "0x0.7", degraded])
            for format in ["jpg", "heic"] {
                let file = "\(stem)-degraded.\(format)"
                try run(convert, [degraded, "-quality", "60", "\(directory)/\(file)"])
                made.append(receipt.copy(file: file, path: "\(directory)/\(file)"))
            }
        }
        return made
    }

    /// A blank page and a photo of no text, in `directory`.
    static func nothingToRead(in directory: String) throws -> [String] {
        let blank = "\(directory)/blank-page.png", photo = "\(directory)/no-text-photo.jpg"
        try run(convert, ["-size", "1240x1754", "xc:white", blank])
        try run(convert, ["-size", "1600x1200", "gradient:#d8d0c0-#5a4a3a", "-seed", "7", "-attenuate", "0.6", "+noise", "Gaussian",
                          "-quality", "70", photo])
        return [blank, photo]
    }

    /// An image `tesseract` reads as it is: the receipt's own file, or its
    /// pages as one PNG for a PDF or HEIC (made by ``make(from:in:)`` or here).
    static func tesseractInput(_ receipt: CorpusReceipt, in directory: String) throws -> String {
        let ext = (receipt.file as NSString).pathExtension.lowercased()
        guard ext == "pdf" || ext == "heic" else { return receipt.path }
        let png = "\(directory)/\((receipt.file as NSString).deletingPathExtension)-\(ext)-for-tesseract.png"
        if !FileManager.default.fileExists(atPath: png) {
            try Self.pages(of: receipt.path, to: png)
        }
        return png
    }

    static func run(_ executable: String, _ arguments: [String]) throws {
        let result = try runCommand(executable, arguments, timeout: 300)
        guard result.status == 0 else { throw TestFailure("\(executable) \(arguments.joined(separator: " ")): exit \(result.status): \(result.stderr)") }
    }
}
