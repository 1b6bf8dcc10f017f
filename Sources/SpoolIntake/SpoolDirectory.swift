import Digest
import DaemonSupport
import ExpenseCore
import OutboxStore
import Posix

/// A spool file opened for intake: its descriptor and what `fstat` said
/// about it when it was opened.
struct SpoolFile: Sendable {
    let name: FileName
    let descriptor: FileDescriptor
    let status: FileStatus
}

/// A file while it exists: its device and inode. Nothing else can have
/// them while the daemon holds the file open; once it is closed and
/// removed, a new file can get them at once (ext4 hands a freed inode out
/// again), so they identify a file only while it is held.
struct FileIdentity: Hashable, Sendable {
    let device: UInt64
    let inode: UInt64

    init(_ status: FileStatus) {
        device = status.device
        inode = status.inode
    }
}

/// What looking at a spool name found.
enum SpoolInspection: Sendable {
    /// Nothing is there any more (taken already, or removed by its writer).
    case gone
    case rejected(SpoolRejection)
    case file(SpoolFile)
}

/// The spool directory, opened once: every name is looked up in it with
/// `*at` calls, never through a path, so a link can never lead the daemon
/// elsewhere. Blocking: called from the watcher thread and the spool's
/// blocking executor, never on the cooperative pool.
final class SpoolDirectory: Sendable {
    let path: String
    let descriptor: FileDescriptor
    /// `rejected/`, where files that cannot be taken are moved.
    let rejected: FileDescriptor

    static let rejectedName = FileName("rejected")!

    init(path: String, descriptor: FileDescriptor, rejected: FileDescriptor) {
        self.path = path
        self.descriptor = descriptor
        self.rejected = rejected
    }

    /// True for names the spool never takes: the `rejected/` folder and
    /// names starting with a dot, which writers use while writing in place
    /// (and the daemon while removing a file it took).
    static func isIgnored(_ name: FileName) -> Bool {
        name.bytes.first == UInt8(ascii: ".") || name == rejectedName
    }

    /// The file system the spool is on (`fstatfs(2)`), or why it could not be told.
    func fileSystem() -> Result<SpoolFileSystem, SystemCallErrorText> {
        do {
            return .success(SpoolFileSystem.classify(try descriptor.fileSystemType()))
        } catch {
            return .failure(SystemCallErrorText(text: error.description))
        }
    }

    /// The status of `name`, or nil when nothing is there.
    func status(of name: FileName) throws(SystemCallError) -> FileStatus? {
        do {
            return try descriptor.statusAt(name)
        } catch where error.isNotFound {
            return nil
        }
    }

    /// Opens `name` for reading if it may be taken: a regular file (looked
    /// at first without following links or opening it, so a FIFO or a
    /// device is never opened), with one link, no larger than `maxBytes`.
    /// Opened with `O_NOFOLLOW | O_NONBLOCK | O_NOCTTY`, then checked again
    /// on the descriptor, in case the name was replaced in between.
    func open(_ name: FileName, maxBytes: Int) throws(SystemCallError) -> SpoolInspection {
        guard let before = try status(of: name) else { return .gone }
        if let rejection = Self.check(before, maxBytes: maxBytes) { return .rejected(rejection) }
        let file: FileDescriptor
        do {
            file = try descriptor.openAt(name, [.readOnly, .noFollow, .nonBlocking, .noCTTY])
        } catch where error.isNotFound {
            return .gone
        } catch where error.isSymbolicLink {
            return .rejected(SpoolRejection("is a symbolic link"))
        } catch where error.isPermissionDenied {
            // Waiting would not help: its writer must make it readable.
            return .rejected(SpoolRejection("cannot be read by expensed (uid \(Users.effectiveUserID), mode \(String(before.mode, radix: 8)), owner uid \(before.owner)): \(error.reason)"))
        }
        let status = try file.status()
        if let rejection = Self.check(status, maxBytes: maxBytes) { return .rejected(rejection) }
        return .file(SpoolFile(name: name, descriptor: file, status: status))
    }

    /// Why a file with `status` cannot be taken, if it cannot.
    static func check(_ status: FileStatus, maxBytes: Int) -> SpoolRejection? {
        switch status.kind {
        case .regular: break
        case .symbolicLink: return SpoolRejection("is a symbolic link")
        case .directory: return SpoolRejection("is a directory")
        case .fifo: return SpoolRejection("is a FIFO (named pipe)")
        case .socket: return SpoolRejection("is a socket")
        case .characterDevice: return SpoolRejection("is a character device")
        case .blockDevice: return SpoolRejection("is a block device")
        case .unknown: return SpoolRejection("is not a regular file")
        }
        if status.linkCount != 1 {
            return SpoolRejection("has \(status.linkCount) hard links; only files with exactly one are taken")
        }
        if status.size > Int64(maxBytes) {
            return SpoolRejection("is larger than the limit of \(maxBytes) bytes (\(status.size) bytes)")
        }
        return nil
    }

    /// The names in the spool that may be taken, sorted.
    func names() throws(SystemCallError) -> [FileName] {
        try descriptor.entries().filter { !Self.isIgnored($0) }.sorted()
    }

    /// The private name the `index`th file an intake takes has while it
    /// is being removed. A dot name (never taken), made of the job's client
    /// id, chosen before the commit: no other intake makes it, and no
    /// writer can guess it (a random UUID, in a spool writers cannot list).
    static func takenName(clientID: String, index: Int) -> FileName {
        FileName(".expensed-taken-\(clientID)-\(index)")!
    }

    /// The private name an older version gave a taken file: its inode.
    static func legacyTakenName(inode: UInt64) -> FileName {
        FileName(".expensed-taken-\(inode)")!
    }

    /// What removing a taken file found.
    enum Removal: Sendable, Equatable {
        /// The file was removed.
        case removed
        /// It was not under its name any more (removed, or renamed by its writer).
        case gone
        /// Another file had replaced it under its name; that one was put
        /// back, under this name.
        case replaced(FileName)
        /// It was written to after it was taken; it now has this private
        /// name, to be rejected.
        case changed(FileName)
    }

    /// Removes a file that has become a job. It is first renamed to its
    /// private name (`record.takenName`), and removed only if that is still
    /// the very file taken: a file a writer dropped under the same name
    /// meanwhile is never removed. The caller must hold the taken file
    /// open, so that its inode, compared here, cannot have been handed to
    /// another file. Not durable until ``sync()``.
    func remove(_ record: SpoolIntakeRecord) throws(SystemCallError) -> Removal {
        do {
            try move(record.name, to: record.takenName, in: descriptor)
        } catch where error.isNotFound {
            return .gone
        }
        FaultPoints.hit("spool-after-rename")
        return try finishRemoval(record)
    }

    /// Removes the file at `record.takenName` if it is `record`'s, else
    /// puts it back under the record's name. Only `record`'s intake renames
    /// a file to that name, while it holds the file it took open: so the
    /// file there has that file's inode if, and only if, it is that file,
    /// even after a crash.
    /// - Parameter checkingDigest: also read the file and compare its
    ///   digest to the record's (at start-up, where it is cheap: a written-
    ///   to file is told by its bytes, not only by its size and mtime).
    func finishRemoval(_ record: SpoolIntakeRecord, checkingDigest: Bool = false) throws(SystemCallError) -> Removal {
        let taken = record.takenName
        guard let status = try status(of: taken) else { return .gone }
        guard status.device == record.device && status.inode == record.inode else {
            return .replaced(try putBack(taken, as: record.name))
        }
        guard status.size == record.size && status.modifiedNanoseconds == record.modified else {
            return .changed(taken)
        }
        if checkingDigest, let digest = record.digest {
            let file = try descriptor.openAt(taken, [.readOnly, .noFollow, .nonBlocking, .noCTTY])
            guard try Self.digest(of: file) == digest else { return .changed(taken) }
        }
        try descriptor.removeAt(taken)
        return .removed
    }

    /// Where the file with this device and inode is in the spool now, if it
    /// is (under a name that may be taken). Lists the spool: for the rare
    /// file renamed by its writer while it was being taken. Sound only
    /// while the caller holds that file open.
    func find(device: UInt64, inode: UInt64) throws(SystemCallError) -> FileName? {
        for name in try names() {
            if let status = try status(of: name), status.device == device && status.inode == inode { return name }
        }
        return nil
    }

    /// SHA-256 of everything in `file`, read from offset 0.
    static func digest(of file: FileDescriptor) throws(SystemCallError) -> [UInt8] {
        try ReceiptDirectory.digest(of: file).sha256
    }

    /// Renames `taken` to `name`, or to `name.1`, `name.2`, … when a new
    /// file has that name already. Never replaces anything.
    func putBack(_ taken: FileName, as name: FileName) throws(SystemCallError) -> FileName {
        for n in 0..<1000 {
            let candidate = n == 0 ? name : Self.shortened(name, room: 4).appending(".\(n)")
            do {
                try move(taken, to: candidate, in: descriptor)
                return candidate
            } catch where error.alreadyExists {
                continue
            }
        }
        throw SystemCallError.alreadyExists(call: "renameat2", subject: name.displayName)
    }

    /// Renames `name` in the spool to `newName` in `directory` without
    /// replacing anything (`renameat2` with `RENAME_NOREPLACE`: `EEXIST`).
    /// An NFS client, and a FUSE file system without `rename2` (libfuse 2),
    /// refuse that flag with `EINVAL`; there the target is looked at first
    /// and the rename made only when nothing is there. That is not atomic,
    /// but every such rename goes to a name only this daemon makes: a
    /// private name from a new UUID, a name in `rejected/`, which only the
    /// daemon may write, or the name a file is put back under, which a
    /// writer would have to drop a file onto in that very instant, while its
    /// own file under that name is being taken (docs/spool.md).
    private func move(_ name: FileName, to newName: FileName, in directory: FileDescriptor) throws(SystemCallError) {
        do {
            try descriptor.renameAt(name, to: newName, in: directory, replacing: false)
        } catch where error.isInvalidArgument {
            guard try Self.status(of: newName, in: directory) == nil else {
                throw SystemCallError.alreadyExists(call: "renameat", subject: newName.displayName)
            }
            try descriptor.renameAt(name, to: newName, in: directory, replacing: true)
        }
    }

    private static func status(of name: FileName, in directory: FileDescriptor) throws(SystemCallError) -> FileStatus? {
        do {
            return try directory.statusAt(name)
        } catch where error.isNotFound {
            return nil
        }
    }

    /// Makes renames and removals in the spool durable (`fsync` of the directory).
    func sync() throws(SystemCallError) {
        try descriptor.sync()
    }

    /// Moves `name` to `rejected/` with a `.reason` file beside it saying
    /// why, durably. The reason file is written first, so a rejected file
    /// never lacks one. Never replaces anything: a name already used there
    /// gets a numeric suffix (`name.1`), and a name too long for the suffix
    /// and `.reason` is shortened (the reason file has it in full).
    /// - Parameters:
    ///   - original: the name to report and to derive the new name from,
    ///     when `name` is a private one.
    ///   - timestamp: when, for the reason file.
    /// - Returns: the name in `rejected/`, or nil when the file was gone.
    func reject(_ name: FileName, original: FileName? = nil, reason: String, timestamp: String) throws(SystemCallError) -> FileName? {
        let shown = original ?? name
        let base = Self.shortened(shown, room: ".reason".utf8.count + 4)
        let text = "name: \(shown.displayName)\nreason: \(reason)\nrejected_at: \(timestamp)\n"
        // A name ending in .reason gets a suffix, so that in rejected/ only
        // reason files end so, and the files are counted by their names.
        for n in (Self.isReasonName(base) ? 1 : 0)..<1000 {
            let candidate = n == 0 ? base : base.appending(".\(n)")
            let reasonName = candidate.appending(".reason")
            let reasonFile: FileDescriptor
            do {
                reasonFile = try rejected.openAt(reasonName, [.writeOnly, .create, .exclusive, .noFollow], mode: 0o600)
            } catch where error.alreadyExists {
                continue
            }
            try reasonFile.writeAll(Array(text.utf8))
            try reasonFile.sync()
            do {
                try move(name, to: candidate, in: rejected)
            } catch {
                try? rejected.removeAt(reasonName)
                if error.alreadyExists { continue }
                if error.isNotFound { return nil }
                throw error
            }
            try rejected.sync()
            try descriptor.sync()
            return candidate
        }
        throw SystemCallError.alreadyExists(call: "renameat2", subject: shown.displayName)
    }

    /// True for names ending in `.reason`: in `rejected/`, the reason files.
    static func isReasonName(_ name: FileName) -> Bool {
        name.bytes.count > reasonSuffix.count && name.bytes.suffix(reasonSuffix.count).elementsEqual(reasonSuffix)
    }

    private static let reasonSuffix = Array(".reason".utf8)

    /// How many files `rejected/` holds (reason files aside). Lists it:
    /// once at start; events keep the count after that (``SpoolWatcher``).
    func rejectedCount() throws(SystemCallError) -> Int {
        try rejected.entries().count { !Self.isReasonName($0) }
    }

    /// `name` cut (at a character boundary when it is UTF-8) so that
    /// `room` more bytes still fit in `NAME_MAX` (255).
    static func shortened(_ name: FileName, room: Int) -> FileName {
        let limit = 255 - room
        guard name.bytes.count > limit else { return name }
        var end = limit
        // Back off over UTF-8 continuation bytes (10xxxxxx).
        while end > 1 && name.bytes[end] & 0xC0 == 0x80 { end -= 1 }
        return FileName(bytes: Array(name.bytes[..<end])) ?? name
    }
}

extension SpoolIntakeRecord {
    /// The record of `file`, taken by the intake of `clientID` as its `index`th file.
    init(_ file: SpoolFile, clientID: String, index: Int, digest: [UInt8]) {
        self.init(name: file.name, takenName: SpoolDirectory.takenName(clientID: clientID, index: index),
                  device: file.status.device, inode: file.status.inode, size: file.status.size,
                  modified: file.status.modifiedNanoseconds, changed: file.status.changedNanoseconds, digest: digest)
    }
}
