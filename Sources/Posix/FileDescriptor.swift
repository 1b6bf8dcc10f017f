#if canImport(Glibc)
import Glibc
#endif
internal import CShims

/// An open file descriptor, closed when the last reference goes away.
///
/// Descriptors are handed between threads (a connection's receipt moves from
/// the socket thread to the store), so the class is `Sendable`: it holds only
/// an immutable `Int32`, and the kernel serializes concurrent calls on it.
public final class FileDescriptor: Sendable {
    /// The kernel's number for it. Valid as long as this object lives.
    public let rawValue: Int32

    /// Takes ownership of `rawValue`: it is closed in `deinit`.
    public init(owning rawValue: Int32) {
        precondition(rawValue >= 0, "negative file descriptor")
        self.rawValue = rawValue
    }

    deinit { Glibc.close(rawValue) }

    /// A descriptor of our own for the open file `rawValue` (standard
    /// output, say), closed without closing `rawValue`. Wraps
    /// `fcntl(F_DUPFD_CLOEXEC)`.
    public static func duplicate(_ rawValue: Int32) throws(SystemCallError) -> FileDescriptor {
        let copy = fcntl(rawValue, F_DUPFD_CLOEXEC, 0)
        guard copy >= 0 else { throw SystemCallError(call: "fcntl", errno: errno) }
        return FileDescriptor(owning: copy)
    }

    /// Open flags, spelled as in `open(2)`.
    public struct OpenFlags: OptionSet, Sendable {
        public let rawValue: Int32
        public init(rawValue: Int32) { self.rawValue = rawValue }
        public static let readOnly = OpenFlags(rawValue: O_RDONLY)
        public static let writeOnly = OpenFlags(rawValue: O_WRONLY)
        public static let readWrite = OpenFlags(rawValue: O_RDWR)
        public static let create = OpenFlags(rawValue: O_CREAT)
        public static let exclusive = OpenFlags(rawValue: O_EXCL)
        public static let truncate = OpenFlags(rawValue: O_TRUNC)
        public static let noFollow = OpenFlags(rawValue: O_NOFOLLOW)
        public static let nonBlocking = OpenFlags(rawValue: O_NONBLOCK)
        public static let directory = OpenFlags(rawValue: O_DIRECTORY)
        public static let noCTTY = OpenFlags(rawValue: O_NOCTTY)
    }

    /// Wraps `open(2)`; always adds `O_CLOEXEC`.
    public static func open(_ path: String, _ flags: OpenFlags, mode: UInt32 = 0o600) throws(SystemCallError) -> FileDescriptor {
        let fd = try retrying("open", path) { Glibc.open(path, flags.rawValue | O_CLOEXEC, mode) }
        return FileDescriptor(owning: fd)
    }

    /// Wraps `open(2)` for a path given as bytes, which need not be UTF-8
    /// (a file name is whatever bytes its writer chose); always adds `O_CLOEXEC`.
    public static func open(pathBytes path: [UInt8], _ flags: OpenFlags, mode: UInt32 = 0o600) throws(SystemCallError) -> FileDescriptor {
        var terminated = path.map { CChar(bitPattern: $0) }
        terminated.append(0)
        var result: Result<Int32, SystemCallError>!
        terminated.withUnsafeBufferPointer { buffer in
            do throws(SystemCallError) {
                result = .success(try retrying("open", String(decoding: path, as: UTF8.self)) {
                    Glibc.open(buffer.baseAddress!, flags.rawValue | O_CLOEXEC, mode)
                })
            } catch {
                result = .failure(error)
            }
        }
        return FileDescriptor(owning: try result.get())
    }

    /// Wraps `openat(2)` relative to this directory; always adds `O_CLOEXEC`.
    /// `name` is raw bytes, so names that are not UTF-8 still open.
    public func openAt(_ name: FileName, _ flags: OpenFlags, mode: UInt32 = 0o600) throws(SystemCallError) -> FileDescriptor {
        let fd = try name.withCString { cName throws(SystemCallError) in
            try retrying("openat", name.displayName) { Glibc.openat(rawValue, cName, flags.rawValue | O_CLOEXEC, mode) }
        }
        return FileDescriptor(owning: fd)
    }

    /// Reads into `buffer`, returning the number of bytes read (0 at end of file).
    public func read(into buffer: UnsafeMutableRawBufferPointer) throws(SystemCallError) -> Int {
        try retrying("read") { Glibc.read(rawValue, buffer.baseAddress, buffer.count) }
    }

    /// Wraps `pread(2)`: reads at `offset` without moving the file position.
    public func read(into buffer: UnsafeMutableRawBufferPointer, at offset: Int64) throws(SystemCallError) -> Int {
        try retrying("pread") { Glibc.pread(rawValue, buffer.baseAddress, buffer.count, off_t(offset)) }
    }

    /// Reads at `offset` into the start of `buffer`; returns the count (0 at end of file).
    public func read(into buffer: inout [UInt8], at offset: Int64) throws(SystemCallError) -> Int {
        try typed { try buffer.withUnsafeMutableBytes { raw in try read(into: raw, at: offset) } }
    }

    /// Writes as much of `bytes` as the descriptor takes now; returns the count.
    public func writeSome(_ bytes: [UInt8]) throws(SystemCallError) -> Int {
        try typed { try bytes.withUnsafeBytes { raw in try writeSome(raw) } }
    }

    /// Copies up to `count` bytes from `source`, starting at `offset` in it
    /// (which advances), to this descriptor's position, inside the kernel.
    /// Wraps `sendfile(2)`; returns the bytes copied, 0 at the source's end.
    /// Where the kernel cannot (`EINVAL`, `ENOSYS`), it copies through a buffer.
    public func copy(from source: FileDescriptor, offset: inout Int64, count: Int) throws(SystemCallError) -> Int {
        var position = off_t(offset)
        let n = Glibc.sendfile(rawValue, source.rawValue, &position, count)
        if n >= 0 {
            offset = Int64(position)
            return n
        }
        let code = errno
        // Interrupted before anything moved: try again (0 would mean end of file).
        if code == EINTR { return try copy(from: source, offset: &offset, count: count) }
        guard code == EINVAL || code == ENOSYS else { throw SystemCallError(call: "sendfile", errno: code) }
        var buffer = [UInt8](repeating: 0, count: min(count, 256 * 1024))
        let got = try source.read(into: &buffer, at: offset)
        if got == 0 { return 0 }
        try writeAll(buffer[0..<got])
        offset += Int64(got)
        return got
    }

    /// Asks for a pipe buffer of at least `bytes` when this is a pipe
    /// (`fcntl(F_SETPIPE_SZ)`, up to `/proc/sys/fs/pipe-max-size`): a large
    /// write then wakes its reader a few times, not once per 64 KiB.
    /// Anything else, or a refusal, leaves it as it is.
    public func enlargePipeBuffer(to bytes: Int) {
        guard (try? status())?.kind == .fifo else { return }
        _ = cshims_set_pipe_size(rawValue, Int32(clamping: bytes))
    }

    /// Reads everything up to end of file, failing once more than `limit` bytes arrive.
    /// - Returns: the bytes, or `nil` when the file holds more than `limit`.
    public func readAll(limit: Int) throws(SystemCallError) -> [UInt8]? {
        var result: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 64 * 1024)
        while true {
            let n = try typed { try chunk.withUnsafeMutableBytes { raw in try read(into: raw) } }
            if n == 0 { return result }
            if result.count + n > limit { return nil }
            result.append(contentsOf: chunk[0..<n])
        }
    }

    /// Wraps `write(2)` until every byte is written.
    public func writeAll(_ bytes: some Collection<UInt8>) throws(SystemCallError) {
        let array = Array(bytes)
        try typed { try array.withUnsafeBytes { raw in try writeAll(raw) } }
    }

    /// Writes every byte of `raw`, retrying short writes.
    public func writeAll(_ raw: UnsafeRawBufferPointer) throws(SystemCallError) {
        var offset = 0
        while offset < raw.count {
            let n = try retrying("write") { Glibc.write(rawValue, raw.baseAddress! + offset, raw.count - offset) }
            offset += n
        }
    }

    /// Wraps `write(2)` once: returns how many bytes went (for non-blocking sockets).
    public func writeSome(_ raw: UnsafeRawBufferPointer) throws(SystemCallError) -> Int {
        try retrying("write") { Glibc.write(rawValue, raw.baseAddress, raw.count) }
    }

    /// Wraps `fsync(2)`: returns once the file's data and metadata are on stable storage.
    public func sync() throws(SystemCallError) {
        try retrying("fsync") { Glibc.fsync(rawValue) }
    }

    /// Wraps `ftruncate(2)`.
    public func truncate(to size: Int64) throws(SystemCallError) {
        try retrying("ftruncate") { Glibc.ftruncate(rawValue, off_t(size)) }
    }

    /// Sets aside `length` bytes of the file system for the file from
    /// offset 0, so that writing them cannot fail for lack of space.
    /// Wraps `posix_fallocate(3)`, which returns its error rather than
    /// setting `errno` (glibc writes a byte per block where the file
    /// system has no `fallocate(2)`).
    public func allocate(length: Int64) throws(SystemCallError) {
        while true {
            let code = Glibc.posix_fallocate(rawValue, 0, off_t(length))
            if code == 0 { return }
            if code == EINTR { continue }
            throw SystemCallError(call: "posix_fallocate", errno: code)
        }
    }

    /// Wraps `fstat(2)`.
    public func status() throws(SystemCallError) -> FileStatus {
        var st = stat()
        try retrying("fstat") { Glibc.fstat(rawValue, &st) }
        return FileStatus(st)
    }

    /// The type of the file system the descriptor's file is on: `f_type`
    /// of `fstatfs(2)`, a magic number such as `0x6969` (NFS) or
    /// `0xEF53` (ext4), as listed in `statfs(2)`.
    /// Wraps `fstatfs(2)` (through `cshims_fstatfs_type`).
    public func fileSystemType() throws(SystemCallError) -> UInt32 {
        var type: UInt32 = 0
        try retrying("fstatfs") { cshims_fstatfs_type(rawValue, &type) }
        return type
    }

    /// Sets or clears `O_NONBLOCK` with `fcntl(2)`.
    public func setNonBlocking(_ on: Bool) throws(SystemCallError) {
        let flags = try retrying("fcntl") { Glibc.fcntl(rawValue, F_GETFL) }
        try retrying("fcntl") { Glibc.fcntl(rawValue, F_SETFL, on ? flags | O_NONBLOCK : flags & ~O_NONBLOCK) }
    }

    /// True when the descriptor can be read from: opened for reading (not
    /// write-only) and not an `O_PATH` handle. Checked with `fcntl(F_GETFL)`
    /// before reading a descriptor someone else opened, so that a read never
    /// fails with `EBADF` (which this module treats as a programming error).
    public var isOpenForReading: Bool {
        let flags = Glibc.fcntl(rawValue, F_GETFL)
        guard flags >= 0 else { return false }
        return flags & cshims_o_path() == 0 && flags & O_ACCMODE != O_WRONLY
    }

}

/// What `stat(2)` says about a file, reduced to what the daemon decides on.
public struct FileStatus: Sendable, Equatable {
    public enum Kind: Sendable, Equatable {
        case regular, directory, symbolicLink, fifo, socket, characterDevice, blockDevice, unknown
    }
    public let kind: Kind
    public let size: Int64
    public let linkCount: UInt64
    /// Permission bits, including setuid, setgid and sticky.
    public let mode: UInt32
    public let owner: UInt32
    public let group: UInt32
    public let device: UInt64
    public let inode: UInt64
    /// Last modification, in nanoseconds since the epoch.
    public let modifiedNanoseconds: Int64
    /// Last change of the inode (`st_ctim`: data, mode, links, a rename),
    /// in nanoseconds since the epoch. Only the kernel sets it: unlike
    /// the modification time, no writer can give a file a chosen one.
    public let changedNanoseconds: Int64

    init(_ st: stat) {
        switch st.st_mode & S_IFMT {
        case S_IFREG: kind = .regular
        case S_IFDIR: kind = .directory
        case S_IFLNK: kind = .symbolicLink
        case S_IFIFO: kind = .fifo
        case S_IFSOCK: kind = .socket
        case S_IFCHR: kind = .characterDevice
        case S_IFBLK: kind = .blockDevice
        default: kind = .unknown
        }
        size = Int64(st.st_size)
        linkCount = UInt64(st.st_nlink)
        mode = UInt32(st.st_mode & 0o7777)
        owner = st.st_uid
        group = st.st_gid
        device = UInt64(st.st_dev)
        inode = UInt64(st.st_ino)
        modifiedNanoseconds = Int64(st.st_mtim.tv_sec) * 1_000_000_000 + Int64(st.st_mtim.tv_nsec)
        changedNanoseconds = Int64(st.st_ctim.tv_sec) * 1_000_000_000 + Int64(st.st_ctim.tv_nsec)
    }
}
