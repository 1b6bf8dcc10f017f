import ExpenseCore
import Posix
#if canImport(Glibc)
import Glibc
#endif

/// What the decoder made of one receipt.
public enum CopyResult: Sendable, Equatable {
    /// The receipt goes as it is (``CopyPlan/original``).
    case original
    /// A legible copy: a JPEG, or a PDF of a multi-page scan.
    case copy(kind: ReceiptKind, bytes: [UInt8], width: Int, height: Int, pages: Int)
}

/// Stops decoders in flight: ``ReceiptDecoder/copy(of:stopping:)`` waits on
/// its pipe besides the child's, so that a daemon stopping does not wait
/// for a decoder's deadline.
public final class DecoderStop: Sendable {
    private let pipe: (read: FileDescriptor, write: FileDescriptor)

    public init() throws(SystemCallError) { pipe = try FileDescriptor.pipe() }

    /// Every decoder running, and every one started from now on, is stopped.
    public func stop() { _ = try? pipe.write.writeSome([1]) }

    var descriptor: FileDescriptor { pipe.read }
}

/// Runs `expensed-decode` on one receipt: the untrusted bytes are read by
/// that child, in its sandbox, and only its answer comes back over a pipe
/// (docs/receipts.md, "The sandbox"). A child that crashes, hangs, runs
/// out of memory or says something malformed costs that receipt, with a
/// reason; never the caller.
///
/// The answer on the child's standard output is one line, `original`,
/// `jpeg WIDTH HEIGHT` or `pdf PAGES WIDTH HEIGHT`, followed by the copy's
/// bytes; a refusal is exit status 65 with its reason as the last line
/// of standard error.
public struct ReceiptDecoder: Sendable {
    public let executable: String
    public let settings: CopySettings
    /// The child's whole environment (a test's fault point, say).
    public let environment: [String: String]

    /// The most a copy may be: far more than a legible JPEG of `maxEdge`.
    public static let maxOutputBytes = 256 << 20

    /// - Parameter environment: added to the child's own: Swift's crash
    ///   backtracer off (it would try to start a program, which the
    ///   sandbox forbids, and wait), nothing else of the daemon's.
    public init(executable: String, settings: CopySettings, environment: [String: String] = [:]) {
        self.executable = executable
        self.settings = settings
        self.environment = environment.merging(["SWIFT_BACKTRACE": "enable=no"]) { mine, _ in mine }
    }

    /// The decoder beside the running executable (`expensed-decode` in the
    /// same directory as `expensed`).
    public static func besides(_ executablePath: String) -> String {
        let directory = executablePath.split(separator: "/", omittingEmptySubsequences: false).dropLast().joined(separator: "/")
        return (directory.isEmpty ? "." : directory) + "/expensed-decode"
    }

    /// Decodes the receipt `original` (open for reading). Blocking: up to the deadline.
    public func copy(of original: FileDescriptor, stopping: DecoderStop? = nil) throws(CopyFailure) -> CopyResult {
        let outputRead: FileDescriptor, errorsRead: FileDescriptor
        let child: Subprocess
        do {
            // The write ends live only in the child once it started: the
            // parent's copies go with this scope, so the pipes end when the child does.
            let output = try FileDescriptor.pipe(), errors = try FileDescriptor.pipe()
            child = try Subprocess(executable, arguments: settings.arguments, environment: environment,
                                   standardInput: .descriptor(original), standardOutput: .descriptor(output.write),
                                   standardError: .descriptor(errors.write))
            (outputRead, errorsRead) = (output.read, errors.read)
        } catch {
            throw CopyFailure("the decoder could not be started: \(error)")
        }
        let (bytes, messages, overdue, stopped) = Self.collect(output: outputRead, errors: errorsRead, stop: stopping?.descriptor,
                                                               deadline: settings.deadlineMilliseconds)
        if overdue || stopped { child.signal(SIGKILL) }
        let ended = child.wait() ?? .signaled(SIGKILL)
        let said = String(decoding: messages, as: UTF8.self).split(separator: "\n").last.map(String.init) ?? ""
        if stopped { throw CopyFailure.stopped }
        if overdue {
            throw CopyFailure("the decoder took longer than \(settings.deadlineMilliseconds / 1000) s (receipt_decode_timeout) and was stopped")
        }
        switch ended {
        case .exited(0):
            return try Self.answer(bytes)
        case .exited(65):
            throw CopyFailure(said.isEmpty ? "the decoder refused it" : said)
        case .signaled(SIGXCPU):
            throw CopyFailure("the decoder used more than \(settings.cpuSeconds) s of CPU time (receipt_decode_cpu) and was stopped")
        case .signaled(let signal):
            throw CopyFailure("the decoder crashed (signal \(signal))" + (said.isEmpty ? "" : ": \(said)"))
        case .exited(let status):
            throw CopyFailure("the decoder failed (exit status \(status))" + (said.isEmpty ? "" : ": \(said)"))
        }
    }

    /// Parses the child's answer line and takes the bytes after it.
    static func answer(_ bytes: [UInt8]) throws(CopyFailure) -> CopyResult {
        guard let newline = bytes.prefix(128).firstIndex(of: 0x0A) else { throw CopyFailure("the decoder's answer has no header line") }
        let words = String(decoding: bytes[..<newline], as: UTF8.self).split(separator: " ")
        let body = Array(bytes[(newline + 1)...])
        let numbers = words.dropFirst().compactMap { Int($0) }
        switch (words.first, numbers.count, numbers.count == words.count - 1) {
        case ("original", 0, true) where body.isEmpty:
            return .original
        case ("jpeg", 2, true) where ReceiptValidator.check(body) == .complete(.jpeg):
            return .copy(kind: .jpeg, bytes: body, width: numbers[0], height: numbers[1], pages: 1)
        case ("pdf", 3, true) where ReceiptValidator.check(body) == .complete(.pdf):
            return .copy(kind: .pdf, bytes: body, width: numbers[1], height: numbers[2], pages: numbers[0])
        default:
            throw CopyFailure("the decoder's answer is malformed")
        }
    }

    /// Reads both pipes to their end, or until the deadline: the bytes of
    /// the answer, what was said on standard error (its last 4 KiB), and
    /// whether the deadline passed first.
    static func collect(output: FileDescriptor, errors: FileDescriptor, stop: FileDescriptor?, deadline milliseconds: Int64)
        -> (bytes: [UInt8], messages: [UInt8], overdue: Bool, stopped: Bool) {
        let end = Self.now + milliseconds
        var bytes: [UInt8] = [], messages: [UInt8] = []
        var open = [true, true]
        var buffer = [UInt8](repeating: 0, count: 64 * 1024)
        while open.contains(true) {
            let left = end - Self.now
            if left <= 0 { return (bytes, messages, true, false) }
            let pipes = [output, errors].enumerated().filter { open[$0.offset] }
            let ready = FileDescriptor.readable(pipes.map(\.element) + (stop.map { [$0] } ?? []), milliseconds: Int32(clamping: left))
            if stop != nil && ready.last == true { return (bytes, messages, false, true) }
            for ((index, pipe), isReady) in zip(pipes, ready) where isReady {
                let n = (try? buffer.withUnsafeMutableBytes { raw throws(SystemCallError) in try pipe.read(into: raw) }) ?? 0
                if n == 0 {
                    open[index] = false
                } else if index == 0 {
                    bytes += buffer[0..<n]
                    if bytes.count > maxOutputBytes { return (bytes, messages, true, false) }
                } else {
                    messages += buffer[0..<n]
                    if messages.count > 4096 { messages.removeFirst(messages.count - 4096) }
                }
            }
        }
        return (bytes, messages, false, false)
    }

    private static var now: Int64 { Int64(Clock.monotonicNanoseconds / 1_000_000) }
}
