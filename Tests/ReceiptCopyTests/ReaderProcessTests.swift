import ExpenseCore
import ExpenseTestSupport
import Foundation
import Posix
import ReceiptCopy
import ReceiptReading
import Testing

/// The real reader (`expensed-decode --read`), run as the daemon will run
/// it, on the corpus of rendered receipts and on hostile files: Tesseract
/// and poppler in the decoder's sandbox, bounded by its limits.
@Suite struct ReaderProcessTests {
    static func reader(_ change: (inout ReadSettings) -> Void = { _ in }, fault: String? = nil) -> ReceiptReader {
        var settings = ReadSettings()
        settings.deadlineMilliseconds = 120_000
        change(&settings)
        return ReceiptReader(executable: BuiltProducts.path("expensed-decode"), settings: settings,
                             environment: fault.map { ["EXPENSED_DECODER_FAULT": $0] } ?? [:])
    }

    static let corpus = (try? ReceiptCorpus.load()) ?? []

    @Test func theCorpus_hasEveryLayoutTheIssueNames() throws {
        let files = Self.corpus.map(\.file)
        #expect(files.count == 8, "\(files)")
        for part in ["till", "restaurant", "hotel", "scan", "photo", "garbage-layer", "2pages", "electronics"] {
            #expect(files.contains { $0.contains(part) }, "\(part)")
        }
        // Small enough to live in the repository.
        let bytes = try FileManager.default.subpathsOfDirectory(atPath: ReceiptCorpus.directory).reduce(0) { sum, name in
            sum + ((try? FileManager.default.attributesOfItem(atPath: "\(ReceiptCorpus.directory)/\(name)")[.size] as? Int) ?? 0)
        }
        #expect(bytes < 2 << 20, "\(bytes) bytes")
    }

    /// Every field of every receipt read right: the corpus is rendered
    /// cleanly enough (the photo included) that nothing needs excusing.
    @Test(arguments: corpus)
    func eachReceipt_readsItsFields(_ receipt: CorpusReceipt) throws {
        let text = try Self.reader().read(try FileDescriptor.open(receipt.path, .readOnly))
        #expect(text.source.rawValue == receipt.source, "\(receipt.file): \(text.source)")
        let suggestions = ReceiptParser.suggest(text, settings: receipt.settings)
        #expect(receipt.wrongFields(suggestions).isEmpty, "\(receipt.file): \(receipt.wrongFields(suggestions))\n\(text.plainText)")
        for (_, suggestion) in suggestions.byField {
            #expect(suggestion.confidence > 0.3 && suggestion.confidence <= 1, "\(receipt.file): \(suggestion)")
        }
    }

    /// The restaurant bill's date is not set by a setting: `04/18/2026`
    /// reads one way only. The till roll's `03/04/2026` reads two ways:
    /// without its setting it is offered, never suggested.
    @Test func theTillRollsDate_withoutASetting_isAmbiguous() throws {
        let till = try #require(Self.corpus.first { $0.file == "till-gb.png" })
        let text = try Self.reader().read(try FileDescriptor.open(till.path, .readOnly))
        let suggestions = ReceiptParser.suggest(text)
        #expect(suggestions.date == nil)
        #expect(suggestions.ambiguousDate.map { [$0.dayFirst, $0.monthFirst] } == ["2026-04-03", "2026-03-04"])
    }

    @Test func aPageOfALongerDocument_pastPagesRead_isNotRead() throws {
        let invoice = try #require(Self.corpus.first { $0.file == "invoice-de-2pages.pdf" })
        let text = try Self.reader { $0.pagesRead = 1 }.read(try FileDescriptor.open(invoice.path, .readOnly))
        #expect(text.pages == 1 && text.isTruncated && text.lines.allSatisfy { $0.page == 0 })
        #expect(ReceiptParser.suggest(text).total == nil, "the total is on page 2")
    }

    // MARK: Hostile input

    /// A PNG of a few hundred bytes whose header claims 60,000 × 60,000
    /// pixels: refused from its header, as the copier refuses it.
    @Test func aHeaderClaimingHugeDimensions_isRefusedBeforeDecoding() throws {
        let directory = TemporaryDirectory(prefix: "reader-huge")
        let path = directory.at("huge.png")
        try Data(Self.png(width: 60_000, height: 60_000)).write(to: URL(fileURLWithPath: path))
        #expect(throws: CopyFailure("claims 60000 × 60000 pixels, more than the 100000000 a receipt may have (receipt_max_pixels)")) {
            try Self.reader().read(try FileDescriptor.open(path, .readOnly))
        }
    }

    /// 10 KB that inflate to 650 KB of 1-point text on one page: poppler
    /// keeps at most 50,000 characters of a page, and the answer is cut to
    /// the codec's limits and says so.
    @Test func aTextBomb_isBounded() throws {
        let path = "\(ReceiptCorpus.directory)/hostile/text-bomb.pdf"
        let text = try Self.reader().read(try FileDescriptor.open(path, .readOnly))
        #expect(text.source == .textLayer && text.isTruncated)
        #expect(text.lines.count <= ReadTextCodec.maxLines)
        #expect(text.lines.reduce(0) { $0 + $1.text.utf8.count + 1 } <= ReadTextCodec.maxTextBytes)
    }

    @Test func aPDFOfMorePagesThanAReceiptHas_isRefused() throws {
        let directory = TemporaryDirectory(prefix: "reader-pages")
        let jpeg = directory.at("page.jpg")
        let made = try runCommand("/usr/bin/convert", ["-size", "20x20", "xc:white", jpeg], timeout: 60)
        #expect(made.status == 0, "\(made.stderr)")
        let page = PDFPages.Page(jpeg: [UInt8](try #require(FileManager.default.contents(atPath: jpeg))), width: 20, height: 20, components: 3)
        let path = directory.at("pages.pdf")
        try Data(PDFPages.make(Array(repeating: page, count: 101))).write(to: URL(fileURLWithPath: path))
        #expect(throws: CopyFailure("has 101 pages, more than the 100 a receipt may have")) {
            try Self.reader().read(try FileDescriptor.open(path, .readOnly))
        }
    }

    @Test(arguments: [("garbage", Array("not a receipt at all".utf8)), ("empty", [])])
    func notAnImageOrAPDF_isRefused(_ name: String, _ bytes: [UInt8]) throws {
        let directory = TemporaryDirectory(prefix: "reader-garbage")
        let path = directory.at(name)
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        #expect(throws: CopyFailure("is not an image or a PDF the reader reads")) { try Self.reader().read(try FileDescriptor.open(path, .readOnly)) }
    }

    /// What a hostile file could make Tesseract or poppler do costs that
    /// receipt with a reason: the sandbox refuses sockets and writing; a
    /// hang meets the deadline; a crash is a crash.
    @Test(arguments: [("crash", "the decoder crashed (signal 11)"), ("network", "socket: Operation not permitted"),
                      ("write", "open for writing: Operation not permitted"),
                      ("hang", "the decoder took longer than 1 s (receipt_decode_timeout) and was stopped")])
    func faults_costTheReceipt_withAReason(_ fault: String, _ reason: String) throws {
        let till = "\(ReceiptCorpus.directory)/till-gb.png"
        let reader = Self.reader({ $0.deadlineMilliseconds = fault == "hang" ? 1000 : 60_000 }, fault: fault)
        #expect(throws: CopyFailure(reason)) { try reader.read(try FileDescriptor.open(till, .readOnly)) }
    }

    /// A reader that spins is stopped by its CPU limit (`RLIMIT_CPU`), well
    /// before its deadline.
    @Test func aReaderThatSpins_isStoppedByItsCPULimit() throws {
        let till = "\(ReceiptCorpus.directory)/till-gb.png"
        let reader = Self.reader({ $0.cpuSeconds = 1 }, fault: "spin")
        #expect(throws: CopyFailure("the decoder used more than 1 s of CPU time and was stopped")) {
            try reader.read(try FileDescriptor.open(till, .readOnly))
        }
    }

    /// A language whose data is not installed stops reading before a byte
    /// is read, naming the Debian package that has it.
    @Test func aMissingLanguage_namesItsDebianPackage() throws {
        let directory = TemporaryDirectory(prefix: "reader-languages")
        let tessdata = directory.at("tessdata")
        try FileManager.default.createDirectory(atPath: tessdata, withIntermediateDirectories: false)
        try FileManager.default.createSymbolicLink(atPath: "\(tessdata)/eng.traineddata", withDestinationPath: "\(ReadSettings.debianTessdata)/eng.traineddata")
        let reader = Self.reader { $0.languages = ["eng", "chi_sim"]; $0.tessdata = tessdata }
        #expect(throws: CopyFailure("no chi_sim.traineddata in \(tessdata): install Debian's tesseract-ocr-chi-sim (receipt_languages)")) {
            try reader.read(try FileDescriptor.open("\(ReceiptCorpus.directory)/till-gb.png", .readOnly))
        }
        // Only eng: it reads.
        let english = Self.reader { $0.tessdata = tessdata }
        #expect(try english.read(try FileDescriptor.open("\(ReceiptCorpus.directory)/till-gb.png", .readOnly)).lines.count > 10)
    }

    /// Tesseract's library not installed (the package's dependencies name
    /// it): the reader is not set up to read (exit 78, whose reason is the
    /// decoder's own line, as for a language whose data is missing) and
    /// says which library.
    @Test func aMissingTesseract_isNotSetUpToRead_andNamesItsLibrary() throws {
        let reader = Self.reader(fault: "no-tesseract")
        #expect(throws: CopyFailure("libtesseract.so.0-none: cannot open shared object file: No such file or directory")) {
            try reader.read(try FileDescriptor.open("\(ReceiptCorpus.directory)/till-gb.png", .readOnly))
        }
    }

    /// A PNG of `width` × `height` whose one IDAT holds a single row: all a
    /// header check needs to see, a few dozen bytes.
    static func png(width: UInt32, height: UInt32) -> [UInt8] {
        func chunk(_ type: String, _ data: [UInt8]) -> [UInt8] {
            let body = Array(type.utf8) + data
            return bigEndian(UInt32(data.count)) + body + bigEndian(CRC32.checksum(body))
        }
        func bigEndian(_ value: UInt32) -> [UInt8] { [24, 16, 8, 0].map { UInt8(truncatingIfNeeded: value >> $0) } }
        let header = bigEndian(width) + bigEndian(height) + [8, 0, 0, 0, 0]
        // zlib: a stored block of three zero bytes.
        let data: [UInt8] = [0x78, 0x01, 0x01, 0x03, 0x00, 0xFC, 0xFF, 0, 0, 0, 0x00, 0x03, 0x00, 0x01]
        return [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A] + chunk("IHDR", header) + chunk("IDAT", data) + chunk("IEND", [])
    }
}
