import Posix
#if canImport(Glibc)
import Glibc
#endif

/// One run of `expensed-decode` on one receipt, in either of its modes
/// (the legible copy, or reading): the child is started with the receipt
/// as its standard input, both pipes are read to their end or until the
/// deadline, and how it ended becomes a reason. A child that crashes,
/// hangs, runs out of memory or says too much costs that receipt, with a
/// reason; never the caller.
struct DecoderRun: Sendable {
    let executable: String
    let arguments: [String]
    let environment: [String: String]
    let deadlineMilliseconds: Int64
    let cpuSeconds: UInt64
    /// More on standard output than this and the child is stopped.
    let maxOutputBytes: Int

    /// What the child wrote on standard output, when it exited with 0.
    /// - Throws: ``CopyFailure``: a refusal (exit status 65) with the reason
    ///   it gave as the last line of standard error, the deadline, the CPU
    ///   limit, a crash, a failure, or ``CopyFailure/stopped``.
    func output(reading original: FileDescriptor, stopping: DecoderStop?) throws(CopyFailure) -> [UInt8] {
        let outputRead: FileDescriptor, errorsRead: FileDescriptor
        let child: Subprocess
        do {
            // The write ends live only in the child once it started: the
            // parent's copies go with this scope, so the pipes end when the child does.
            let output = try FileDescriptor.pipe(), errors = try FileDescriptor.pipe()
            child = try Subprocess(executable, arguments: arguments, environment: environment,
                                   standardInput: .descriptor(original), standardOutput: .descriptor(output.write),
                                   standardError: .descriptor(errors.write))
            (outputRead, errorsRead) = (output.read, errors.read)
        } catch {
            throw CopyFailure("the decoder could not be started: \(error)")
        }
        let (bytes, messages, ending) = collect(output: outputRead, errors: errorsRead, stop: stopping?.descriptor)
        if ending != .ended { child.signal(SIGKILL) }
        let ended = child.wait() ?? .signaled(SIGKILL)
        let said = String(decoding: messages, as: UTF8.self).split(separator: "\n").last.map(String.init) ?? ""
        switch ending {
        case .stopped: throw CopyFailure.stopped
        case .overdue: throw CopyFailure("the decoder took longer than \(deadlineMilliseconds / 1000) s (receipt_decode_timeout) and was stopped")
        case .tooLong: throw CopyFailure("the decoder's answer was longer than \(maxOutputBytes >> 20) MiB and it was stopped")
        case .ended: break
        }
        switch ended {
        case .exited(0):
            return bytes
        case .exited(65):
            throw CopyFailure(said.isEmpty ? "the decoder refused it" : said)
        case .exited(78):
            throw CopyFailure(said.isEmpty ? "the decoder is not set up to read receipts" : said)
        case .signaled(SIGXCPU):
            throw CopyFailure("the decoder used more than \(cpuSeconds) s of CPU time and was stopped")
        case .signaled(let signal):
            throw CopyFailure("the decoder crashed (signal \(signal))" + (said.isEmpty ? "" : ": \(said)"))
        case .exited(let status):
            throw CopyFailure("the decoder failed (exit status \(status))" + (said.isEmpty ? "" : ": \(said)"))
        }
    }

    enum Ending { case ended, overdue, tooLong, stopped }

    /// Reads both pipes to their end, or until the deadline: the bytes of
    /// the answer, what was said on standard error (its last 4 KiB), and
    /// how the reading ended.
    func collect(output: FileDescriptor, errors: FileDescriptor, stop: FileDescriptor?) -> (bytes: [UInt8], messages: [UInt8], ending: Ending) {
        let end = Self.now + deadlineMilliseconds
        var bytes: [UInt8] = [], messages: [UInt8] = []
        var open = [true, true]
        var buffer = [UInt8](repeating: 0, count: 64 * 1024)
        while open.contains(true) {
            let left = end - Self.now
            if left <= 0 { return (bytes, messages, .overdue) }
            let pipes = [output, errors].enumerated().filter { open[$0.offset] }
            let ready = FileDescriptor.readable(pipes.map(\.element) + (stop.map { [$0] } ?? []), milliseconds: Int32(clamping: left))
            if stop != nil && ready.last == true { return (bytes, messages, .stopped) }
            for ((index, pipe), isReady) in zip(pipes, ready) where isReady {
                let n = (try? buffer.withUnsafeMutableBytes { raw throws(SystemCallError) in try pipe.read(into: raw) }) ?? 0
                if n == 0 {
                    open[index] = false
                } else if index == 0 {
                    bytes += buffer[0..<n]
                    if bytes.count > maxOutputBytes { return (bytes, messages, .tooLong) }
                } else {
                    messages += buffer[0..<n]
                    if messages.count > 4096 { messages.removeFirst(messages.count - 4096) }
                }
            }
        }
        return (bytes, messages, .ended)
    }

    private static var now: Int64 { Int64(Clock.monotonicNanoseconds / 1_000_000) }
}
