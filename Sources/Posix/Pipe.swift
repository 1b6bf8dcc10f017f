#if canImport(Glibc)
import Glibc
#endif

extension FileDescriptor {
    /// A pipe, both ends close-on-exec: `pipe(2)`, then `FD_CLOEXEC`.
    public static func pipe() throws(SystemCallError) -> (read: FileDescriptor, write: FileDescriptor) {
        var ends: [Int32] = [-1, -1]
        guard Glibc.pipe(&ends) == 0 else { throw SystemCallError(call: "pipe", errno: errno) }
        let pair = (read: FileDescriptor(owning: ends[0]), write: FileDescriptor(owning: ends[1]))
        // Subprocess closes every descriptor above 2 in its children anyway.
        _ = fcntl(ends[0], F_SETFD, FD_CLOEXEC)
        _ = fcntl(ends[1], F_SETFD, FD_CLOEXEC)
        return pair
    }

    /// Which of `descriptors` are readable (or at end of file, or in
    /// error), waiting at most `milliseconds` (-1: as long as it takes):
    /// `poll(2)`. An interrupted wait returns none.
    public static func readable(_ descriptors: [FileDescriptor], milliseconds: Int32) -> [Bool] {
        var entries = descriptors.map { pollfd(fd: $0.rawValue, events: Int16(POLLIN), revents: 0) }
        let n = Glibc.poll(&entries, nfds_t(entries.count), milliseconds)
        guard n > 0 else { return descriptors.map { _ in false } }
        return entries.map { $0.revents != 0 }
    }
}
