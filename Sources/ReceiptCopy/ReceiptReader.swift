import ExpenseCore
import Posix
import ReceiptReading

/// Reads the text of one receipt with `expensed-decode --read`: Tesseract
/// and poppler run in the decoder's sandbox (docs/receipts.md, "Reading"),
/// and only their answer comes back, as JSON lines that are checked
/// against ``ReadTextCodec``'s limits. What it returns is text, not yet
/// fields: ``ReceiptParser`` makes the suggestions.
public struct ReceiptReader: Sendable {
    public let executable: String
    public let settings: ReadSettings
    public let environment: [String: String]

    /// - Parameter environment: added to the child's: the backtracer off
    ///   (``ReceiptDecoder/init(executable:settings:environment:)``), and
    ///   OpenMP held to one thread, so Tesseract's threads never compete
    ///   with the daemon's for the machine's cores (Tesseract's own advice
    ///   for one process per page).
    public init(executable: String, settings: ReadSettings, environment: [String: String] = [:]) {
        self.executable = executable
        self.settings = settings
        self.environment = environment.merging(["SWIFT_BACKTRACE": "enable=no", "OMP_THREAD_LIMIT": "1"]) { mine, _ in mine }
    }

    /// Reads the receipt `original` (open for reading). Blocking: up to the deadline.
    /// - Throws: ``CopyFailure`` with the reason: a refusal (too many
    ///   pixels or pages, a file that is not an image or PDF), missing
    ///   language data, the deadline, a crash, or an answer that breaks
    ///   the codec's rules.
    public func read(_ original: FileDescriptor, stopping: DecoderStop? = nil) throws(CopyFailure) -> ReadText {
        let run = DecoderRun(executable: executable, arguments: settings.arguments, environment: environment,
                             deadlineMilliseconds: settings.deadlineMilliseconds, cpuSeconds: settings.cpuSeconds,
                             maxOutputBytes: ReadTextCodec.maxAnswerBytes)
        let bytes = try run.output(reading: original, stopping: stopping)
        do { return try ReadTextCodec.decode(bytes) } catch { throw CopyFailure(error.reason) }
    }
}
