import DaemonSupport
import Digest
import ExpenseCore
import OutboxStore
import Posix
import ReceiptCopy
import Synchronization

/// Makes the one legible copy of each receipt that a backend is sent
/// (docs/receipts.md), after the upload was acknowledged and before it is
/// sent: a durable step of its own, which a crash resumes (an upload with
/// no copy recorded is copied again; a copy file not recorded is swept at
/// the next start). The untrusted bytes are read by `expensed-decode` in
/// its sandbox; a receipt it cannot read makes its upload need attention,
/// with the reason, and costs nothing else. One receipt at a time: a
/// decoder uses every core it is given.
final class ReceiptCopier: Sendable {
    private let store: Store
    private let decoder: ReceiptDecoder
    private let logger: Logger
    private let recorded: @Sendable () -> Void
    private let worker: DecoderWorker<PendingCopy>
    /// A copy could not be stored for lack of room, with this much free
    /// then: the next round waits until there is more (``roomFreed()``),
    /// rather than decode a receipt again only to find no room again.
    private let waitingForRoom = Mutex<Int64?>(nil)

    /// - Parameter recorded: after each copy recorded or refused (the
    ///   drain may send the upload; `watch` may show the change).
    init(store: Store, decoder: ReceiptDecoder, logger: Logger, recorded: @escaping @Sendable () -> Void) {
        self.store = store
        self.decoder = decoder
        self.logger = logger
        self.recorded = recorded
        worker = DecoderWorker(label: "receipt-copy", pending: { try await store.pendingCopies() }) { [logger] error in
            logger.error("Failed to read the uploads waiting for their copy: \(error)")
        }
    }

    /// Something may wait for its copy: an add, an edit, a spool take, a
    /// retry, a timer tick. Pokes while a round runs collapse into one more.
    func poke() { worker.poke() }

    /// The file system may have room again: a copy that found none is
    /// tried again once there is more free than when it failed, and the
    /// drain's headroom is set aside (copies never write into it). Cheap
    /// (a `statvfs`, only while one waits): called after every drain change.
    func roomFreed() {
        let retry = waitingForRoom.withLock { failedAt -> Bool in
            guard let before = failedAt, !store.isHeadroomGivenUp else { return false }
            guard let now = try? FileSystem.space(of: store.receipts.path).availableBytes, now > before else { return false }
            failedAt = nil
            return true
        }
        if retry { poke() }
    }

    /// Ends ``run()`` promptly: a decoder in flight is killed, and its
    /// upload stays waiting for its copy (made at the next start).
    func stop() { worker.stop() }

    func run() async {
        // No room for one copy: the rest would find none either; room freed pokes again.
        await worker.run { [self] pending in await copy(pending) }
    }

    /// What became of one receipt's copy.
    private enum Attempt: Sendable {
        case made(MadeCopy)
        case failed(CopyFailure)
        /// It could not be stored: the file system is full (why).
        case noRoom(String)
    }

    /// Makes and records `pending`'s copy.
    /// - Returns: false when it could not be stored for lack of room: the
    ///   upload waits for its copy, which is made once there is room (a
    ///   full disk is no fault of the receipt's).
    private func copy(_ pending: PendingCopy) async -> Bool {
        let path = store.receipts.filePath(pending.fileName)
        let attempt: Attempt
        if pending.kind == .pdf {
            attempt = .made(.original)
        } else if store.isHeadroomGivenUp {
            // The file system filled, and its last room is the drain's: no copy is written into it.
            attempt = .noRoom("the room left is set aside for sending")
        } else {
            logger.debug("Making the copy of receipt '\(pending.fileName)'", transactionID: pending.transactionID, jobUUID: pending.jobUUID,
                         account: pending.account)
            attempt = (try? await worker.executor.run { [decoder, store, stopping = worker.stopping] () -> Attempt in
                do {
                    let original = try FileDescriptor.open(path, [.readOnly, .noFollow])
                    switch try decoder.copy(of: original, kind: pending.kind, stopping: stopping) {
                    case .original:
                        return .made(.original)
                    case .copy(let kind, let bytes, _, _, _):
                        let name = "\(ClientID.make(milliseconds: Clock.wallMilliseconds)).\(kind.fileExtension)"
                        try store.receipts.write(bytes, as: name)
                        return .made(.copy(fileName: name, kind: kind, size: Int64(bytes.count), sha256: SHA256.hash(bytes)))
                    }
                } catch let failure as CopyFailure {
                    return .failed(failure)
                } catch let error as SystemCallError where error.isNoRoom {
                    return .noRoom("\(error.call): \(error.reason)")
                } catch {
                    return .failed(CopyFailure("its bytes cannot be read or the copy stored: \(error)"))
                }
            }) ?? .failed(CopyFailure("the copy was not made"))
        }
        do {
            switch attempt {
            case .made(let result):
                FaultPoints.hit("copy-before-record")
                let took = try await store.recordCopy(pending, result, now: Clock.wallMilliseconds)
                if case .copy(let name, let kind, let size, _) = result {
                    if took {
                        logger.info("Receipt copy made: \(kind.rawValue.uppercased()), \(size) bytes from \(pending.size) bytes of \(pending.kind.rawValue.uppercased()); the original is kept",
                                    transactionID: pending.transactionID, jobUUID: pending.jobUUID, account: pending.account)
                    } else {
                        try? store.receipts.remove(name)
                    }
                }
            case .failed(let failure) where failure == .stopped:
                return true
            case .noRoom(let why):
                if waitForRoom() {
                    logger.warning("No room to store the copy of receipt '\(pending.fileName)' (\(why)); uploads wait for their copies until there is room",
                                   transactionID: pending.transactionID, jobUUID: pending.jobUUID, account: pending.account)
                }
                return false
            case .failed(let failure):
                logger.warning("Receipt '\(pending.fileName)' cannot be read: \(failure.reason); its upload needs attention",
                               transactionID: pending.transactionID, jobUUID: pending.jobUUID, account: pending.account)
                try await store.copyFailed(pending, reason: failure.reason)
            }
        } catch {
            logger.error("Failed to record the copy of receipt '\(pending.fileName)': \(error); it is made again once there is more room",
                         transactionID: pending.transactionID, jobUUID: pending.jobUUID, account: pending.account)
            // Not again at once (the same failure would follow): as a copy without room, once more is free.
            waitForRoom()
            return false
        }
        recorded()
        return true
    }

    /// Holds the copies until more is free than now (``roomFreed()``);
    /// after the headroom was given up, until it is set aside again.
    /// - Returns: whether they were not waiting already.
    @discardableResult
    private func waitForRoom() -> Bool {
        let free = store.isHeadroomGivenUp ? 0 : (try? FileSystem.space(of: store.receipts.path).availableBytes) ?? 0
        return waitingForRoom.withLock { failedAt -> Bool in
            defer { failedAt = free }
            return failedAt == nil
        }
    }
}
