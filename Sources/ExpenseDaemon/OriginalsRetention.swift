import DaemonSupport
import ExpenseCore
import OutboxStore
import Posix

/// Removes the originals kept of receipts sent as legible copies once
/// `receipt_original_retention` has passed since they were received
/// (docs/receipts.md, "The original"): at start, after each change the
/// drain made (an upload acknowledged), and at an interval of a quarter
/// of the retention, from a second to an hour. An original whose upload
/// still waits is kept whatever its age. Not made when originals are kept
/// forever.
final class OriginalsRetention: Sendable {
    private let store: Store
    private let retentionMilliseconds: Int64
    private let logger: Logger
    private let pokes: AsyncStream<Void>
    private let continuation: AsyncStream<Void>.Continuation

    /// - Parameter retentionMilliseconds: nil: forever (then there is
    ///   nothing to do, and no retention is made); 0: not kept once sent.
    init?(store: Store, retentionMilliseconds: Int64?, logger: Logger) {
        guard let retentionMilliseconds else { return nil }
        self.store = store
        self.retentionMilliseconds = retentionMilliseconds
        self.logger = logger
        (pokes, continuation) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
    }

    /// How often originals are looked at without a poke.
    var intervalMilliseconds: Int64 {
        retentionMilliseconds == 0 ? 3_600_000 : min(max(retentionMilliseconds / 4, 1000), 3_600_000)
    }

    /// An upload may have been acknowledged. Pokes while a round runs collapse into one more.
    func poke() { continuation.yield(()) }

    func stop() { continuation.finish() }

    func run() async {
        await withTaskGroup(of: Void.self) { group in
            group.addTask { [self] in
                while !Task.isCancelled {
                    do { try await Task.sleep(for: .milliseconds(intervalMilliseconds)) } catch { return }
                    poke()
                }
            }
            poke()
            for await _ in pokes { await removeDue() }
            group.cancelAll()
        }
    }

    private func removeDue() async {
        let now = Clock.wallMilliseconds
        do {
            for removed in try await store.removeOriginals(receivedBy: now - retentionMilliseconds, now: now) {
                logger.info("Removed the original of its receipt ('\(removed.fileName)'), received \(retentionMilliseconds == 0 ? "before its copy was sent" : "more than \(DurationText.describe(milliseconds: retentionMilliseconds)) ago"), as receipt_original_retention says",
                            transactionID: removed.transactionID, account: removed.account.isEmpty ? nil : removed.account)
            }
        } catch {
            logger.error("Failed to remove the originals past receipt_original_retention: \(error)")
        }
    }
}
