#if canImport(Glibc)
import Glibc
#endif

/// An exclusive `flock(2)` on a lock file that records its holder's pid.
///
/// The lock lives as long as this object (the kernel drops it when the
/// descriptor closes, also on `kill -9`), so a stale lock file never blocks.
public final class FileLock: Sendable {
    private let descriptor: FileDescriptor
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
        if flock(fd.rawValue, LOCK_EX | LOCK_NB) != 0 {
            let code = errno
            if code == EWOULDBLOCK {
                let text = (try? fd.readAll(limit: 64)).flatMap { $0 }.map { String(decoding: $0, as: UTF8.self) }
                throw .held(by: text.flatMap { Int32($0.trimmingCharacters(in: " \n")) })
            }
            throw .system(SystemCallError(call: "flock", errno: code, subject: path))
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
