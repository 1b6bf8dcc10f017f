#if canImport(Glibc)
import Glibc
#endif

/// An exclusive record lock (`fcntl(2)` `F_SETLK` on the whole file) on a
/// lock file that also records its holder's pid.
///
/// The lock lives as long as this object (the kernel drops it when the
/// process ends, also on `kill -9`), so a stale lock file never blocks.
/// A record lock belongs to the process, not to the open file: a child
/// does not inherit it, so a child that is still between `fork` and
/// `exec` when its parent is killed (a `posix_spawn` under way) cannot
/// keep the lock from the parent's successor, as it would an `flock(2)`.
/// The one rule that comes with it: closing any descriptor of the file
/// in this process drops the lock, so nothing else here opens it.
public final class FileLock: Sendable {
    let descriptor: FileDescriptor
    public let path: String

    public enum Failure: Error, Sendable {
        /// Another process holds it; its pid, when the file names one.
        case held(by: Int32?)
        case system(SystemCallError)
    }

    /// Takes the lock without waiting (`LOCK_EX | LOCK_NB`) and writes our pid into the file.
    public init(path: String) throws(Failure) {
        self.path = path
        let fd: FileDescriptor
        do {
            fd = try FileDescriptor.open(path, [.readWrite, .create, .noFollow], mode: 0o644)
        } catch {
            throw .system(error)
        }
        var whole = flock()
        whole.l_type = Int16(F_WRLCK)
        whole.l_whence = Int16(SEEK_SET)
        if fcntl(fd.rawValue, F_SETLK, &whole) != 0 {
            let code = errno
            if code == EAGAIN || code == EACCES {
                // The kernel knows the holder; the file says who wrote it last.
                var probe = flock()
                probe.l_type = Int16(F_WRLCK)
                probe.l_whence = Int16(SEEK_SET)
                if fcntl(fd.rawValue, F_GETLK, &probe) == 0 && probe.l_type != Int16(F_UNLCK) && probe.l_pid > 0 {
                    throw .held(by: probe.l_pid)
                }
                let text = (try? fd.readAll(limit: 64)).flatMap { $0 }.map { String(decoding: $0, as: UTF8.self) }
                throw .held(by: text.flatMap { Int32($0.trimmingCharacters(in: " \n")) })
            }
            throw .system(SystemCallError(call: "fcntl(F_SETLK)", errno: code, subject: path))
        }
        do {
            try fd.truncate(to: 0)
            try fd.writeAll(Array("\(getpid())\n".utf8))
        } catch {
            throw .system(error)
        }
        descriptor = fd
    }
}

extension String {
    /// This string without the given characters at either end.
    func trimmingCharacters(in set: String) -> String {
        let chars = Set(set)
        var s = Substring(self)
        while let f = s.first, chars.contains(f) { s.removeFirst() }
        while let l = s.last, chars.contains(l) { s.removeLast() }
        return String(s)
    }
}
