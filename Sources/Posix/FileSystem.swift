#if canImport(Glibc)
import Glibc
#endif

/// Path-level file system calls. Durable writes go through
/// ``writeDurably(_:to:in:)``: temporary name, `fsync`, `rename`, directory `fsync`.
public enum FileSystem {
    /// Wraps `mkdir(2)`; an existing directory is not an error unless
    /// `mustBeNew`. A new directory is durable only once the entry naming it
    /// is: its parent is `fsync`ed before this returns (as for a rename,
    /// fsync(2) NOTES). A parent that may be written to but not read cannot
    /// be opened to sync it: then the entry is durable at the file system's
    /// next commit.
    /// - Returns: true when it was created.
    @discardableResult
    public static func makeDirectory(_ path: String, mode: UInt32 = 0o700, mustBeNew: Bool = false) throws(SystemCallError) -> Bool {
        if Glibc.mkdir(path, mode) == 0 {
            do {
                try syncDirectory(parent(of: path))
            } catch where error.isPermissionDenied {}
            return true
        }
        let code = errno
        if code == EEXIST, !mustBeNew, (try? status(path).kind) == .directory { return false }
        throw SystemCallError(call: "mkdir", errno: code, subject: path)
    }

    /// Creates `path` and its missing parents, each made durable in the
    /// directory above it (``makeDirectory(_:mode:mustBeNew:)``).
    public static func makeDirectories(_ path: String, mode: UInt32 = 0o700) throws(SystemCallError) {
        var prefix = path.hasPrefix("/") ? "/" : ""
        for part in path.split(separator: "/") {
            prefix += (prefix.isEmpty || prefix.hasSuffix("/") ? "" : "/") + part
            try makeDirectory(prefix, mode: mode)
        }
    }

    /// The directory `path` is in: `/` for `/a`, `.` for `a`.
    static func parent(of path: String) -> String {
        var trimmed = Substring(path)
        while trimmed.count > 1 && trimmed.hasSuffix("/") { trimmed = trimmed.dropLast() }
        guard let slash = trimmed.lastIndex(of: "/") else { return "." }
        return slash == trimmed.startIndex ? "/" : String(trimmed[..<slash])
    }

    /// Wraps `stat(2)` (follows links) or `lstat(2)` (`followLinks: false`).
    public static func status(_ path: String, followLinks: Bool = true) throws(SystemCallError) -> FileStatus {
        var st = stat()
        if followLinks {
            try retrying("stat", path) { stat(path, &st) }
        } else {
            try retrying("lstat", path) { lstat(path, &st) }
        }
        return FileStatus(st)
    }

    /// True when something exists at `path` (links are not followed).
    /// The running program's own file: `readlink(2)` of `/proc/self/exe`.
    public static var executablePath: String? {
        var buffer = [CChar](repeating: 0, count: 4096)
        let n = readlink("/proc/self/exe", &buffer, buffer.count - 1)
        guard n > 0 else { return nil }
        return String(decoding: buffer[0..<n].map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    public static func exists(_ path: String) -> Bool {
        (try? status(path, followLinks: false)) != nil
    }

    /// Wraps `rename(2)`.
    public static func rename(_ from: String, to: String) throws(SystemCallError) {
        try retrying("rename", from) { Glibc.rename(from, to) }
    }

    /// Wraps `unlink(2)`; a missing file is not an error when `missingOK`.
    public static func remove(_ path: String, missingOK: Bool = true) throws(SystemCallError) {
        if Glibc.unlink(path) == 0 { return }
        let code = errno
        if code == ENOENT && missingOK { return }
        throw SystemCallError(call: "unlink", errno: code, subject: path)
    }

    /// A new directory `base/prefixXXXXXX` (mode 0700) with a unique name.
    /// Wraps `mkdtemp(3)`.
    public static func makeTemporaryDirectory(in base: String, prefix: String) throws(SystemCallError) -> String {
        var template = Array("\(base)/\(prefix)XXXXXX".utf8CString)
        let made = template.withUnsafeMutableBufferPointer { Glibc.mkdtemp($0.baseAddress!) }
        guard made != nil else { throw SystemCallError(call: "mkdtemp", errno: errno, subject: base) }
        return String(cString: template.withUnsafeBufferPointer { $0.baseAddress! })
    }

    /// Wraps `rmdir(2)`; a missing directory is not an error.
    public static func removeDirectory(_ path: String) throws(SystemCallError) {
        if Glibc.rmdir(path) == 0 || errno == ENOENT { return }
        throw SystemCallError(call: "rmdir", errno: errno, subject: path)
    }

    /// A second name for the file at `existing` (a hard link): the file
    /// lives while either name does. Wraps `link(2)`.
    public static func link(_ existing: String, to new: String) throws(SystemCallError) {
        try retrying("link", new) { Glibc.link(existing, new) }
    }

    /// Gives the file at `path` to `group`, its owner unchanged; a
    /// symbolic link is changed itself, never followed. Wraps `lchown(2)`.
    public static func setGroup(_ path: String, _ group: UInt32) throws(SystemCallError) {
        try retrying("chown", path) { Glibc.lchown(path, uid_t.max, group) }
    }

    /// Wraps `chmod(2)`.
    public static func setMode(_ path: String, _ mode: UInt32) throws(SystemCallError) {
        try retrying("chmod", path) { Glibc.chmod(path, mode) }
    }

    /// Makes a rename or unlink in `directory` durable: `fsync(2)` on the directory.
    public static func syncDirectory(_ directory: String) throws(SystemCallError) {
        let fd = try FileDescriptor.open(directory, [.readOnly, .directory])
        try fd.sync()
    }

    /// Names in `directory` (not "." and ".."), as raw bytes, unsorted.
    /// Wraps `opendir(3)`/`readdir(3)`.
    public static func contents(of directory: String) throws(SystemCallError) -> [FileName] {
        guard let dir = Glibc.opendir(directory) else {
            throw SystemCallError(call: "opendir", errno: errno, subject: directory)
        }
        defer { Glibc.closedir(dir) }
        return try names(in: dir, subject: directory)
    }

    /// Every name `readdir(3)` gives for `dir` but "." and "..".
    static func names(in dir: OpaquePointer, subject: String?) throws(SystemCallError) -> [FileName] {
        var names: [FileName] = []
        while true {
            errno = 0
            guard let entry = Glibc.readdir(dir) else {
                if errno != 0 { throw SystemCallError(call: "readdir", errno: errno, subject: subject) }
                return names
            }
            // The name is read through the entry's pointer up to its NUL:
            // copying the whole `d_name` array would read 256 bytes, past
            // the end of a short entry at the end of readdir's buffer.
            let name = UnsafeRawPointer(entry) + MemoryLayout<dirent>.offset(of: \dirent.d_name)!
            let length = Glibc.strlen(name.assumingMemoryBound(to: CChar.self))
            let bytes = Array(UnsafeRawBufferPointer(start: name, count: length))
            if let name = FileName(bytes: bytes) { names.append(name) }
        }
    }

    /// Writes `bytes` to `directory/name` so that after a crash the file is
    /// either absent or complete: a temporary file `.name.tmp` in the same
    /// directory, `fsync`, `rename`, then `fsync` of the directory.
    public static func writeDurably(_ bytes: [UInt8], to name: String, in directory: String, mode: UInt32 = 0o600) throws(SystemCallError) {
        try replace(bytes, name: name, in: directory, mode: mode, durably: true)
    }

    /// Replaces `directory/name` with `bytes` at once, as
    /// ``writeDurably(_:to:in:mode:)`` does but without its `fsync`s: a
    /// reader sees the old file or the new one, never part of one, and
    /// after a crash it may be either. For a file made again from what is
    /// durable elsewhere, written often (the metrics file).
    public static func replaceAtomically(_ bytes: [UInt8], to name: String, in directory: String, mode: UInt32 = 0o600) throws(SystemCallError) {
        try replace(bytes, name: name, in: directory, mode: mode, durably: false)
    }

    private static func replace(_ bytes: [UInt8], name: String, in directory: String, mode: UInt32, durably: Bool) throws(SystemCallError) {
        let temporary = "\(directory)/.\(name).tmp"
        do {
            let fd = try FileDescriptor.open(temporary, [.writeOnly, .create, .truncate, .noFollow], mode: mode)
            try fd.writeAll(bytes)
            if durably { try fd.sync() }
            try rename(temporary, to: "\(directory)/\(name)")
            if durably { try syncDirectory(directory) }
        } catch {
            try? remove(temporary)
            throw error
        }
    }

    /// The size of the file system holding `path` and the space on it an
    /// unprivileged writer may still use (`f_bavail`: what ext4 reserves
    /// for root is not counted). Wraps `statvfs(3)`.
    public static func space(of path: String) throws(SystemCallError) -> FileSystemSpace {
        var info = statvfs()
        try retrying("statvfs", path) { statvfs(path, &info) }
        let block = Int64(info.f_frsize)
        return FileSystemSpace(totalBytes: Int64(info.f_blocks) * block, availableBytes: Int64(info.f_bavail) * block)
    }

    /// Reads a whole small file; `nil` when it holds more than `limit` bytes.
    public static func read(_ path: String, limit: Int = 1 << 20) throws(SystemCallError) -> [UInt8]? {
        let fd = try FileDescriptor.open(path, [.readOnly, .noCTTY])
        return try fd.readAll(limit: limit)
    }

}

/// A file system's size and what is left of it (``FileSystem/space(of:)``).
public struct FileSystemSpace: Sendable, Equatable {
    public var totalBytes: Int64
    public var availableBytes: Int64

    public init(totalBytes: Int64, availableBytes: Int64) {
        self.totalBytes = totalBytes
        self.availableBytes = availableBytes
    }
}
