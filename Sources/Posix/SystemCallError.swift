#if canImport(Glibc)
import Glibc
#endif

/// A failed system call: which call, on what, and the `errno` it set.
///
/// The description reads the systemd way: "open '/var/spool/x': Permission denied".
public struct SystemCallError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The C function that failed, e.g. `"open"`.
    public let call: String
    /// The `errno` value it set.
    public let errno: Int32
    /// What it was called on (a path or a socket name), when that helps.
    public let subject: String?

    public init(call: String, errno: Int32, subject: String? = nil) {
        self.call = call
        self.errno = errno
        self.subject = subject
    }

    /// `strerror(3)` of `errno`.
    public var reason: String { String(cString: strerror(errno)) }

    public var description: String {
        if let subject { return "\(call) '\(subject)': \(reason)" }
        return "\(call): \(reason)"
    }

    /// True when the call failed because the thing did not exist (`ENOENT`).
    public var isNotFound: Bool { errno == ENOENT }
    /// The name is taken already (`EEXIST`).
    public var isExisting: Bool { errno == EEXIST }
    /// The two paths are on different file systems (`EXDEV`).
    public var isCrossDevice: Bool { errno == EXDEV }
    /// True when a name or path was longer than the call takes (`ENAMETOOLONG`).
    public var isNameTooLong: Bool { errno == ENAMETOOLONG }
    /// True when nothing listens at the address (`ECONNREFUSED`).
    public var isConnectionRefused: Bool { errno == ECONNREFUSED }
    /// An argument the call does not take (`EINVAL`): for `renameat2`,
    /// also a flag the file system does not support (NFS, FUSE without `rename2`).
    public var isInvalidArgument: Bool { errno == EINVAL }
    /// Too many open files (`EMFILE`): for `inotify_init1`, also the
    /// per-user limit on inotify instances (`inotify_init(2)`).
    public var isTooManyOpenFiles: Bool { errno == EMFILE }
    /// No space left (`ENOSPC`): for `inotify_add_watch`, the per-user limit
    /// on inotify watches (`inotify_add_watch(2)`).
    public var isNoSpace: Bool { errno == ENOSPC }
    /// The file system has no room for it: no space left (`ENOSPC`) or the
    /// user's quota reached (`EDQUOT`).
    public var isNoRoom: Bool { errno == ENOSPC || errno == EDQUOT }
    /// True when the call would have blocked on a non-blocking descriptor.
    public var wouldBlock: Bool { errno == EAGAIN || errno == EWOULDBLOCK }
}

/// Calls `body` until it does not fail with `EINTR`; `-1` becomes a thrown
/// ``SystemCallError``. Every wrapper goes through here, so no caller ever
/// sees `EINTR`.
@discardableResult
func retrying<T: BinaryInteger>(
    _ call: String, _ subject: @autoclosure () -> String? = nil, _ body: () -> T
) throws(SystemCallError) -> T {
    while true {
        let result = body()
        if result >= 0 { return result }
        let code = Glibc.errno
        if code == EINTR { continue }
        // Programmer errors, not runtime conditions: a descriptor we do not
        // own or a bad pointer means the process state is already wrong.
        precondition(code != EBADF && code != EFAULT, "\(call) failed with \(code == EBADF ? "EBADF" : "EFAULT")")
        // Built only on failure: a subject is often a file name made
        // displayable, which costs more than the call that succeeded.
        throw SystemCallError(call: call, errno: code, subject: subject())
    }
}

/// Runs `body`, whose closures throw only ``SystemCallError`` but pass
/// through untyped `rethrows` APIs (`withUnsafeBytes`), and restores the type.
@discardableResult
func typed<R>(_ body: () throws -> R) throws(SystemCallError) -> R {
    do {
        return try body()
    } catch let error as SystemCallError {
        throw error
    } catch {
        preconditionFailure("unexpected error \(error)")
    }
}
