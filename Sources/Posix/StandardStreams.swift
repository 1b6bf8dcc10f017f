#if canImport(Glibc)
import Glibc
#endif

/// Writes to the process's standard output and error, one `write(2)` per
/// call, so lines from concurrent threads never interleave mid-line.
public enum StandardStreams {
    /// Writes `text` and a newline to standard error.
    public static func writeErrorLine(_ text: String) {
        write(text + "\n", to: 2)
    }

    /// Writes `text` and a newline to standard output.
    public static func writeOutputLine(_ text: String) {
        write(text + "\n", to: 1)
    }

    private static func write(_ text: String, to fd: Int32) {
        var bytes = Array(text.utf8)
        var offset = 0
        while offset < bytes.count {
            let n = bytes.withUnsafeMutableBytes { Glibc.write(fd, $0.baseAddress! + offset, $0.count - offset) }
            if n < 0 && errno == EINTR { continue }
            // A closed or full stream cannot be reported anywhere else.
            if n <= 0 { return }
            offset += n
        }
    }
}

/// The running process as a whole.
public enum CurrentProcess {
    /// Ends the process with `status` (`exit(3)`: buffers flushed, atexit handlers run).
    public static func exit(_ status: Int32) -> Never {
        Glibc.exit(status)
    }

    /// The arguments after the program name as the kernel passed them:
    /// bytes, which need not be UTF-8. (`CommandLine.arguments` replaces
    /// invalid bytes with U+FFFD, so a caller could not tell.)
    public static var rawArguments: [[UInt8]] {
        // argc may be 0 (execve with an empty argv): there is nothing after the name then.
        guard CommandLine.argc > 1 else { return [] }
        return (1..<Int(CommandLine.argc)).map { index in
            guard let argument = CommandLine.unsafeArgv[index] else { return [] }
            return Array(UnsafeBufferPointer(start: argument, count: strlen(argument))).map { UInt8(bitPattern: $0) }
        }
    }

    /// Unblocks `signals` for the calling thread and the threads it starts
    /// later (`pthread_sigmask(2)`). A process inherits its parent's mask
    /// across `exec`; a launcher that blocks SIGTERM would otherwise leave
    /// the process deaf to it.
    public static func unblockSignals(_ signals: [Int32]) {
        var set = sigset_t()
        sigemptyset(&set)
        for signal in signals { sigaddset(&set, signal) }
        pthread_sigmask(SIG_UNBLOCK, &set, nil)
    }

    /// Lowers the process's CPU priority to `nice` (`setpriority(2)`),
    /// which threads started later inherit: under a full load it still
    /// gets a share of a core (nice 10: about a tenth against one process
    /// at nice 0), unlike the idle class, which gets almost none while
    /// anything else runs. For work someone waits on, but later than on the rest.
    /// - Returns: false when it could not be set.
    @discardableResult
    public static func lowerPriority(to nice: Int32) -> Bool {
        setpriority(__priority_which_t(PRIO_PROCESS.rawValue), 0, nice) == 0
    }

    /// Sleeps the calling thread (`nanosleep(2)`, resumed after signals).
    /// For deliberate delays only, never to wait for a condition.
    public static func sleep(milliseconds: Int) {
        var request = timespec(tv_sec: milliseconds / 1000, tv_nsec: (milliseconds % 1000) * 1_000_000)
        var remaining = timespec()
        while nanosleep(&request, &remaining) != 0 && errno == EINTR { request = remaining }
    }
}
