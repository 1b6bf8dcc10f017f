import CDecoder
import Posix
#if canImport(Glibc)
import Glibc
#endif

/// A refusal of this receipt: its reason, exit status 65 (EX_DATAERR).
func refuse(_ reason: String) -> Never {
    FileHandleWriter.standardError("\(reason)\n")
    exit(65)
}

/// What reading needs is not installed (a language's data, Tesseract,
/// poppler-glib): exit status 78 (EX_CONFIG), `reason` the line the
/// daemon records.
func notSetUp(_ reason: String) -> Never {
    FileHandleWriter.standardError("\(reason)\n")
    exit(78)
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

/// Test-only fault points (`EXPENSED_DECODER_FAULT`): what a hostile file
/// could make a decoder do, once it is in its sandbox. (The reading mode
/// has one more, `no-tesseract`: Tesseract's library not installed.)
func actOnFault(_ fault: String?) {
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
}

/// Closes the process before a byte of the receipt is read: the limits,
/// then the seccomp filter (which then refuses `setrlimit`). Whatever the
/// mode, everything it needs is loaded before this.
func closeTheProcess(memoryBytes: UInt64, cpuSeconds: UInt64) {
    let limited = cdecoder_limit(memoryBytes, cpuSeconds)
    guard limited == 0 else { fail("setrlimit: \(String(cString: strerror(-limited)))") }
    let sandboxed = cdecoder_sandbox()
    guard sandboxed == 0 else { fail("seccomp: \(String(cString: strerror(-sandboxed)))") }
}
