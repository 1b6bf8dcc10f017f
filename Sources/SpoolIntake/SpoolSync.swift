import Dispatch
import Posix
import Synchronization

/// One `fsync` shared by everyone who asks while it is pending: callers
/// that arrive while one runs are served by the next, so a burst of
/// intakes costs a few directory syncs, not one each (group commit, for a
/// directory). Runs on its own serial queue, off the cooperative pool.
final class SpoolSync: Sendable {
    private let queue: DispatchQueue
    private let body: @Sendable () throws(SystemCallError) -> Void
    private let state = Mutex(State())

    private struct State: ~Copyable {
        var waiting: [CheckedContinuation<Void, any Error>] = []
        var isRunning = false
    }

    init(label: String, _ body: @escaping @Sendable () throws(SystemCallError) -> Void) {
        queue = DispatchQueue(label: label)
        self.body = body
    }

    /// Returns once a sync that started after this call has finished.
    func sync() async throws {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
            let start = state.withLock { state -> Bool in
                state.waiting.append(continuation)
                if state.isRunning { return false }
                state.isRunning = true
                return true
            }
            if start { queue.async { [self] in drain() } }
        }
    }

    private func drain() {
        while true {
            let batch = state.withLock { state -> [CheckedContinuation<Void, any Error>] in
                defer { state.waiting = [] }
                if state.waiting.isEmpty { state.isRunning = false }
                return state.waiting
            }
            if batch.isEmpty { return }
            let result: Result<Void, any Error>
            do {
                try body()
                result = .success(())
            } catch {
                result = .failure(error)
            }
            for waiter in batch { waiter.resume(with: result) }
        }
    }
}
