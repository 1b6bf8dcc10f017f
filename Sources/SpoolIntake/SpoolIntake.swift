import Digest
import DaemonSupport
import ExpenseCore
import OutboxStore
import Posix
import Synchronization

/// Turns what the watcher hands out into jobs, or into rejections.
///
/// One intake, in order (each step a fault point for the crash tests):
/// open and check the files (`spool-after-open`), copy the receipt
/// durably into the state directory, checking that it is whole and
/// hashing it (`spool-after-stage`; for a receipt that waits for its
/// sidecar, this copy is made while it waits, see ``SpoolEarlyCopies``,
/// and used if the file is unchanged), commit the jobs and the files'
/// `spool_intake` rows in one transaction (`spool-after-commit`), rename
/// each file to the private name its row names and remove it if it is
/// still the file taken (`spool-after-rename` between the two,
/// `spool-after-unlink` after every file), `fsync` the spool directory
/// (`spool-after-sync`), forget the rows. A crash before the commit
/// leaves the spool file, taken again on restart, and at most an
/// unreferenced receipt copy, which start-up removes; a crash after it
/// leaves rows by which start-up proves which files are the ones taken
/// and finishes removing them (``SpoolSetup``). Either way, one job per file.
///
/// While an intake runs it holds its files open and *claims* them (their
/// device and inode, which no other file can have while they are held):
/// a file its writer renamed meanwhile, which arrives again under its new
/// name, is not taken a second time by another intake.
final class SpoolIntake: Sendable {
    let directory: SpoolDirectory
    let store: Store
    /// Called when the queue or the spool may have changed: republish the summary.
    let onChange: @Sendable () -> Void
    let logger: Logger
    let maxBytes: Int
    /// How long a truncated receipt may stay unchanged before it is rejected.
    let truncatedPatienceMilliseconds: Int64
    /// How long after a receipt was taken alone a sidecar of its name
    /// edits its expense (docs/spool.md, "A late sidecar"); 0: never.
    let sidecarWindowMilliseconds: Int64
    /// Called after a job was queued: wakes the drainer.
    let onQueued: @Sendable () -> Void
    /// Whose account a file's owner has (``SpoolEvents/accountOfOwner``).
    let accountOfOwner: @Sendable (UInt32) -> (account: String?, reason: String)
    let blocking = BlockingExecutor(label: "spool", width: 8)
    let directorySync: SpoolSync
    let earlyCopies: SpoolEarlyCopies
    /// The files intakes hold now.
    private let claimed = Mutex<Set<FileIdentity>>([])
    /// Files queued whose removal failed: held open and claimed until the
    /// daemon stops, so that they are not taken again (start-up removes
    /// them, proven by their rows).
    private let stuck = Mutex<[SpoolFile]>([])
    /// Files left in the spool until the outbox has room for them.
    let roomWait = Mutex(SpoolRoomWait())
    /// Told how many files wait for room, whenever that changes.
    let onWaitingCount: @Sendable (Int) -> Void

    /// How long a file whose intake failed (a full disk, an I/O error)
    /// waits before it is tried again.
    static let retryMilliseconds: Int64 = 30_000

    /// A truncated receipt waits for its writer this many settle times
    /// (docs/spool.md, "What is rejected").
    static let truncatedPatienceSettles: Int64 = 20

    enum Outcome: Sendable, Equatable {
        case done
        /// Try these files again after this many milliseconds; they are
        /// still in the spool.
        case retry(afterMilliseconds: Int64)
        /// The outbox has no room for them: they stay in the spool, and are
        /// tried again when room frees (``SpoolService/roomFreed()``), or
        /// after ``SpoolIntake/retryMilliseconds`` (room a file removed
        /// elsewhere freed tells nobody).
        case waitForRoom(OutboxRefusal)

        static let retryLater = Outcome.retry(afterMilliseconds: SpoolIntake.retryMilliseconds)

        var retryAfter: Int64? {
            switch self {
            case .done: nil
            case .retry(let milliseconds): milliseconds
            case .waitForRoom: SpoolIntake.retryMilliseconds
            }
        }
    }

    init(directory: SpoolDirectory, store: Store, logger: Logger, maxBytes: Int, settleMilliseconds: Int64, sidecarWindowMilliseconds: Int64 = 0,
         onQueued: @escaping @Sendable () -> Void, onChange: @escaping @Sendable () -> Void,
         accountOfOwner: @escaping @Sendable (UInt32) -> (account: String?, reason: String) = { _ in (AccountName.defaultName, "") },
         onWaitingCount: @escaping @Sendable (Int) -> Void = { _ in }) {
        self.accountOfOwner = accountOfOwner
        self.onWaitingCount = onWaitingCount
        self.directory = directory
        self.store = store
        self.onChange = onChange
        self.logger = logger
        self.maxBytes = maxBytes
        truncatedPatienceMilliseconds = settleMilliseconds * Self.truncatedPatienceSettles
        self.sidecarWindowMilliseconds = sidecarWindowMilliseconds
        self.onQueued = onQueued
        directorySync = SpoolSync(label: "spool-sync") { [directory] () throws(SystemCallError) in try directory.sync() }
        earlyCopies = SpoolEarlyCopies { [store] staged in try? store.receipts.remove(staged.fileName) }
    }

    /// Copies a receipt that waits for its sidecar, so that taking it later
    /// is quick (``SpoolEarlyCopies``). What cannot be copied is left for
    /// the take to find out again, and to reject or report.
    /// A receipt the outbox has no room for is not copied: its take
    /// finds out again, and leaves it waiting.
    func copyEarly(_ name: FileName, ticket: UInt64) async {
        var copy: SpoolEarlyCopies.Copy?
        let opened = try? await blocking.run { [directory, maxBytes] () -> SpoolFile? in
            guard case .file(let file) = try directory.open(name, maxBytes: maxBytes) else { return nil }
            return file
        }
        if let file = opened ?? nil, (try? await store.admit(.add(receiptBytes: file.status.size, copied: false))) != nil {
            FaultPoints.hit("spool-after-open")
            copy = try? await blocking.run { [store, maxBytes] () -> SpoolEarlyCopies.Copy in
                let staged = try store.receipts.stage(from: file.descriptor, jobUUID: ClientID.make(milliseconds: Clock.wallMilliseconds), maxBytes: maxBytes, digesting: true)
                return SpoolEarlyCopies.Copy(file: file, staged: staged)
            }
        }
        if copy != nil { FaultPoints.hit("spool-after-stage") }
        earlyCopies.finish(name, ticket: ticket, copy: copy)
    }

    func take(_ take: SpoolSchedule.Take) async -> Outcome {
        switch take {
        case .other(let name):
            let reason = name.lowercasedExtension.map { "has an unknown extension '.\($0)'; taken are .jpg, .jpeg, .png, .pdf and .json" }
                ?? "has no extension; taken are .jpg, .jpeg, .png, .pdf and .json"
            // Said only when it is a regular file: a FIFO is a FIFO first.
            let kindReason = await inspect(name)
            switch kindReason {
            case .gone: return .done
            case .failed: return .retryLater
            case .rejected(let rejection): return await reject([(name, rejection.reason)])
            case .acceptable: return await reject([(name, reason)])
            }
        case .expense(let receipt, let sidecar):
            return await ingest(receipt: receipt, sidecar: sidecar)
        }
    }

    private enum Inspection { case gone, failed, rejected(SpoolRejection), acceptable }

    private func inspect(_ name: FileName) async -> Inspection {
        do {
            return try await blocking.run { [directory, maxBytes] in
                guard let status = try directory.status(of: name) else { return Inspection.gone }
                guard status.kind == .regular else {
                    return SpoolDirectory.check(status, maxBytes: maxBytes).map(Inspection.rejected) ?? .acceptable
                }
                return .acceptable
            }
        } catch {
            logger.error("Failed to look at spool file '\(name.displayName)': \(reason(error)), skipping for now")
            return .failed
        }
    }

    // MARK: Ingest

    /// A receipt or sidecar opened and checked.
    private enum Opened: Sendable {
        case gone
        case rejected(SpoolRejection)
        case receipt(SpoolFile)
        /// With the digest of the bytes parsed.
        case sidecar(SpoolFile, ExpenseFields, [UInt8])

        var file: SpoolFile? {
            switch self {
            case .receipt(let file), .sidecar(let file, _, _): file
            default: nil
            }
        }
    }

    private func ingest(receipt receiptName: FileName?, sidecar sidecarName: FileName?) async -> Outcome {
        var early: SpoolEarlyCopies.Copy?
        if let receiptName { early = await earlyCopies.claim(receiptName) }
        // Removed unless it goes into the commit (which then owns it).
        defer { if let early { earlyCopies.discard(early.staged) } }

        let receipt: Opened, sidecar: Opened
        do {
            (receipt, sidecar) = try await blocking.run { [directory, maxBytes] in
                (try receiptName.map { name throws(SystemCallError) in try Self.openReceipt(name, in: directory, maxBytes: maxBytes) } ?? .gone,
                 try sidecarName.map { name throws(SystemCallError) in try Self.openSidecar(name, in: directory) } ?? .gone)
            }
        } catch {
            logger.error("Failed to open spool file '\((receiptName ?? sidecarName)?.displayName ?? "")': \(reason(error)), skipping for now")
            return .retryLater
        }

        // A pair is one drop: when either half is rejected, so is the other.
        var rejections: [(FileName, String)] = []
        if case .rejected(let why) = receipt, let receiptName {
            rejections.append((receiptName, why.reason))
            if let sidecarName, sidecar.file != nil { rejections.append((sidecarName, "its receipt '\(receiptName.displayName)' was rejected")) }
        }
        if case .rejected(let why) = sidecar, let sidecarName {
            rejections.append((sidecarName, why.reason))
            if let receiptName, receipt.file != nil { rejections.append((receiptName, "its sidecar '\(sidecarName.displayName)' was rejected")) }
        }
        if !rejections.isEmpty { return await reject(rejections) }

        var fields = ExpenseFields()
        var sidecarDigest: [UInt8] = []
        if case .sidecar(_, let sidecarFields, let digest) = sidecar {
            fields = sidecarFields
            sidecarDigest = digest
        }
        let receiptFile = receipt.file
        let files = [receiptFile, sidecar.file].compactMap { $0 }
        guard !files.isEmpty else { return .done }
        // A sidecar alone may be a late one, which needs none of the fields
        // a create does: whether it is, is known once it is claimed.
        let lateCandidate = receiptFile == nil && sidecarWindowMilliseconds > 0
        var createError: FieldError?
        do {
            try Validation.checkCreate(fields, hasReceipt: receiptFile != nil)
        } catch {
            // Only a sidecar alone gets here: with a receipt, fields may be missing.
            guard lateCandidate else { return await reject(files.map { ($0.name, "sidecar field \(error.description)") }) }
            createError = error
        }
        // The spool is sticky: a file's owner is its writer, and its expense
        // is the owner's. A pair is one person's drop.
        let owners = Set(files.map(\.status.owner))
        guard owners.count == 1, let owner = owners.first else {
            return await reject(files.map { ($0.name, "its receipt and sidecar belong to different users (uids \(owners.sorted().map(String.init).joined(separator: ", "))); drop both as one user") })
        }
        let (ownerAccount, noAccount) = accountOfOwner(owner)
        guard let account = ownerAccount else {
            return await reject(files.map { ($0.name, "is owned by \(noAccount)") })
        }
        switch claim(files) {
        case .claimed: break
        case .gone: return .done
        case .heldElsewhere: return .retryLater
        }
        var kept: [SpoolFile] = []
        defer { release(files, keeping: kept) }
        FaultPoints.hit("spool-after-open")

        if lateCandidate, let sidecarFile = sidecar.file {
            switch await takeLate(sidecarFile, fields: fields, digest: sidecarDigest, account: account) {
            case .notLate: break
            case .done(let keep): kept = keep; return .done
            case .retryLater: return .retryLater
            }
        }
        if let createError { return await reject(files.map { ($0.name, "sidecar field \(createError.description)") }) }

        // Left in the spool before a byte is copied when it cannot fit; the
        // commit checks again (and alone, when there is nothing to copy).
        if let receiptFile, early?.isCopy(of: receiptFile.status) != true {
            do {
                try await store.admit(.add(receiptBytes: receiptFile.status.size, copied: false))
            } catch let refusal as OutboxRefusal {
                return .waitForRoom(refusal)
            } catch {
                logger.error("Failed to read the outbox's use: \(error), skipping for now")
                return .retryLater
            }
        }

        var staged: StagedReceipt?
        if let receiptFile, let copy = early, copy.isCopy(of: receiptFile.status) {
            staged = copy.staged
            early = nil
        } else if let receiptFile {
            do {
                staged = try await blocking.run { [store, maxBytes] in
                    try store.receipts.stage(from: receiptFile.descriptor, jobUUID: ClientID.make(milliseconds: Clock.wallMilliseconds), maxBytes: maxBytes, digesting: true)
                }
            } catch let error as ReceiptError {
                if let refusal = store.refusal(forFailure: error) { return .waitForRoom(refusal) }
                return await refused(error, receipt: receiptFile, files: files)
            } catch {
                logger.error("Failed to copy spool file '\(receiptFile.name.displayName)': \(reason(error)), skipping for now")
                return .retryLater
            }
            FaultPoints.hit("spool-after-stage")
        }

        let clientID = ClientID.make(milliseconds: Clock.wallMilliseconds)
        let records = files.enumerated().map { index, file in
            SpoolIntakeRecord(file, clientID: clientID, index: index,
                              digest: file.name == receiptFile?.name ? staged?.digest ?? [] : sidecarDigest)
        }
        // The receipt's name for a pair, and its drop time: a rename into the spool sets the change time.
        let source = SourceRecord.spool(name: files[0].name, sidecar: receiptFile == nil ? nil : sidecar.file?.name,
                                        droppedMilliseconds: files[0].status.changedNanoseconds / 1_000_000)
        let queued: EnqueueResult
        do {
            queued = try await store.enqueueSpoolCreate(fields: fields, clientID: clientID, receipt: staged, files: records,
                                                        source: source, now: Clock.wallMilliseconds, account: account)
        } catch let refusal as OutboxRefusal {
            return .waitForRoom(refusal)
        } catch {
            logger.error("Failed to queue spool file '\(files[0].name.displayName)': \(error), skipping for now")
            return .retryLater
        }
        FaultPoints.hit("spool-after-commit")
        let what = files.map { "'\($0.name.displayName)'" }.joined(separator: " and ")
        logger.info("Queued expense from spool file \(what)", transactionID: queued.transactionID, jobUUID: queued.clientID, account: account,
                    source: source.shown.compact, messageID: .expenseQueued)
        if let held = queued.held {
            logger.warning("Expense from spool file \(what) is held: \(held)", transactionID: queued.transactionID, account: account)
        }
        onChange()
        onQueued()
        kept = await remove(records, transactionID: queued.transactionID).map { index in files[index] }
        return .done
    }

    /// What a receipt the copy refused becomes: a truncated one that may
    /// still be being written waits (docs/spool.md); anything else is
    /// rejected, with its partner; an I/O error is tried again later.
    private func refused(_ error: ReceiptError, receipt: SpoolFile, files: [SpoolFile]) async -> Outcome {
        var why = error.reason
        switch error {
        case .io:
            logger.error("Failed to copy spool file '\(receipt.name.displayName)': \(reason(error)), skipping for now")
            return .retryLater
        case .truncated:
            // The change time: set by every write, and by no writer at will.
            let age = Clock.wallMilliseconds - receipt.status.changedNanoseconds / 1_000_000
            let patience = truncatedPatienceMilliseconds
            if age < patience {
                logger.info("Spool file '\(receipt.name.displayName)' \(why); waiting for its writer to finish it (rejected once left alone for \(patience) ms)")
                return .retry(afterMilliseconds: patience - max(0, age))
            }
            why += ", and stayed so for \(patience % 1000 == 0 ? "\(patience / 1000) s" : "\(patience) ms")"
        case .invalid, .tooLarge:
            break
        }
        return await reject(files.map { ($0.name, $0.name == receipt.name ? why : "its receipt '\(receipt.name.displayName)' was rejected") })
    }

    // MARK: Claims

    private enum Claim { case claimed, gone, heldElsewhere }

    /// Claims `files` for this intake, all or none. A file another intake
    /// holds is the very file that one is taking (under an earlier name);
    /// a file removed since it was opened (by another intake that took it,
    /// or its writer) is gone.
    private func claim(_ files: [SpoolFile]) -> Claim {
        let identities = files.map { FileIdentity($0.status) }
        let claimedNow = claimed.withLock { claimed -> Bool in
            guard identities.allSatisfy({ !claimed.contains($0) }) else { return false }
            claimed.formUnion(identities)
            return true
        }
        guard claimedNow else { return .heldElsewhere }
        // Claimed after an intake that took it released it: removed by then.
        if files.contains(where: { ((try? $0.descriptor.status().linkCount) ?? 0) == 0 }) {
            release(files, keeping: [])
            return .gone
        }
        return .claimed
    }

    /// Releases `files`, except those `keeping`, which stay claimed and
    /// open until the daemon stops.
    private func release(_ files: [SpoolFile], keeping: [SpoolFile]) {
        let kept = Set(keeping.map { FileIdentity($0.status) })
        claimed.withLock { claimed in
            for file in files where !kept.contains(FileIdentity(file.status)) { claimed.remove(FileIdentity(file.status)) }
        }
        if !keeping.isEmpty { stuck.withLock { $0 += keeping } }
    }

    // MARK: Removal

    /// Removes taken files durably, then forgets their intake rows.
    /// - Returns: the indexes of files that could not be removed: their
    ///   rows are kept, and they stay claimed, so they are never taken again.
    func remove(_ records: [SpoolIntakeRecord], transactionID: String) async -> [Int] {
        var done: [SpoolIntakeRecord] = []
        var kept: [Int] = []
        for (index, record) in records.enumerated() {
            do {
                var removal = try await blocking.run { [directory] in try directory.remove(record) }
                if removal == .gone {
                    // Renamed by its writer since it was opened. This intake
                    // holds it open, so its inode is still its own: look for it.
                    removal = try await blocking.run { [directory] in
                        guard let name = try directory.find(device: record.device, inode: record.inode) else { return .gone }
                        return try directory.remove(record.renamed(name))
                    }
                }
                switch removal {
                case .removed, .gone:
                    done.append(record)
                case .replaced(let newName):
                    logger.notice("Spool file '\(record.name.displayName)' was replaced by a new file while being taken; the new one stays as '\(newName.displayName)'",
                                  transactionID: transactionID)
                    done.append(record)
                case .changed(let taken):
                    let reason = "was written to after it was taken; it was queued as it was then, as \(transactionID)"
                    let moved = (try? await blocking.run { [self] in
                        rejectNow(taken, original: record.name, reason: reason, transactionID: transactionID)
                    }) ?? false
                    if moved { done.append(record) } else { kept.append(index) }
                }
            } catch {
                logger.warning("Failed to remove spool file '\(record.name.displayName)' after queueing it: \(reason(error)); it will not be taken again, ignoring",
                               transactionID: transactionID)
                kept.append(index)
            }
        }
        FaultPoints.hit("spool-after-unlink")
        do {
            try await directorySync.sync()
        } catch {
            logger.warning("Failed to sync spool directory '\(directory.path)': \(reason(error)); keeping its intake records, ignoring", transactionID: transactionID)
            return kept
        }
        FaultPoints.hit("spool-after-sync")
        do {
            try await store.forgetSpoolIntake(done)
        } catch {
            logger.warning("Failed to forget intake records: \(error), ignoring", transactionID: transactionID)
        }
        return kept
    }

    private static func openReceipt(_ name: FileName, in directory: SpoolDirectory, maxBytes: Int) throws(SystemCallError) -> Opened {
        switch try directory.open(name, maxBytes: maxBytes) {
        case .gone: return .gone
        case .rejected(let why): return .rejected(why)
        // Whether its bytes are a whole receipt, and of which kind, the copy finds out.
        case .file(let file): return file.status.size == 0 ? .rejected(SpoolRejection("is empty")) : .receipt(file)
        }
    }

    private static func openSidecar(_ name: FileName, in directory: SpoolDirectory) throws(SystemCallError) -> Opened {
        switch try directory.open(name, maxBytes: SpoolSidecar.maxBytes) {
        case .gone: return .gone
        case .rejected(let why): return .rejected(why)
        case .file(let file):
            guard let bytes = try file.descriptor.readAll(limit: SpoolSidecar.maxBytes) else {
                return .rejected(SpoolRejection("is larger than the limit of \(SpoolSidecar.maxBytes) bytes"))
            }
            do {
                return .sidecar(file, try SpoolSidecar.parse(bytes), SHA256.hash(bytes))
            } catch {
                return .rejected(error)
            }
        }
    }

    /// An error as a log line's reason: the `strerror` text for a failed
    /// system call (the line names the file already), else its description.
    func reason(_ error: any Error) -> String {
        switch error {
        case let error as SystemCallError: error.reason
        case ReceiptError.io(let error): error.reason
        default: "\(error)"
        }
    }

    // MARK: Reject

    /// Moves each file to `rejected/` with its reason, counts and logs it.
    func reject(_ items: [(FileName, String)]) async -> Outcome {
        var outcome = Outcome.done
        for (name, reason) in items {
            let done = (try? await blocking.run { [self] in rejectNow(name, reason: reason) }) ?? false
            if !done { outcome = .retryLater }
        }
        return outcome
    }

    /// Moves one file to `rejected/`, counts and logs it. Blocking.
    /// - Parameters:
    ///   - original: the name to report, when `name` is a private one.
    ///   - transactionID: the expense the file became, if it became one.
    /// - Returns: false when it could not be moved (it stays in the spool).
    func rejectNow(_ name: FileName, original: FileName? = nil, reason: String, transactionID: String? = nil) -> Bool {
        let shown = original ?? name
        do {
            let moved = try directory.reject(name, original: original, reason: reason,
                                             timestamp: Timestamp.format(milliseconds: Clock.wallMilliseconds))
            guard let moved else { return true }
            logger.warning("Rejected spool file '\(shown.displayName)': \(reason); moved to 'rejected/\(moved.displayName)'",
                           transactionID: transactionID, messageID: .spoolRejected)
            return true
        } catch {
            logger.error("Failed to move spool file '\(shown.displayName)' to 'rejected/': \(self.reason(error)), skipping for now",
                         transactionID: transactionID)
            return false
        }
    }
}
