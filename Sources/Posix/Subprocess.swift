#if canImport(Glibc)
import Glibc
#endif
internal import CShims
import Synchronization

/// How a child process ended, as `waitpid(2)` reported it (wait(2):
/// `WIFEXITED`/`WEXITSTATUS`, `WIFSIGNALED`/`WTERMSIG`).
public enum Termination: Sendable, Equatable, CustomStringConvertible {
    /// It called `exit(3)` with this status (or returned it from `main`).
    case exited(Int32)
    /// This signal killed it.
    case signaled(Int32)

    init(waitStatus: Int32) {
        var status: Int32 = -1
        var signal: Int32 = -1
        cshims_wait_status(waitStatus, &status, &signal)
        // Without WUNTRACED or WCONTINUED, waitpid reports only these two.
        self = status >= 0 ? .exited(status) : .signaled(signal)
    }

    /// What a shell's `$?` would show: the exit status, or 128 plus the
    /// number of the signal (bash(1), EXIT STATUS), so that a crash is
    /// never mistaken for a small exit status.
    public var shellStatus: Int32 {
        switch self {
        case .exited(let status): status
        case .signaled(let signal): 128 + signal
        }
    }

    public var description: String {
        switch self {
        case .exited(let status): "exited with status \(status)"
        case .signaled(let signal): "killed by signal \(signal) (\(String(cString: strsignal(signal))))"
        }
    }
}

/// A child process, started with `posix_spawn(3)` and reaped with
/// `waitpid(2)`.
///
/// The child starts with exactly three descriptors: standard input, output
/// and error as asked, and every other one closed
/// (`posix_spawn_file_actions_addclosefrom_np(3)`), so nothing the parent
/// holds open (a socket, a lock, the write end of a pipe, a file opened
/// without `O_CLOEXEC` by some library) leaks into it. It starts with no
/// signal blocked and every signal at its default action
/// (`posix_spawnattr_setsigmask(3)`, `posix_spawnattr_setsigdefault(3)`):
/// a signal mask and ignored signals are inherited across `execve(2)`
/// (signal(7)), so a parent that blocks SIGTERM or ignores SIGPIPE would
/// otherwise hand that on. (Except glibc's own two signals, 32 and 33 in
/// nptl(7): its posix_spawn leaves them ignored, and sigfillset(3) cannot
/// name them; a glibc program installs its handlers for them at start-up.)
///
/// The exit is awaited on a pidfd (`pidfd_open(2)`), which `poll(2)`
/// reports readable once the child has exited: a wait with a deadline
/// sleeps in the kernel instead of calling `waitpid` again and again. Only
/// this object reaps its pid (`waitpid(pid, WNOHANG)`, under a lock shared
/// with ``signal(_:)``), so a signal can never reach another process that
/// was given the same pid after the child was reaped.
public final class Subprocess: Sendable {
    /// Where one of the child's standard streams comes from or goes.
    public enum Redirection: Sendable {
        /// The parent's own stream.
        case inherit
        /// `/dev/null`: end of file to read, and writes discarded.
        case nullDevice
        /// This descriptor (3 or above), made the stream with `dup2(2)` in
        /// the child; the parent keeps its own copy.
        case descriptor(FileDescriptor)
    }

    /// The child's process id.
    public let pid: Int32
    private let exitNotifier: FileDescriptor
    private let ending: Mutex<Termination?> = Mutex(nil)

    /// Starts `executable` (a path: no `PATH` search) with `arguments`.
    /// `argv[0]` is `executable`.
    /// - Parameters:
    ///   - environment: the child's whole environment; `nil` passes on
    ///     the parent's (environ(7)).
    /// - Throws: `SystemCallError` from `posix_spawn` when the executable
    ///   cannot be run (`ENOENT` when it is missing, `EACCES` when it is
    ///   not executable: glibc reports the `execve(2)` error), or with
    ///   `EINVAL` when an argument or variable holds a NUL byte, which no
    ///   C string can carry.
    public init(_ executable: String, arguments: [String] = [], environment: [String: String]? = nil,
                standardInput: Redirection = .nullDevice, standardOutput: Redirection = .inherit,
                standardError: Redirection = .inherit) throws(SystemCallError) {
        let argv = [executable] + arguments
        let envp = environment.map { $0.map { "\($0.key)=\($0.value)" }.sorted() }
        guard !(argv + (envp ?? [])).contains(where: { $0.utf8.contains(0) }) else {
            throw SystemCallError(call: "posix_spawn", errno: EINVAL, subject: executable)
        }
        let streams = [standardInput, standardOutput, standardError]

        var actions = posix_spawn_file_actions_t()
        try Self.check("posix_spawn_file_actions_init", posix_spawn_file_actions_init(&actions))
        defer { posix_spawn_file_actions_destroy(&actions) }
        for (target, stream) in streams.enumerated() {
            let target = Int32(target)
            switch stream {
            case .inherit:
                break
            case .nullDevice:
                try Self.check("posix_spawn_file_actions_addopen",
                               posix_spawn_file_actions_addopen(&actions, target, "/dev/null", target == 0 ? O_RDONLY : O_WRONLY, 0))
            case .descriptor(let descriptor):
                // A source below 3 could be one of the streams already replaced.
                precondition(descriptor.rawValue > 2, "redirect from descriptor \(descriptor.rawValue), which is a standard stream")
                try Self.check("posix_spawn_file_actions_adddup2", posix_spawn_file_actions_adddup2(&actions, descriptor.rawValue, target))
            }
        }
        // After the dup2s, so their sources are closed too.
        try Self.check("posix_spawn_file_actions_addclosefrom_np", cshims_spawn_addclosefrom(&actions, 3))

        var attributes = posix_spawnattr_t()
        try Self.check("posix_spawnattr_init", posix_spawnattr_init(&attributes))
        defer { posix_spawnattr_destroy(&attributes) }
        var noSignals = sigset_t()
        sigemptyset(&noSignals)
        var allSignals = sigset_t()
        sigfillset(&allSignals)
        try Self.check("posix_spawnattr_setsigmask", posix_spawnattr_setsigmask(&attributes, &noSignals))
        try Self.check("posix_spawnattr_setsigdefault", posix_spawnattr_setsigdefault(&attributes, &allSignals))
        try Self.check("posix_spawnattr_setflags", posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF)))

        var child: pid_t = 0
        let result = Self.withCStringArray(argv) { argvPointer in
            if let envp {
                return Self.withCStringArray(envp) { posix_spawn(&child, executable, &actions, &attributes, argvPointer, $0) }
            }
            return posix_spawn(&child, executable, &actions, &attributes, argvPointer, cshims_environ())
        }
        withExtendedLifetime(streams) {}
        // posix_spawn returns the error rather than setting errno.
        guard result == 0 else { throw SystemCallError(call: "posix_spawn", errno: result, subject: executable) }

        let notifier = cshims_pidfd_open(child)
        guard notifier >= 0 else {
            let code = Glibc.errno
            // A child nobody could wait for: stop it now rather than leave it.
            Glibc.kill(child, SIGKILL)
            var status: Int32 = 0
            while waitpid(child, &status, 0) < 0 && Glibc.errno == EINTR {}
            throw SystemCallError(call: "pidfd_open", errno: code, subject: executable)
        }
        pid = child
        exitNotifier = FileDescriptor(owning: notifier)
    }

    /// A child still running when its owner lets go is killed (SIGKILL) and
    /// reaped: no child outlives the only object that could stop it, and
    /// none is left a zombie.
    deinit {
        if reap() == nil {
            signal(SIGKILL)
            wait()
        }
    }

    /// How the child ended, or `nil` while it runs.
    public var termination: Termination? { reap() }

    /// True until the child has exited (and been reaped).
    public var isRunning: Bool { reap() == nil }

    /// Waits until the child exits, for at most `timeout` (`nil`: as long
    /// as it takes), sleeping in `poll(2)` on its pidfd.
    /// - Returns: how it ended, or `nil` when it still runs at the deadline.
    @discardableResult
    public func wait(timeout: Duration? = nil) -> Termination? {
        let deadline = timeout.map { ContinuousClock.now + $0 }
        while true {
            if let ended = reap() { return ended }
            var milliseconds: Int32 = -1
            if let deadline {
                let left = deadline - ContinuousClock.now
                if left <= .zero { return nil }
                let (seconds, attoseconds) = left.components
                // Rounded up, so the last poll does not wake just before the deadline.
                milliseconds = Int32(clamping: seconds * 1000 + (attoseconds + 999_999_999_999_999) / 1_000_000_000_000_000)
            }
            // An interrupted poll comes back empty; the loop checks again.
            _ = try? Poll.wait([(exitNotifier, .readable)], timeoutMilliseconds: milliseconds)
        }
    }

    /// Sends `signal` to the child (`kill(2)`), unless it has already been
    /// reaped: its pid may since have been given to another process.
    public func signal(_ signal: Int32) {
        ending.withLock { ended in
            guard ended == nil else { return }
            // A zombie not yet reaped still takes signals: kill fails only
            // for a signal number that does not exist.
            let result = Glibc.kill(pid, signal)
            precondition(result == 0 || Glibc.errno != EINVAL, "kill: no signal \(signal)")
        }
    }

    /// `waitpid(pid, WNOHANG)`: records the termination once the child has exited.
    private func reap() -> Termination? {
        ending.withLock { ended in
            if let ended { return ended }
            var status: Int32 = 0
            var got: pid_t
            repeat { got = waitpid(pid, &status, WNOHANG) } while got < 0 && Glibc.errno == EINTR
            // ECHILD: someone else reaped our child (SIGCHLD set to SIG_IGN,
            // or a waitpid(-1) elsewhere), so its pid is no longer ours to use.
            precondition(got >= 0, "waitpid(\(pid)): \(String(cString: strerror(Glibc.errno)))")
            guard got == pid else { return nil }
            ended = Termination(waitStatus: status)
            return ended
        }
    }

    /// The posix_spawn family returns an error number instead of setting errno.
    private static func check(_ call: String, _ result: Int32) throws(SystemCallError) {
        guard result == 0 else { throw SystemCallError(call: call, errno: result) }
    }

    /// `strings` as the NULL-terminated array of C strings `execve(2)` takes
    /// for `argv` and `envp`, valid during `body`.
    private static func withCStringArray<R>(_ strings: [String], _ body: (UnsafePointer<UnsafeMutablePointer<CChar>?>) -> R) -> R {
        let pointers: [UnsafeMutablePointer<CChar>?] = strings.map { strdup($0) } + [nil]
        defer { for pointer in pointers { free(pointer) } }
        return pointers.withUnsafeBufferPointer { body($0.baseAddress!) }
    }
}
