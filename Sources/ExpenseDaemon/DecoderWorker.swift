import DaemonSupport
import ReceiptCopy
import Synchronization

/// One sandboxed `expensed-decode` at a time, over what the store says
/// waits for it (each upload's legible copy, each receipt's reading): a
/// poke starts a round (pokes during a round collapse into one more), and
/// a round takes the store's pending batch until it is empty. Stopped, it
/// ends promptly: the child in flight is killed and its work stays to do,
/// found again at the next start.
final class DecoderWorker<Item: Sendable>: Sendable {
    /// Where the blocking child runs, one at a time: off the cooperative pool.
    let executor: BlockingExecutor
    /// Kills the child in flight, and every one started after ``stop()``.
    let stopping: DecoderStop?
    private let stopped = Atomic<Bool>(false)
    private let pokes: AsyncStream<Void>
    private let continuation: AsyncStream<Void>.Continuation
    private let pending: @Sendable () async throws -> [Item]
    private let failedToList: @Sendable (Error) -> Void

    /// - Parameters:
    ///   - pending: what waits now, oldest first.
    ///   - failedToList: told when `pending` throws (the round ends; the next poke tries again).
    init(label: String, pending: @escaping @Sendable () async throws -> [Item], failedToList: @escaping @Sendable (Error) -> Void) {
        executor = BlockingExecutor(label: label, width: 1)
        stopping = try? DecoderStop()
        self.pending = pending
        self.failedToList = failedToList
        (pokes, continuation) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
    }

    func poke() { continuation.yield(()) }

    func stop() {
        stopped.store(true, ordering: .relaxed)
        stopping?.stop()
        continuation.finish()
    }

    /// Rounds until ``stop()``, each item given to `each`, which returns
    /// false to end the round (the rest would fare no better now).
    func run(_ each: @escaping @Sendable (Item) async -> Bool) async {
        poke()
        for await _ in pokes { await round(each) }
    }

    private func round(_ each: @Sendable (Item) async -> Bool) async {
        while true {
            let batch: [Item]
            do { batch = try await pending() } catch {
                failedToList(error)
                return
            }
            if batch.isEmpty { return }
            for item in batch {
                if stopped.load(ordering: .relaxed) { return }
                guard await each(item) else { return }
            }
        }
    }
}
