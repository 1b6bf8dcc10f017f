// The reading mode (--read): the receipt's text, for the suggestions of
// docs/receipts.md, "Reading". Tesseract's language data, poppler and
// libvips are loaded first, then the same limits and seccomp filter as a
// copy's close the process, and only then is the receipt read. A PDF's
// text layer is read when it gives an amount or a date; otherwise, and for
// every image, the pages are rendered and recognized.
import CDecoder
import ExpenseCore
import Posix
import ReceiptCopy
import ReceiptReading
#if canImport(Glibc)
import Glibc
#endif

/// Reads the receipt on standard input and writes its text as
/// ``ReadTextCodec`` lines; exit status 64 for a bad command line, 78 for
/// language data (or Tesseract, or poppler-glib) that is not installed,
/// 65 for a receipt refused, 70 when reading itself failed.
func readReceipt(_ arguments: [String], fault: String?) -> Never {
    let settings: ReadSettings
    do { settings = try ReadSettings(arguments: arguments) } catch {
        FileHandleWriter.standardError("expensed-decode: \(error)\n")
        exit(64)
    }
    if let missing = ReadingLanguages.missing(settings.languages, in: settings.tessdata) { notSetUp(missing) }
    // The daemon's adds and sends (and a server beside it) get the cores
    // first, but a reading is waited on too (reading_wait, `expensectl
    // read`): a lower priority, not the idle class, which a busy machine
    // starves for minutes (bench/README.md, bench-read --daemon).
    CurrentProcess.lowerPriority(to: 10)
    // Any receipt: everything starts.
    start(.imageMagick)
    // Debian 12's (libtesseract5, libpoppler-glib8), which the package's
    // dependencies name; a test's fault asks for one no system has.
    let tesseract = fault == "no-tesseract" ? "libtesseract.so.0-none" : "libtesseract.so.5"
    switch creader_start(settings.tessdata, settings.languages.joined(separator: "+"), tesseract, "libpoppler-glib.so.8") {
    case 0: break
    case -2: notSetUp(String(cString: cdecoder_error()))  // Tesseract or poppler-glib not installed
    default: fail(String(cString: cdecoder_error()))
    }
    // Tesseract let go before its caches' destructors run at exit, whichever
    // way this ends: they complain of leaks on stderr, whose last line is a refusal's reason.
    atexit { creader_end() }
    closeTheProcess(memoryBytes: settings.memoryBytes, cpuSeconds: settings.cpuSeconds)

    let bytes = readInput()
    actOnFault(fault)
    guard let kind = ReceiptKind.detect(bytes) else { refuse("is not an image or a PDF the reader reads") }
    let text = kind == .pdf ? readPDF(bytes, settings) : readImage(bytes, settings)
    FileHandleWriter.standardOutput(ReadTextCodec.encode(text))
    exit(0)
}

/// The most text a PDF page may have: a dense invoice page has a few kilobytes.
let maxPageTextBytes = 256 * 1024

private func readPDF(_ bytes: [UInt8], _ settings: ReadSettings) -> ReadText {
    var pages: Int32 = 0
    let opened = bytes.withUnsafeBytes { creader_pdf_open($0.baseAddress, $0.count, &pages) }
    guard opened == 0 else { refuse("cannot be read: \(String(cString: cdecoder_error()))") }
    guard pages > 0 else { refuse("has no pages") }
    guard Int(pages) <= settings.maxPages else { refuse("has \(pages) pages, more than the \(settings.maxPages) a receipt may have") }
    let count = min(Int(pages), settings.pagesRead)
    var lines: [ReadText.Line] = []
    for page in 0..<count {
        let sink = GlyphSink()
        let status = creader_pdf_text(Int32(page), maxPageTextBytes, { context, text, x1, y1, x2, y2 in
            guard let context, let text else { return }
            Unmanaged<GlyphSink>.fromOpaque(context).takeUnretainedValue().glyphs
                .append(PageLayout.Glyph(String(cString: text), x1: x1, y1: y1, x2: x2, y2: y2))
        }, Unmanaged.passUnretained(sink).toOpaque())
        guard status >= 0 else { refuse("cannot be read: \(String(cString: cdecoder_error()))") }
        guard status == 0 else { refuse("has more text on page \(page + 1) than a receipt has (over \(maxPageTextBytes / 1024) KiB)") }
        lines += PageLayout.lines(sink.glyphs, page: page)
    }
    if PageLayout.isUsable(lines) { return ReadText(source: .textLayer, pages: count, lines: lines, isTruncated: count < pages) }
    // A scan, or a text layer of nothing useful: read the pages' pixels.
    var recognized: [ReadText.Line] = []
    for page in 0..<count { recognized += recognize(bytes, page: page, isPDF: true, settings) }
    return ReadText(source: .recognized, pages: count, lines: recognized, isTruncated: count < pages)
}

private func readImage(_ bytes: [UInt8], _ settings: ReadSettings) -> ReadText {
    var raw = cdecoder_header()
    let headerRead = bytes.withUnsafeBytes { cdecoder_read_header($0.baseAddress, $0.count, &raw) }
    guard headerRead == 0 else { refuse("cannot be decoded: \(String(cString: cdecoder_error()))") }
    let header = ImageHeader(width: Int(raw.width), height: Int(raw.height), pages: Int(raw.pages))
    do { try CopyPlan.check(header, maxPixels: settings.maxPixels, maxPages: settings.maxPages) } catch { refuse(error.reason) }
    let count = min(header.pages, settings.pagesRead)
    var lines: [ReadText.Line] = []
    for page in 0..<count { lines += recognize(bytes, page: page, isPDF: false, settings) }
    return ReadText(source: .recognized, pages: count, lines: lines, isTruncated: count < header.pages)
}

/// Page `page` rendered or decoded and read by Tesseract: its lines of words.
private func recognize(_ bytes: [UInt8], page: Int, isPDF: Bool, _ settings: ReadSettings) -> [ReadText.Line] {
    let sink = WordSink(page: page)
    let status = bytes.withUnsafeBytes { raw in
        creader_recognize(raw.baseAddress, raw.count, Int32(page), isPDF ? 1 : 0, Int32(settings.longEdge), { context, text, confidence, startsLine in
            guard let context, let text else { return }
            Unmanaged<WordSink>.fromOpaque(context).takeUnretainedValue().add(String(cString: text), confidence: Double(confidence), startsLine: startsLine != 0)
        }, Unmanaged.passUnretained(sink).toOpaque())
    }
    guard status == 0 else { refuse("cannot be read: \(String(cString: cdecoder_error()))") }
    return sink.lines
}

/// Tesseract's words, gathered into lines as it hands them over.
private final class WordSink {
    let page: Int
    var lines: [ReadText.Line] = []

    init(page: Int) { self.page = page }

    func add(_ text: String, confidence: Double, startsLine: Bool) {
        let word = text.trimmingWhitespace()
        guard !word.isEmpty else { return }
        if startsLine || lines.isEmpty { lines.append(ReadText.Line(page: page, words: [])) }
        lines[lines.count - 1].words.append(ReadText.Word(word, confidence: confidence / 100))
    }
}

/// A PDF page's characters as poppler hands them over.
private final class GlyphSink {
    var glyphs: [PageLayout.Glyph] = []
}

extension String {
    fileprivate func trimmingWhitespace() -> String {
        var text = Substring(self)
        while text.first?.isWhitespace == true { text.removeFirst() }
        while text.last?.isWhitespace == true { text.removeLast() }
        return String(text)
    }
}
