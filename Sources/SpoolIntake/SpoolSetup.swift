import DaemonSupport
import ExpenseCore
import OutboxStore
import Posix

/// What the spool service does once, before `READY=1`: open and check the
/// directory, and finish intakes a crash interrupted.
enum SpoolSetup {
    /// Why the spool cannot be watched, as the startup failure to exit
    /// with (71). The per-user inotify limits are named with the sysctl
    /// that raises them: `inotify_init1` fails with `EMFILE` at
    /// `fs.inotify.max_user_instances`, and `inotify_add_watch` with
    /// `ENOSPC` at `fs.inotify.max_user_watches` (`inotify(7)`, "/proc
    /// interfaces"); each is shared by every program of the daemon's user.
    static func watchFailure(_ error: SystemCallError, path: String) -> StartupFailure {
        let limit: (sysctl: String, what: String, example: Int)?
        switch error.call {
        case "inotify_init1" where error.isTooManyOpenFiles:
            limit = ("fs.inotify.max_user_instances", "inotify instances", 1024)
        case "inotify_add_watch" where error.isNoSpace:
            limit = ("fs.inotify.max_user_watches", "inotify watches", 524_288)
        default:
            limit = nil
        }
        guard let limit else {
            return StartupFailure(code: .osError, message: "Failed to watch spool directory '\(path)': \(error.reason)")
        }
        return StartupFailure(code: .osError, message: "Failed to watch spool directory '\(path)': \(error.description): "
            + "the user expensed runs as has all the \(limit.what) the sysctl \(limit.sysctl) allows; "
            + "raise it, for example with 'sysctl -w \(limit.sysctl)=\(limit.example)', and keep it in a file in /etc/sysctl.d/")
    }

    /// Opens the spool directory (creating it, mode 1730, when missing)
    /// and `rejected/` in it, refusing what would be unsafe.
    /// - Throws: ``StartupFailure`` saying why and what to do.
    static func openDirectory(_ path: String, logger: Logger) throws(StartupFailure) -> SpoolDirectory {
        if !FileSystem.exists(path) {
            do {
                if let slash = path.lastIndex(of: "/"), slash != path.startIndex {
                    try FileSystem.makeDirectories(String(path[..<slash]), mode: 0o755)
                }
                // makeDirectory syncs the entry in the parent; the mode
                // (the umask may have cut it) is the new directory's own.
                try FileSystem.makeDirectory(path, mode: 0o1730)
                try FileSystem.setMode(path, 0o1730)
                try FileSystem.syncDirectory(path)
                logger.notice("Created spool directory '\(path)' with mode 1730")
            } catch {
                throw StartupFailure(code: .cannotCreate, message: "Failed to create spool directory '\(path)': \(error.reason)")
            }
        }
        let descriptor: FileDescriptor
        let status: FileStatus
        do {
            descriptor = try FileDescriptor.open(path, [.readOnly, .directory])
            status = try descriptor.status()
        } catch where error.isNotADirectory {
            throw StartupFailure(code: .config, message: "Spool directory '\(path)' is not a directory")
        } catch {
            throw StartupFailure(code: .cannotCreate, message: "Failed to open spool directory '\(path)': \(error.reason)")
        }
        let mode = String(status.mode, radix: 8)
        if status.mode & 0o002 != 0 && status.mode & 0o1000 == 0 {
            throw StartupFailure(code: .config, message: "Refusing spool directory '\(path)': it is world-writable without the sticky bit (mode \(mode)), so any user could replace or remove another's files; make it mode 1730 with a group for writers (docs/spool.md)")
        }
        let euid = Users.effectiveUserID
        if status.mode & 0o1000 != 0 && euid != 0 && status.owner != euid {
            throw StartupFailure(code: .config, message: "Refusing spool directory '\(path)': it has the sticky bit but is owned by uid \(status.owner), not uid \(euid) that expensed runs as, so expensed could not remove the files it takes; make uid \(euid) its owner (docs/spool.md)")
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
            throw StartupFailure(code: .config, message: "Refusing spool directory '\(path)': '\(rejectedPath)' is not a directory (a link or a file); move it away so that expensed can create it")
        } catch {
            throw StartupFailure(code: .cannotCreate, message: "Failed to create '\(rejectedPath)': \(error.reason)")
        }
        if rejectedStatus.owner != euid {
            throw StartupFailure(code: .config, message: "Refusing spool directory '\(path)': '\(rejectedPath)' is owned by uid \(rejectedStatus.owner), not uid \(euid) that expensed runs as; move it away so that expensed can create it")
        }
        if rejectedStatus.mode & 0o022 != 0 {
            throw StartupFailure(code: .config, message: "Refusing spool directory '\(path)': '\(rejectedPath)' is writable by others (mode \(String(rejectedStatus.mode, radix: 8))); make it mode 700")
        }
        return SpoolDirectory(path: path, descriptor: descriptor, rejected: rejected)
    }

    /// Finishes the intakes a crash interrupted after their commit, by what
    /// their rows prove (docs/spool.md, crash safety), then forgets the rows:
    ///
    /// - a file under the row's private name is there because the intake
    ///   renamed it there, holding the file it took open: it is that file
    ///   if it has its inode (removed, or rejected when its bytes changed),
    ///   else a file that had replaced it (put back, to be taken);
    /// - otherwise a file under the row's name is the one taken, never
    ///   renamed, only when its inode, size and change time are the
    ///   recorded ones and its bytes have the recorded digest; it is removed;
    /// - anything else is a new file (one that got a freed inode back,
    ///   with a copied size and mtime, is one), and the scan takes it.
    ///
    /// A row an older version wrote has no digest nor change time: it
    /// proves nothing, so its file is taken again, never removed.
    static func finishInterruptedIntakes(directory: SpoolDirectory, store: Store, intake: SpoolIntake, logger: Logger) throws(StartupFailure) {
        let rows: [(record: SpoolIntakeRecord, clientID: String)]
        do {
            rows = try store.spoolIntakeRecords()
        } catch {
            throw StartupFailure(code: .osError, message: "Failed to read spool intake records: \(error)")
        }
        guard !rows.isEmpty else { return }
        var finished: [SpoolIntakeRecord] = []
        for (record, clientID) in rows {
            let transactionID = TransactionID.derive(from: clientID)
            do {
                if record.isProof {
                    try finish(record, in: directory, transactionID: transactionID, intake: intake, logger: logger)
                } else {
                    try takeAgain(record, in: directory, transactionID: transactionID, logger: logger)
                }
                finished.append(record)
            } catch {
                logger.warning("Failed to finish removing spool file '\(record.name.displayName)': \(error.reason); its record is kept, ignoring",
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

    private static func finish(_ record: SpoolIntakeRecord, in directory: SpoolDirectory, transactionID: String,
                               intake: SpoolIntake, logger: Logger) throws(SystemCallError) {
        if try directory.status(of: record.takenName) != nil {
            report(try directory.finishRemoval(record, checkingDigest: true), record, transactionID: transactionID, intake: intake, logger: logger)
            return
        }
        guard case .file(let file) = try directory.open(record.name, maxBytes: Int(clamping: record.size)),
              record.isUntouched(file.status), try SpoolDirectory.digest(of: file.descriptor) == record.digest else {
            return
        }
        // Held open to the removal, so that the inode compared stays this file's.
        try withExtendedLifetime(file) { () throws(SystemCallError) in
            report(try directory.remove(record), record, transactionID: transactionID, intake: intake, logger: logger)
        }
    }

    /// A row of schema 1: its file, under its name or the private name that
    /// version gave it, stays to be taken as a new file.
    private static func takeAgain(_ record: SpoolIntakeRecord, in directory: SpoolDirectory, transactionID: String,
                                  logger: Logger) throws(SystemCallError) {
        let legacy = SpoolDirectory.legacyTakenName(inode: record.inode)
        var left = record.name
        if try directory.status(of: legacy) != nil {
            left = try directory.putBack(legacy, as: record.name)
        } else if try directory.status(of: record.name) == nil {
            return
        }
        logger.notice("Spool file '\(left.displayName)' was being taken when an older expensed stopped, which recorded too little to tell it from a new file; it is taken again (it may be queued twice)",
                      transactionID: transactionID)
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
