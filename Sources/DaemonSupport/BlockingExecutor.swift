import Dispatch
import Synchronization

/// Runs blocking work (copying a receipt, `fsync`) off Swift's cooperative
/// pool, which has one thread per core: a few dedicated serial queues,
/// used in turn. Serial queues get their own threads from libdispatch
/// (they overcommit), so a slow disk stalls only the work queued behind it.
public final class BlockingExecutor: Sendable {
    private let queues: [DispatchQueue]
    private let next = Atomic<Int>(0)

    public init(label: String, width: Int = 4) {
        queues = (0..<width).map { DispatchQueue(label: "\(label).\($0)") }
    }

    /// Runs `body` on one of the queues and returns its result.
    public func run<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
        let index = next.add(1, ordering: .relaxed).oldValue % queues.count
        return try await withCheckedThrowingContinuation { continuation in
            queues[index].async { continuation.resume(with: Result { try body() }) }
        }
    }
}
