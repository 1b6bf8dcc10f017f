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
    /// - Parameter kind: what the receipt was found to be (``DecoderKindOption``);
    ///   nil: the decoder is ready for every kind.
    public func copy(of original: FileDescriptor, kind: ReceiptKind? = nil, stopping: DecoderStop? = nil) throws(CopyFailure) -> CopyResult {
        let run = DecoderRun(executable: executable, arguments: DecoderKindOption.arguments(kind) + settings.arguments, environment: environment,
                             deadlineMilliseconds: settings.deadlineMilliseconds, cpuSeconds: settings.cpuSeconds, maxOutputBytes: Self.maxOutputBytes)
        return try Self.answer(try run.output(reading: original, stopping: stopping))
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

}

/// The kind the daemon found a receipt to be, first on the decoder's command
/// line (`--kind bmp`). The decoder starts what that kind needs and no
/// more (``DecoderStart``); a receipt that turns out to need more is refused.
public enum DecoderKindOption {
    public static let flag = "--kind"

    public static func arguments(_ kind: ReceiptKind?) -> [String] { kind.map { [flag, $0.rawValue] } ?? [] }

    /// Takes `--kind KIND` from the front of `arguments`, if it is there.
    public static func take(_ arguments: inout ArraySlice<String>) throws(CopyFailure) -> ReceiptKind? {
        guard arguments.first == flag else { return nil }
        arguments.removeFirst()
        guard let text = arguments.popFirst(), let kind = ReceiptKind(rawValue: text) else {
            throw CopyFailure("\(flag) needs one of \(ReceiptKind.allCases.map(\.rawValue).joined(separator: ", "))")
        }
        return kind
    }

}

/// What the decoder starts before its sandbox closes, each more than the
/// one before: libvips with its built-in loaders (JPEG, PNG, WebP, TIFF,
/// PNM; a PDF goes as it is), with its modules as well (HEIF through
/// libheif; linking them makes the start about a third dearer), or with
/// ImageMagick started as well, which libvips reads BMP through (the
/// dearest of the three by far).
public enum DecoderStart: Int, Comparable, Sendable {
    case builtIn, modules, imageMagick

    /// What a receipt of `kind` needs; a receipt said to be nothing, all.
    public static func needed(for kind: ReceiptKind?) -> DecoderStart {
        switch kind {
        case nil, .bmp: .imageMagick
        case .heif: .modules
        case .jpeg, .png, .pdf, .webp, .tiff, .pnm: .builtIn
        }
    }

    public static func < (lhs: DecoderStart, rhs: DecoderStart) -> Bool { lhs.rawValue < rhs.rawValue }
}
