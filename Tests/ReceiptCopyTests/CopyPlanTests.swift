import ExpenseCore
import ExpenseTestSupport
import Foundation
import Posix
@testable import ReceiptCopy
import Testing

/// What becomes of a receipt, decided from its header: a table of cases;
/// the decoder's answer parsed; a PDF of pages that readers open.
@Suite struct CopyPlanTests {
    static let settings = CopySettings()

    static let cases: [(String, ReceiptKind, ImageHeader, Result<CopyPlan, CopyFailure>)] = [
        ("a PDF", .pdf, ImageHeader(width: 600, height: 800), .success(.original)),
        ("a small upright JPEG", .jpeg, ImageHeader(width: 2500, height: 1000), .success(.original)),
        ("a small PNG with alpha", .png, ImageHeader(width: 800, height: 600), .success(.original)),
        ("a JPEG one pixel too long", .jpeg, ImageHeader(width: 2501, height: 1000), .success(.jpeg)),
        ("a small JPEG turned sideways", .jpeg, ImageHeader(width: 800, height: 600, orientation: 6), .success(.jpeg)),
        ("a small JPEG that tells where", .jpeg, ImageHeader(width: 800, height: 600, hasLocation: true), .success(.jpeg)),
        ("a small HEIC", .heif, ImageHeader(width: 400, height: 300), .success(.jpeg)),
        ("a one-page TIFF", .tiff, ImageHeader(width: 1240, height: 1754), .success(.jpeg)),
        ("a three-page TIFF", .tiff, ImageHeader(width: 1240, height: 1754, pages: 3), .success(.pdf(pages: 3))),
        ("a BMP", .bmp, ImageHeader(width: 10, height: 10), .success(.jpeg)),
        ("a PNG that claims 60,000 × 60,000", .png, ImageHeader(width: 60_000, height: 60_000),
         .failure(CopyFailure("claims 60000 × 60000 pixels, more than the 100000000 a receipt may have (receipt_max_pixels)"))),
        ("a size that overflows", .webp, ImageHeader(width: Int.max, height: 3),
         .failure(CopyFailure("claims \(Int.max) × 3 pixels, more than the 100000000 a receipt may have (receipt_max_pixels)"))),
        ("no pixels", .png, ImageHeader(width: 0, height: 5), .failure(CopyFailure("has no pixels (0 × 5)"))),
        ("too many pages", .tiff, ImageHeader(width: 10, height: 10, pages: 101), .failure(CopyFailure("has 101 pages, more than the 100 a receipt may have"))),
    ]

    @Test(arguments: cases.indices)
    func plan(_ index: Int) {
        let (what, kind, header, expected) = Self.cases[index]
        let decided = Result { () throws(CopyFailure) in try CopyPlan.decide(kind: kind, header: header, settings: Self.settings) }
        #expect(decided == expected, "\(what)")
    }

    @Test func answers_areParsed_andGarbageIsRefused() throws {
        let jpeg = ReceiptBytes.make(.jpeg, size: 1000)
        #expect(try ReceiptDecoder.answer(Array("original\n".utf8)) == .original)
        #expect(try ReceiptDecoder.answer(Array("jpeg 30 20\n".utf8) + jpeg) == .copy(kind: .jpeg, bytes: jpeg, width: 30, height: 20, pages: 1))
        for garbage in ["", "original", "original\nextra", "jpeg 30\n", "jpeg x y\n", "png 1 1\n", "pdf 2 3 4\n"] {
            #expect(throws: CopyFailure.self, "\(garbage)") { try ReceiptDecoder.answer(Array(garbage.utf8)) }
        }
        #expect(throws: CopyFailure.self, "a JPEG cut short") { try ReceiptDecoder.answer(Array("jpeg 1 1\n".utf8) + jpeg.dropLast(2)) }
    }

    @Test func settings_roundTripThroughTheCommandLine_andBadOnesAreRefused() throws {
        var settings = CopySettings()
        settings.maxEdge = 777
        settings.quality = 70
        #expect(try CopySettings(arguments: settings.arguments) == settings)
        for bad in [["--max-edge"], ["--max-edge", "x"], ["--max-edge", "8"], ["--quality", "0"], ["--nope", "1"], ["--memory", "-1"]] {
            #expect(throws: CopyFailure.self, "\(bad)") { try CopySettings(arguments: bad) }
        }
    }

    /// The PDF of pages is a whole PDF that Ghostscript reads, with its pages.
    @Test func pdfOfPages_isWhole_andReadersCountItsPages() throws {
        let directory = TemporaryDirectory(prefix: "pdf-pages")
        try RealReceiptFiles.run(RealReceiptFiles.convert, ["-size", "300x200", "xc:white", "-draw", "rectangle 10,10 100,100", directory.at("a.jpg")])
        try RealReceiptFiles.run(RealReceiptFiles.convert, ["-size", "200x300", "xc:gray", "-colorspace", "Gray", directory.at("b.jpg")])
        let a = [UInt8](try #require(FileManager.default.contents(atPath: directory.at("a.jpg"))))
        let b = [UInt8](try #require(FileManager.default.contents(atPath: directory.at("b.jpg"))))
        let pdf = PDFPages.make([PDFPages.Page(jpeg: a, width: 300, height: 200, components: 3),
                                 PDFPages.Page(jpeg: b, width: 200, height: 300, components: 1)])
        #expect(ReceiptValidator.check(pdf) == .complete(.pdf))
        try Data(pdf).write(to: URL(fileURLWithPath: directory.at("pages.pdf")))
        let count = try runCommand("/usr/bin/gs", ["-q", "-dNODISPLAY", "-dNOSAFER", "-c", "(\(directory.at("pages.pdf"))) (r) file runpdfbegin pdfpagecount = quit"], timeout: 60)
        #expect(count.stdout.trimmingCharacters(in: .whitespacesAndNewlines) == "2", "\(count.stdout) \(count.stderr)")
    }
}

/// The real decoder, run as the daemon runs it, on the files phones and
/// scanners make, and with its test-only faults.
@Suite struct DecoderProcessTests {
    static func decoder(maxEdge: Int = 500, deadline: Int64 = 60_000, fault: String? = nil) -> ReceiptDecoder {
        var settings = CopySettings()
        settings.maxEdge = maxEdge
        settings.deadlineMilliseconds = deadline
        return ReceiptDecoder(executable: BuiltProducts.path("expensed-decode"), settings: settings,
                              environment: fault.map { ["EXPENSED_DECODER_FAULT": $0] } ?? [:])
    }

    /// Told the kind the daemon found (ImageMagick started for a BMP only)
    /// or not told, each file becomes the same copy.
    @Test(arguments: [false, true])
    func everyKind_becomesWhatItsPlanSays(toldItsKind: Bool) throws {
        let directory = TemporaryDirectory(prefix: "decoder")
        for (name, kind) in try RealReceiptFiles.make(in: directory) {
            let result = try Self.decoder().copy(of: try FileDescriptor.open(directory.at(name), .readOnly), kind: toldItsKind ? kind : nil)
            switch (kind, name) {
            case (.pdf, _):
                #expect(result == .original, "\(name)")
            case (_, "pages.tif"):
                guard case .copy(.pdf, let bytes, _, _, 3) = result else { Issue.record("\(name): \(result)"); continue }
                #expect(ReceiptValidator.check(bytes) == .complete(.pdf))
            default:
                guard case .copy(.jpeg, let bytes, let width, let height, 1) = result else { Issue.record("\(name): \(result)"); continue }
                #expect(ReceiptValidator.check(bytes) == .complete(.jpeg) && max(width, height) == 500, "\(name): \(width)×\(height)")
            }
        }
    }

    @Test(arguments: [("crash", "the decoder crashed (signal 11)"), ("network", "socket: Operation not permitted"),
                      ("write", "open for writing: Operation not permitted"),
                      ("hang", "the decoder took longer than 1 s (receipt_decode_timeout) and was stopped")])
    func faults_costTheReceipt_withAReason(_ fault: String, _ reason: String) throws {
        let directory = TemporaryDirectory(prefix: "decoder-fault")
        let path = directory.at("r.jpg")
        SampleReceipt.write(ReceiptBytes.make(.jpeg, size: 2000), to: path)
        let decoder = Self.decoder(deadline: 1000, fault: fault)
        #expect(throws: CopyFailure(reason)) { try decoder.copy(of: try FileDescriptor.open(path, .readOnly)) }
    }

    /// ImageMagick is not started for a receipt said to be another kind,
    /// nor libvips's modules for one its built-in loaders read: a BMP or a
    /// HEIF in its place is refused, not read by a half-started decoder.
    @Test func aBMPOrHEIFTakenForAnotherKind_isRefused_andAKindItDoesNotKnowIsAUsageError() throws {
        let directory = TemporaryDirectory(prefix: "decoder-kind")
        let files = try RealReceiptFiles.make(in: directory)
        for (name, kind, said, refusal) in [("phone.bmp", ReceiptKind.bmp, ReceiptKind.jpeg, "is a BMP, but was taken as jpeg"),
                                            ("phone.bmp", .bmp, .heif, "is a BMP, but was taken as heif"),
                                            ("phone.heic", .heif, .png, "is a HEIF, but was taken as png")] {
            #expect(files.contains { $0.name == name && $0.kind == kind })
            let path = directory.at(name)
            #expect(throws: CopyFailure(refusal)) {
                try Self.decoder().copy(of: try FileDescriptor.open(path, .readOnly), kind: said)
            }
            guard case .copy(.jpeg, _, _, _, 1) = try Self.decoder().copy(of: try FileDescriptor.open(path, .readOnly), kind: kind) else {
                Issue.record("\(name) said to be \(kind) is not copied"); continue
            }
        }
        for garbage in [["--kind"], ["--kind", "gif"], ["--kind", ""], ["--kind", "BMP"]] {
            let result = try runCommand(BuiltProducts.path("expensed-decode"), garbage + CopySettings().arguments, timeout: 60)
            #expect(result.status == 64, "\(garbage): \(result.status) \(result.stderr)")
            #expect(result.stderr.contains("--kind needs one of jpeg, png, pdf, heif, webp, tiff, pnm, bmp"), "\(garbage): \(result.stderr)")
        }
    }

    /// Tesseract (and its twenty-odd libraries) is loaded by the reading
    /// mode only, and poppler-glib by it or with libvips's modules (its PDF
    /// module links it): a JPEG's copy starts with neither, a copy of a
    /// kind not told (the modules started) without Tesseract. The loader's
    /// own account (`LD_DEBUG=files`) of real copies and of a reading.
    @Test func aCopy_startsWithoutTheReadersLibraries() throws {
        let directory = TemporaryDirectory(prefix: "decoder-libraries")
        let photo = try #require(try RealReceiptFiles.make(in: directory).first { $0.kind == .jpeg })
        for (kind, absent) in [(Optional(ReceiptKind.jpeg), ["libtesseract", "libpoppler"]), (nil, ["libtesseract"])] {
            let copy = try Self.loaderAccount(DecoderKindOption.arguments(kind) + CopySettings().arguments, input: directory.at(photo.name))
            #expect(copy.status == 0, "\(kind.map { "\($0)" } ?? "not told"): \(copy.stdout.suffix(2000))")
            #expect(copy.stdout.contains("file=libvips.so.42"), "the loader said nothing: \(copy.stdout.prefix(2000))")
            for library in absent {
                #expect(!copy.stdout.contains(library), "a copy \(kind.map { "told \($0)" } ?? "not told its kind") loads \(library)")
            }
        }
        let receipt = try #require(ReaderProcessTests.corpus.first { $0.file.hasSuffix(".pdf") })
        let reading = try Self.loaderAccount(ReadSettings().arguments, input: receipt.path)
        #expect(reading.status == 0, "\(reading.stdout.suffix(2000))")
        #expect(reading.stdout.contains("file=libtesseract.so.5 [0];  dynamically loaded"), "a reading does not load Tesseract")
        #expect(reading.stdout.contains(#""words""#), "nothing read: \(reading.stdout.suffix(2000))")
    }

    /// The decoder run on `input` with the loader's account of the files it
    /// loads, its own output and errors, all through a pipe: the decoder
    /// may write no regular file.
    static func loaderAccount(_ arguments: [String], input: String) throws -> CommandResult {
        try runCommand("/bin/bash", ["-o", "pipefail", "-c", #"input=$1; shift; LD_DEBUG=files "$@" < "$input" 2>&1 | cat"#, "decoder",
                                     input, BuiltProducts.path("expensed-decode")] + arguments, timeout: 120)
    }

    @Test func aMissingDecoder_isAReason_notACrash() throws {
        let directory = TemporaryDirectory(prefix: "decoder-missing")
        let path = directory.at("r.jpg")
        SampleReceipt.write(ReceiptBytes.make(.jpeg, size: 2000), to: path)
        let decoder = ReceiptDecoder(executable: directory.at("nowhere"), settings: CopySettings())
        #expect(throws: CopyFailure.self) { try decoder.copy(of: try FileDescriptor.open(path, .readOnly)) }
    }
}
