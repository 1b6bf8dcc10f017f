#if canImport(Glibc)
import Glibc
#endif
internal import CShims

/// Calls relative to an open directory (`*at(2)`), so that a name is looked
/// up in that directory and nowhere else, whatever happens to its path.
extension FileDescriptor {
    /// What is at `name` in this directory, without following a symbolic
    /// link and without opening it. Wraps `fstatat(2)` with `AT_SYMLINK_NOFOLLOW`.
    public func statusAt(_ name: FileName) throws(SystemCallError) -> FileStatus {
        var st = stat()
        try name.withCString { cName throws(SystemCallError) in
            _ = try retrying("fstatat", name.displayName) { Glibc.fstatat(rawValue, cName, &st, AT_SYMLINK_NOFOLLOW) }
        }
        return FileStatus(st)
    }

    /// Removes the link `name` from this directory. Wraps `unlinkat(2)`.
    public func removeAt(_ name: FileName) throws(SystemCallError) {
        try name.withCString { cName throws(SystemCallError) in
            _ = try retrying("unlinkat", name.displayName) { Glibc.unlinkat(rawValue, cName, 0) }
        }
    }

    /// Creates the directory `name` in this directory, durably: this
    /// directory is `fsync`ed after it, so the new entry survives a crash.
    /// Wraps `mkdirat(2)`; an existing name is an error (`EEXIST`), whatever it is.
    public func makeDirectoryAt(_ name: FileName, mode: UInt32) throws(SystemCallError) {
        try name.withCString { cName throws(SystemCallError) in
            _ = try retrying("mkdirat", name.displayName) { Glibc.mkdirat(rawValue, cName, mode_t(mode)) }
        }
        try sync()
    }

    /// Moves `name` in this directory to `newName` in `directory` (which
    /// may be this one). Wraps `renameat(2)`; with `replacing: false` it
    /// wraps `renameat2(2)` with `RENAME_NOREPLACE` and fails with `EEXIST`
    /// instead of replacing anything.
    public func renameAt(_ name: FileName, to newName: FileName, in directory: FileDescriptor, replacing: Bool) throws(SystemCallError) {
        let from = rawValue, to = directory.rawValue
        try name.withCString { old throws(SystemCallError) in
            try newName.withCString { new throws(SystemCallError) in
                _ = try retrying(replacing ? "renameat" : "renameat2", name.displayName) {
                    replacing ? Glibc.renameat(from, old, to, new) : cshims_renameat_noreplace(from, old, to, new)
                }
            }
        }
        withExtendedLifetime(directory) {}
    }

    /// The names in this directory (not "." and ".."), as raw bytes,
    /// unsorted. Reads through a descriptor of its own, so it shares no
    /// position with this one. Wraps `fdopendir(3)`/`readdir(3)`.
    public func entries() throws(SystemCallError) -> [FileName] {
        let raw = try retrying("openat", ".") { Glibc.openat(rawValue, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC) }
        guard let dir = Glibc.fdopendir(raw) else {
            let code = errno
            Glibc.close(raw)
            throw SystemCallError(call: "fdopendir", errno: code)
        }
        defer { Glibc.closedir(dir) }
        return try FileSystem.names(in: dir, subject: nil)
    }
}

extension SystemCallError {
    /// True when the name was taken already (`EEXIST`), e.g. by `O_EXCL`,
    /// `mkdirat` or a rename that must not replace.
    public var alreadyExists: Bool { errno == EEXIST }
    /// True when `O_NOFOLLOW` met a symbolic link (`ELOOP`).
    public var isSymbolicLink: Bool { errno == ELOOP }
    /// True when permission bits forbade it (`EACCES`, `EPERM`).
    public var isPermissionDenied: Bool { errno == EACCES || errno == EPERM }
    /// True when a path component or an `O_DIRECTORY` open was not a directory (`ENOTDIR`).
    public var isNotADirectory: Bool { errno == ENOTDIR }

    /// An "already exists" error, for callers that give up after trying
    /// every free name.
    public static func alreadyExists(call: String, subject: String) -> SystemCallError {
        SystemCallError(call: call, errno: EEXIST, subject: subject)
    }
}
