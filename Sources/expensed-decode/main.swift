// expensed-decode: reads one receipt on standard input, in a sandbox, and
// writes its legible copy on standard output (docs/receipts.md). Started
// by expensed for each receipt that is not sent as it is; never by hand.
//
// Order matters: libvips starts (and loads its modules) first, then the
// limits and the seccomp filter close the process, and only then is a
// byte of the receipt read.
import CDecoder
import ExpenseCore
import Posix
import ReceiptCopy
#if canImport(Glibc)
import Glibc
#endif

/// A refusal of this receipt: its reason, exit status 65 (EX_DATAERR).
func refuse(_ reason: String) -> Never {
    FileHandleWriter.standardError("\(reason)\n")
    exit(65)
}

/// The decoder itself could not work: exit status 70 (EX_SOFTWARE).
func fail(_ reason: String) -> Never {
    FileHandleWriter.standardError("expensed-decode: \(reason)\n")
    exit(70)
}

enum FileHandleWriter {
    static func standardError(_ text: String) { write(2, text, text.utf8.count) }
    static func standardOutput(_ bytes: [UInt8]) {
        var sent = 0
        while sent < bytes.count {
            let n = bytes[sent...].withUnsafeBytes { write(1, $0.baseAddress, $0.count) }
            if n < 0 && errno == EINTR { continue }
            guard n > 0 else { exit(74) }
            sent += n
        }
    }
}

let settings: CopySettings
do { settings = try CopySettings(arguments: Array(CommandLine.arguments.dropFirst())) } catch {
    FileHandleWriter.standardError("expensed-decode: \(error)\n")
    exit(64)
}
let fault = getenv("EXPENSED_DECODER_FAULT").map { String(cString: $0) }
guard cdecoder_start() == 0 else { fail(String(cString: cdecoder_error())) }
let limited = cdecoder_limit(settings.memoryBytes, settings.cpuSeconds)
guard limited == 0 else { fail("setrlimit: \(String(cString: strerror(-limited)))") }
let sandboxed = cdecoder_sandbox()
guard sandboxed == 0 else { fail("seccomp: \(String(cString: strerror(-sandboxed)))") }

/// The receipt, to its end.
func readInput() -> [UInt8] {
    var bytes: [UInt8] = []
    var chunk = [UInt8](repeating: 0, count: 256 * 1024)
    while true {
        let n = chunk.withUnsafeMutableBytes { read(0, $0.baseAddress, $0.count) }
        if n < 0 && errno == EINTR { continue }
        guard n >= 0 else { fail("read: \(String(cString: strerror(errno)))") }
        if n == 0 { return bytes }
        bytes += chunk[0..<n]
    }
}
let bytes = readInput()

// Test-only fault points: what a hostile file could make a decoder do.
switch fault {
case "crash": raise(SIGSEGV)
case "hang": while true { pause() }
case "spin": while true { _ = getpid() }
case "memory": for _ in 0..<1_000_000 { _ = malloc(1 << 20).map { memset($0, 1, 1 << 20) } }
case "network":
    let s = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    refuse(s < 0 ? "socket: \(String(cString: strerror(errno)))" : "socket: allowed")
case "write":
    let f = open("/tmp/expensed-decode-escape", O_WRONLY | O_CREAT, 0o600)
    refuse(f < 0 ? "open for writing: \(String(cString: strerror(errno)))" : "open for writing: allowed")
default: break
}

guard let kind = ReceiptKind.detect(bytes) else { refuse("is not an image the decoder reads") }
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
