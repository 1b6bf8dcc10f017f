import ExpenseCore
import Posix

/// What the spool service does once, before `READY=1`: open and check the
/// directory, and finish intakes a crash interrupted.
enum SpoolSetup {
    /// Opens the spool directory (creating it, mode 1730, when missing)
    /// and `rejected/` in it, refusing what would be unsafe.
    /// - Throws: ``Daemon/StartupFailure`` saying why and what to do.
    static func openDirectory(_ path: String, logger: Logger) throws(Daemon.StartupFailure) -> SpoolDirectory {
        if !FileSystem.exists(path) {
            do {
                if let slash = path.lastIndex(of: "/"), slash != path.startIndex {
                    try FileSystem.makeDirectories(String(path[..<slash]), mode: 0o755)
                }
                try FileSystem.makeDirectory(path, mode: 0o1730)
                try FileSystem.setMode(path, 0o1730)
                logger.notice("Created spool directory '\(path)' with mode 1730")
            } catch {
                throw Daemon.StartupFailure(code: .cannotCreate, message: "Failed to create spool directory '\(path)': \(error.reason)")
            }
        }
        let descriptor: FileDescriptor
        let status: FileStatus
        do {
            descriptor = try FileDescriptor.open(path, [.readOnly, .directory])
            status = try descriptor.status()
        } catch where error.isNotADirectory {
            throw Daemon.StartupFailure(code: .config, message: "Spool directory '\(path)' is not a directory")
        } catch {
            throw Daemon.StartupFailure(code: .cannotCreate, message: "Failed to open spool directory '\(path)': \(error.reason)")
        }
        let mode = String(status.mode, radix: 8)
        if status.mode & 0o002 != 0 && status.mode & 0o1000 == 0 {
            throw Daemon.StartupFailure(code: .config, message: "Refusing spool directory '\(path)': it is world-writable without the sticky bit (mode \(mode)), so any user could replace or remove another's files; make it mode 1730 with a group for writers (docs/spool.md)")
        }
        let euid = Users.effectiveUserID
        if status.mode & 0o1000 != 0 && euid != 0 && status.owner != euid {
            throw Daemon.StartupFailure(code: .config, message: "Refusing spool directory '\(path)': it has the sticky bit but is owned by uid \(status.owner), not uid \(euid) that expensed runs as, so expensed could not remove the files it takes; make uid \(euid) its owner (docs/spool.md)")
        }

        let rejectedPath = "\(path)/rejected"
        let rejected: FileDescriptor
        let rejectedStatus: FileStatus
        do {
            do {
                try descriptor.makeDirectoryAt(SpoolDirectory.rejectedName, mode: 0o700)
            } catch where error.alreadyExists {}
            rejected = try descriptor.openAt(SpoolDirectory.rejectedName, [.readOnly, .directory, .noFollow])
            rejectedStatus = try rejected.status()
        } catch where error.isSymbolicLink || error.isNotADirectory {
            throw Daemon.StartupFailure(code: .config, message: "Refusing spool directory '\(path)': '\(rejectedPath)' is not a directory (a link or a file); move it away so that expensed can create it")
        } catch {
            throw Daemon.StartupFailure(code: .cannotCreate, message: "Failed to create '\(rejectedPath)': \(error.reason)")
        }
        if rejectedStatus.owner != euid {
            throw Daemon.StartupFailure(code: .config, message: "Refusing spool directory '\(path)': '\(rejectedPath)' is owned by uid \(rejectedStatus.owner), not uid \(euid) that expensed runs as; move it away so that expensed can create it")
        }
        if rejectedStatus.mode & 0o022 != 0 {
            throw Daemon.StartupFailure(code: .config, message: "Refusing spool directory '\(path)': '\(rejectedPath)' is writable by others (mode \(String(rejectedStatus.mode, radix: 8))); make it mode 700")
        }
        return SpoolDirectory(path: path, descriptor: descriptor, rejected: rejected)
    }

    /// Finishes the intakes a crash interrupted after their commit: a file
    /// still in the spool (under its name, or the private name it had
    /// while being removed) that is the very file a job was made from is
    /// removed, not taken again. Then the records are forgotten.
    static func finishInterruptedIntakes(directory: SpoolDirectory, store: Store, intake: SpoolIntake, logger: Logger) throws(Daemon.StartupFailure) {
        let rows: [(record: SpoolIntakeRecord, clientID: String)]
        do {
            rows = try store.spoolIntakeRecords()
        } catch {
            throw Daemon.StartupFailure(code: .osError, message: "Failed to read spool intake records: \(error)")
        }
        guard !rows.isEmpty else { return }
        var finished: [SpoolIntakeRecord] = []
        // Who is where in the spool, listed once and only if some file is
        // not under the name it was taken by.
        var names: [FileIdentity: FileName]?
        for (record, clientID) in rows {
            let transactionID = TransactionID.derive(from: clientID)
            do {
                let taken = SpoolDirectory.takenName(inode: record.inode)
                if try directory.status(of: taken) != nil {
                    report(try directory.finishRemoval(record, at: taken), record, transactionID: transactionID, intake: intake, logger: logger)
                }
                if let status = try directory.status(of: record.name),
                   status.device == record.device && status.inode == record.inode {
                    report(try directory.remove(record), record, transactionID: transactionID, intake: intake, logger: logger)
                } else {
                    if names == nil { names = try Self.names(in: directory) }
                    if let renamed = names?[FileIdentity(device: record.device, inode: record.inode)] {
                        // Renamed within the spool after it was taken: still the same file.
                        let moved = SpoolIntakeRecord(device: record.device, inode: record.inode, size: record.size,
                                                      modified: record.modified, name: renamed)
                        report(try directory.remove(moved), moved, transactionID: transactionID, intake: intake, logger: logger)
                    }
                }
                finished.append(record)
            } catch {
                logger.warning("Failed to finish removing spool file '\(record.name.displayName)': \(error.reason); it will not be taken again, ignoring",
                               transactionID: transactionID)
            }
        }
        do {
            try directory.sync()
            try store.forgetSpoolIntakeNow(finished)
        } catch {
            logger.warning("Failed to finish spool intake records: \(error); they are kept, ignoring", transactionID: nil)
        }
    }

    /// A file while it exists: its device and inode.
    struct FileIdentity: Hashable {
        let device: UInt64
        let inode: UInt64
    }

    /// The name of every file now in the spool, by identity.
    private static func names(in directory: SpoolDirectory) throws(SystemCallError) -> [FileIdentity: FileName] {
        var names: [FileIdentity: FileName] = [:]
        for name in try directory.names() {
            if let status = try directory.status(of: name) { names[FileIdentity(device: status.device, inode: status.inode)] = name }
        }
        return names
    }

    private static func report(_ removal: SpoolDirectory.Removal, _ record: SpoolIntakeRecord, transactionID: String,
                               intake: SpoolIntake, logger: Logger) {
        switch removal {
        case .removed:
            logger.notice("Removed spool file '\(record.name.displayName)', queued before the daemon stopped", transactionID: transactionID)
        case .gone:
            break
        case .replaced(let name):
            logger.notice("Spool file '\(name.displayName)' replaced a file being taken; it stays to be taken", transactionID: transactionID)
        case .changed(let taken):
            _ = intake.rejectNow(taken, original: record.name, reason: "was written to after it was taken; it was queued as it was then, as \(transactionID)",
                                 transactionID: transactionID)
        }
    }
}
