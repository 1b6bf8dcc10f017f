// expensed-decode: reads one receipt on standard input, in a sandbox, and
// writes its legible copy on standard output (docs/receipts.md); with
// --read, the receipt's text instead (Reading.swift). Started by expensed
// for each receipt; never by hand.
//
// Order matters: libvips starts first (with its modules for a receipt the
// daemon found to be a HEIF or a BMP or said to be nothing, and ImageMagick
// for a BMP or nothing: `--kind`, DecoderStart), then the limits and the
// seccomp filter close the process, and only then is a byte of the receipt
// read.
import CDecoder
import ExpenseCore
import Posix
import ReceiptCopy
#if canImport(Glibc)
import Glibc
#endif

let arguments = Array(CommandLine.arguments.dropFirst())
let fault = getenv("EXPENSED_DECODER_FAULT").map { String(cString: $0) }
if arguments.first == "--read" { readReceipt(arguments, fault: fault) }

let settings: CopySettings
let told: ReceiptKind?
do {
    var rest = arguments[...]
    told = try DecoderKindOption.take(&rest)
    settings = try CopySettings(arguments: Array(rest))
} catch {
    FileHandleWriter.standardError("expensed-decode: \(error)\n")
    exit(64)
}
let started = DecoderStart.needed(for: told)
start(started)
closeTheProcess(memoryBytes: settings.memoryBytes, cpuSeconds: settings.cpuSeconds)

let bytes = readInput()
actOnFault(fault)

guard let kind = ReceiptKind.detect(bytes) else { refuse("is not an image the decoder reads") }
if DecoderStart.needed(for: kind) > started {
    refuse("is a \(kind.rawValue.uppercased()), but was taken as \(told?.rawValue ?? "another kind")")
}
if kind == .pdf {
    FileHandleWriter.standardOutput(Array("original\n".utf8))
    exit(0)
}
var raw = cdecoder_header()
let headerRead = bytes.withUnsafeBytes { cdecoder_read_header($0.baseAddress, $0.count, &raw) }
guard headerRead == 0 else { refuse("cannot be decoded: \(String(cString: cdecoder_error()))") }
let header = ImageHeader(width: Int(raw.width), height: Int(raw.height), pages: Int(raw.pages),
                         orientation: Int(raw.orientation), hasLocation: raw.has_location != 0)
let plan: CopyPlan
do { plan = try CopyPlan.decide(kind: kind, header: header, settings: settings) } catch { refuse(error.reason) }

/// Starts libvips with what `start` needs, or exits.
func start(_ start: DecoderStart) {
    guard cdecoder_start(start >= .modules ? 1 : 0, start == .imageMagick ? 1 : 0) == 0 else { fail(String(cString: cdecoder_error())) }
}

/// Page `page` as a JPEG: its bytes, size and bands.
func jpeg(_ bytes: [UInt8], page: Int, _ settings: CopySettings) -> PDFPages.Page {
    var output: UnsafeMutableRawPointer?
    var length = 0, width: Int32 = 0, height: Int32 = 0, bands: Int32 = 0
    let made = bytes.withUnsafeBytes {
        cdecoder_jpeg($0.baseAddress, $0.count, Int32(page), Int32(settings.maxEdge), Int32(settings.quality), &output, &length, &width, &height, &bands)
    }
    guard made == 0, let output else { refuse("cannot be decoded: \(String(cString: cdecoder_error()))") }
    defer { cdecoder_free(output) }
    return PDFPages.Page(jpeg: Array(UnsafeRawBufferPointer(start: output, count: length)), width: Int(width), height: Int(height),
                         components: Int(bands) == 1 ? 1 : 3)
}

switch plan {
case .original:
    FileHandleWriter.standardOutput(Array("original\n".utf8))
case .jpeg:
    let page = jpeg(bytes, page: 0, settings)
    FileHandleWriter.standardOutput(Array("jpeg \(page.width) \(page.height)\n".utf8) + page.jpeg)
case .pdf(let count):
    let pages = (0..<count).map { jpeg(bytes, page: $0, settings) }
    FileHandleWriter.standardOutput(Array("pdf \(count) \(pages[0].width) \(pages[0].height)\n".utf8) + PDFPages.make(pages))
}
exit(0)
