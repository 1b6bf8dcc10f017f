#if canImport(Glibc)
import Glibc
#endif
internal import CShims

/// Signals as a stream of numbers. Handlers are installed when this is
/// created, before any other thread starts, so a signal sent right after
/// start-up is never lost nor left to its default action.
public final class Signals: Sendable {
    public let descriptor: FileDescriptor

    public static let terminate = SIGTERM
    public static let interrupt = SIGINT
    public static let hangUp = SIGHUP

    /// Traps `signals`. Call once per process. Also ignores `SIGPIPE`, so a
    /// peer that hangs up is an `EPIPE` error, not a dead daemon.
    public init(trapping signals: [Int32]) throws(SystemCallError) {
        Glibc.signal(SIGPIPE, SIG_IGN)
        let fd = try retrying("sigaction") { cshims_signal_pipe(signals, Int32(signals.count)) }
        descriptor = FileDescriptor(owning: fd)
    }

    /// Signals received since the last call (non-blocking).
    public func pending() -> [Int32] {
        var buffer = [UInt8](repeating: 0, count: 64)
        let n = buffer.withUnsafeMutableBytes { Glibc.read(descriptor.rawValue, $0.baseAddress, 64) }
        return n > 0 ? buffer.prefix(n).map { Int32($0) } : []
    }

    /// The signals as an async sequence; a dedicated thread waits on the pipe.
    public func stream() -> AsyncStream<Int32> {
        let (stream, continuation) = AsyncStream.makeStream(of: Int32.self)
        let fd = descriptor
        let self_ = self
        Threads.spawn(name: "signals") {
            while true {
                _ = try? Poll.wait([(fd, .readable)], timeoutMilliseconds: -1)
                for signal in self_.pending() {
                    continuation.yield(signal)
                }
            }
        }
        return stream
    }
}
