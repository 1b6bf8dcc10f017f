import DaemonSupport
import ExpenseCore
import OutboxStore
import Posix
import ReceiptCopy
import ReceiptReading
import Synchronization

/// Reads each receipt queued while `reading` is on and applies what it
/// suggests as an edit of its expense (docs/receipts.md, "Reading"; docs/sync.md,
/// "Readings"): a durable step of its own, recorded in the transaction that
/// queued the upload and ended in the one that applies it, so a crash
/// resumes it (a reading left to do is read again at the next start).
/// Off the hot path: one reading at a time on a thread of its own, the
/// reader in the decoder's sandbox with its limits and deadline; adds,
/// drains and the control socket never wait for it.
final class ReceiptReadings: Sendable {
    private let store: Store
    /// A reading's result could not be recorded (``roomFreed()``).
    private let recordFailed = Atomic<Bool>(false)
    private let reader: ReceiptReader
    private let parsing: ReadingSettings
    private let logger: Logger
    private let applied: @Sendable () -> Void
    private let worker: DecoderWorker<PendingReading>
    /// Each account's merchants, as last looked up, and when (monotonic
    /// nanoseconds): looked up again at most once a minute, so that a batch
    /// of readings does not scan the account's expenses for each.
    private let merchants = Mutex<[String: (at: UInt64, names: [String])]>([:])

    /// - Parameters:
    ///   - parsing: what the parser is told but the account's merchants
    ///     and the receipt's day, which each reading adds.
    ///   - applied: after each reading ended (the drain may send what
    ///     waited for it; `watch` may show the change).
    init(store: Store, reader: ReceiptReader, parsing: ReadingSettings, logger: Logger, applied: @escaping @Sendable () -> Void) {
        self.store = store
        self.reader = reader
        self.parsing = parsing
        self.logger = logger
        self.applied = applied
        worker = DecoderWorker(label: "receipt-read", pending: { try await store.pendingReadings() }) { [logger] error in
            logger.error("Failed to read the receipts waiting for their reading: \(error)")
        }
    }

    /// A receipt may wait for its reading. Pokes while a round runs collapse into one more.
    func poke() { worker.poke() }

    /// Ends ``run()`` promptly: a reader in flight is killed, and its
    /// reading stays to do (read again at the next start).
    func stop() { worker.stop() }

    func run() async {
        await worker.run { [self] pending in await read(pending) }
    }

    /// The store may take writes again (room was freed): a reading whose
    /// result could not be recorded is made again. Cheap otherwise.
    func roomFreed() {
        if recordFailed.exchange(false, ordering: .relaxed) { poke() }
    }

    /// Reads `pending` and records what was found.
    /// - Returns: false when it could not be recorded (a full disk): the
    ///   round ends rather than read the same receipt again at once, and
    ///   ``roomFreed()`` or the next receipt queued tries again.
    private func read(_ pending: PendingReading) async -> Bool {
        logger.debug("Reading receipt '\(pending.fileName)'", transactionID: pending.transactionID, jobUUID: pending.jobUUID, account: pending.account)
        let path = store.receipts.filePath(pending.fileName)
        let result = await suggestions(account: pending.account, receivedAt: pending.queuedAt) { try FileDescriptor.open(path, [.readOnly, .noFollow]) }
        do {
            switch result {
            case .failure(let failure) where failure == .stopped:
                return true
            case .failure(let failure):
                logger.warning("Receipt '\(pending.fileName)' was not read: \(failure.reason); its expense goes without suggestions",
                               transactionID: pending.transactionID, jobUUID: pending.jobUUID, account: pending.account)
                try await store.readingEnded(pending)
            case .success(let suggestions):
                FaultPoints.hit("reading-before-apply")
                guard let outcome = try await store.applyReading(transactionID: pending.transactionID, jobUUID: pending.jobUUID, suggestions,
                                                                 now: Clock.wallMilliseconds) else { return true }
                log(outcome, suggestions: suggestions)
            }
        } catch {
            logger.error("Failed to record the reading of receipt '\(pending.fileName)': \(error); it is read again once there is room",
                         transactionID: pending.transactionID, jobUUID: pending.jobUUID, account: pending.account)
            recordFailed.store(true, ordering: .relaxed)
            return false
        }
        applied()
        return true
    }

    /// Reads the receipt `open` gives and parses its text for `account`'s
    /// expense received at `receivedAt` (wall-clock milliseconds), on the
    /// reading thread, after any reading in progress.
    func suggestions(account: String, receivedAt: Int64,
                     _ open: @escaping @Sendable () throws -> FileDescriptor) async -> Result<ReceiptSuggestions, CopyFailure> {
        var settings = parsing
        settings.knownMerchants = await knownMerchants(of: account)
        // A day ahead of the day it came: the receipt's time zone may be ahead of ours.
        settings.latestDate = String(Timestamp.format(milliseconds: receivedAt + 86_400_000).prefix(10))
        let parse = settings
        return (try? await worker.executor.run { [reader, stopping = worker.stopping] () -> Result<ReceiptSuggestions, CopyFailure> in
            do {
                let text = try reader.read(try open(), stopping: stopping)
                return .success(ReceiptParser.suggest(text, settings: parse))
            } catch let failure as CopyFailure {
                return .failure(failure)
            } catch {
                return .failure(CopyFailure("its bytes cannot be read: \(error)"))
            }
        }) ?? .failure(CopyFailure("the reading was not made"))
    }

    private func knownMerchants(of account: String) async -> [String] {
        let now = Clock.monotonicNanoseconds
        if let cached = merchants.withLock({ $0[account] }), now - cached.at < 60_000_000_000 { return cached.names }
        let names = (try? await store.knownMerchants(of: account)) ?? []
        merchants.withLock { $0[account] = (now, names) }
        return names
    }

    /// The journal's line of a reading: what it filled, with each field's
    /// confidence, and what it kept; the values stay out of the log.
    func log(_ outcome: ReadingOutcome, suggestions: ReceiptSuggestions, asked: Bool = false) {
        let filled = outcome.filled.map { "\($0.field) (\(Self.confidence($0.confidence)))" }
        let kept = outcome.kept.map(\.field)
        let what: String
        if outcome.fields.isEmpty {
            what = "nothing read"
        } else if !outcome.isApplied {
            what = "not applied: the expense is gone or being deleted"
        } else {
            what = (filled.isEmpty ? "filled nothing" : "filled " + filled.joined(separator: ", "))
                + (kept.isEmpty ? "" : "; kept \(kept.joined(separator: ", ")) as set")
        }
        logger.log(.info, "Receipt read\(asked ? " on request" : ""): \(what)", transactionID: outcome.transactionID, account: outcome.account,
                   fields: [("EXPENSE_READ", Self.marks(outcome).serialized())])
    }

    /// `{"amount": 0.91, ...}`: the fields filled, with their confidence.
    static func marks(_ outcome: ReadingOutcome) -> JSONValue {
        .object(Dictionary(uniqueKeysWithValues: outcome.filled.map { ($0.field, JSONValue.number($0.confidence)) }))
    }

    static func confidence(_ value: Double) -> String {
        let hundredths = Int((value * 100).rounded())
        return hundredths >= 100 ? "1.00" : "0.\(hundredths < 10 ? "0" : "")\(hundredths)"
    }
}
