import ExpenseCore
import Posix

/// Turns what the watcher hands out into jobs, or into rejections.
///
/// One intake, in order (each step a fault point for the crash tests):
/// open and check the files (`spool-after-open`), copy the receipt
/// durably into the state directory (`spool-after-stage`; for a receipt
/// that waits for its sidecar, this copy is made while it waits, see
/// ``SpoolEarlyCopies``, and used if the file is unchanged), commit the
/// jobs and the files' `spool_intake` rows in one transaction
/// (`spool-after-commit`), rename each file to a private name and remove
/// it if it is still the file taken (`spool-after-rename` between the two,
/// `spool-after-unlink` after every file), `fsync` the
/// spool directory (`spool-after-sync`), forget the rows. A crash before
/// the commit leaves the spool file, taken again on restart, and at most
/// an unreferenced receipt copy, which start-up removes; a crash after it
/// leaves rows by which start-up recognizes the files and finishes
/// removing them. Either way, one job per file.
final class SpoolIntake: Sendable {
    let directory: SpoolDirectory
    let store: Store
    let publisher: StatusPublisher
    let logger: Logger
    let maxBytes: Int
    /// Called after a job was queued: wakes the drainer.
    let onQueued: @Sendable () -> Void
    let blocking = BlockingExecutor(label: "spool", width: 8)
    let directorySync: SpoolSync
    let earlyCopies: SpoolEarlyCopies

    /// How long a file whose intake failed (a full disk, an I/O error)
    /// waits before it is tried again.
    static let retryMilliseconds: Int64 = 30_000

    enum Outcome: Sendable, Equatable {
        case done
        /// Try these files again later; they are still in the spool.
        case retryLater
    }

    init(directory: SpoolDirectory, store: Store, publisher: StatusPublisher, logger: Logger, maxBytes: Int,
         onQueued: @escaping @Sendable () -> Void) {
        self.directory = directory
        self.store = store
        self.publisher = publisher
        self.logger = logger
        self.maxBytes = maxBytes
        self.onQueued = onQueued
        directorySync = SpoolSync(label: "spool-sync") { [directory] () throws(SystemCallError) in try directory.sync() }
        earlyCopies = SpoolEarlyCopies { [store] staged in try? store.receipts.remove(staged.fileName) }
    }

    /// Copies a receipt that waits for its sidecar, so that taking it later
    /// is quick (``SpoolEarlyCopies``). What cannot be copied is left for
    /// the take to find out again, and to reject or report.
    func copyEarly(_ name: FileName, ticket: UInt64) async {
        let copy = try? await blocking.run { [directory, store, maxBytes] () -> SpoolEarlyCopies.Copy? in
            guard case .receipt(let file) = try Self.openReceipt(name, in: directory, maxBytes: maxBytes) else { return nil }
            FaultPoints.hit("spool-after-open")
            let staged = try store.receipts.stage(from: file.descriptor, jobUUID: ClientID.make(), maxBytes: maxBytes)
            return SpoolEarlyCopies.Copy(record: SpoolIntakeRecord(file), staged: staged)
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
        case sidecar(SpoolFile, ExpenseFields)

        var file: SpoolFile? {
            switch self {
            case .receipt(let file), .sidecar(let file, _): file
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
                (try receiptName.map { try Self.openReceipt($0, in: directory, maxBytes: maxBytes) } ?? .gone,
                 try sidecarName.map { try Self.openSidecar($0, in: directory) } ?? .gone)
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
        if case .sidecar(_, let sidecarFields) = sidecar { fields = sidecarFields }
        let receiptFile = receipt.file
        let files = [receiptFile, sidecar.file].compactMap { $0 }
        guard !files.isEmpty else { return .done }
        do {
            try Validation.checkCreate(fields, hasReceipt: receiptFile != nil)
        } catch {
            // Only a sidecar alone gets here: with a receipt, fields may be missing.
            return await reject(files.map { ($0.name, "sidecar field \(error.description)") })
        }
        FaultPoints.hit("spool-after-open")

        var staged: StagedReceipt?
        if let receiptFile, let copy = early, copy.record.matches(receiptFile.status, named: receiptFile.name) {
            staged = copy.staged
            early = nil
        } else if let receiptFile {
            do {
                staged = try await blocking.run { [store, maxBytes] in
                    try store.receipts.stage(from: receiptFile.descriptor, jobUUID: ClientID.make(), maxBytes: maxBytes)
                }
            } catch let error as ReceiptError {
                if case .io = error {
                    logger.error("Failed to copy spool file '\(receiptFile.name.displayName)': \(reason(error)), skipping for now")
                    return .retryLater
                }
                // It changed between the checks and the copy.
                return await reject(files.map { ($0.name, $0.name == receiptFile.name ? error.description : "its receipt '\(receiptFile.name.displayName)' was rejected") })
            } catch {
                logger.error("Failed to copy spool file '\(receiptFile.name.displayName)': \(reason(error)), skipping for now")
                return .retryLater
            }
            FaultPoints.hit("spool-after-stage")
        }

        let records = files.map(SpoolIntakeRecord.init)
        let result: SpoolEnqueueResult
        do {
            result = try await store.enqueueSpoolCreate(fields: fields, clientID: ClientID.make(), receipt: staged,
                                                        files: records, now: Clock.wallMilliseconds)
        } catch {
            logger.error("Failed to queue spool file '\(files[0].name.displayName)': \(error), skipping for now")
            return .retryLater
        }
        FaultPoints.hit("spool-after-commit")

        let transactionID: String
        switch result {
        case .queued(let queued):
            transactionID = queued.transactionID
            let what = files.map { "'\($0.name.displayName)'" }.joined(separator: " and ")
            logger.info("Queued expense from spool file \(what)", transactionID: transactionID, jobUUID: queued.clientID, messageID: .expenseQueued)
            publisher.markChanged()
            onQueued()
        case .alreadyQueued(let clientID):
            transactionID = TransactionID.derive(from: clientID)
            logger.notice("Spool file '\(files[0].name.displayName)' was queued already; removing it", transactionID: transactionID)
        }
        await remove(records, transactionID: transactionID)
        return .done
    }

    /// Removes taken files durably, then forgets their intake rows. A file
    /// that could not be removed keeps its row, so it is never taken again.
    private func remove(_ records: [SpoolIntakeRecord], transactionID: String) async {
        var done: [SpoolIntakeRecord] = []
        for record in records {
            do {
                let removal = try await blocking.run { [directory] in try directory.remove(record) }
                switch removal {
                case .removed:
                    done.append(record)
                case .gone:
                    // Perhaps renamed within the spool: its row keeps it from
                    // being taken again under the new name (rows match by
                    // inode, size and time, not by name). Start-up forgets
                    // rows whose files are gone for good.
                    break
                case .replaced(let newName):
                    logger.notice("Spool file '\(record.name.displayName)' was replaced by a new file while being taken; the new one stays as '\(newName.displayName)'",
                                  transactionID: transactionID)
                    done.append(record)
                case .changed(let taken):
                    let reason = "was written to after it was taken; it was queued as it was then, as \(transactionID)"
                    let moved = (try? await blocking.run { [self] in
                        rejectNow(taken, original: record.name, reason: reason, transactionID: transactionID)
                    }) ?? false
                    if moved { done.append(record) }
                }
            } catch {
                logger.warning("Failed to remove spool file '\(record.name.displayName)' after queueing it: \(reason(error)); it will not be taken again, ignoring",
                               transactionID: transactionID)
            }
        }
        FaultPoints.hit("spool-after-unlink")
        do {
            try await directorySync.sync()
        } catch {
            logger.warning("Failed to sync spool directory '\(directory.path)': \(reason(error)); keeping its intake records, ignoring", transactionID: transactionID)
            return
        }
        FaultPoints.hit("spool-after-sync")
        do {
            try await store.forgetSpoolIntake(done)
        } catch {
            logger.warning("Failed to forget intake records: \(error), ignoring", transactionID: transactionID)
        }
    }

    private static func openReceipt(_ name: FileName, in directory: SpoolDirectory, maxBytes: Int) throws(SystemCallError) -> Opened {
        switch try directory.open(name, maxBytes: maxBytes) {
        case .gone: return .gone
        case .rejected(let why): return .rejected(why)
        case .file(let file):
            var head = [UInt8](repeating: 0, count: ReceiptKind.magicLength)
            let count = try file.descriptor.read(into: &head, at: 0)
            guard count > 0 else { return .rejected(SpoolRejection("is empty")) }
            let named = name.lowercasedExtension.flatMap(ReceiptKind.init(fileExtension:))
            guard let found = ReceiptKind.detect(head.prefix(count)) else {
                return .rejected(SpoolRejection("its first bytes are not those of a JPEG, PNG or PDF file"))
            }
            guard found == named else {
                return .rejected(SpoolRejection("is named .\(name.lowercasedExtension ?? "") but its first bytes are those of a \(found.rawValue.uppercased()) file"))
            }
            return .receipt(file)
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
                return .sidecar(file, try SpoolSidecar.parse(bytes))
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
            publisher.countSpoolRejection()
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
