import Synchronization

/// Work a pass's turn hands to its task group (store calls, timers): the
/// runner yields it from whatever thread holds the turn, and the group's
/// owner takes it with ``next()``.
///
/// Not an `AsyncStream`: a stream's iterator ends when its task is
/// cancelled, and the daemon cancels the engine's task while stopping,
/// when the pass must still record the answers that are arriving. This
/// queue ends only when ``finish()`` is called, once nothing is outstanding.
final class PassWorkQueue: Sendable {
    typealias Work = @Sendable () async -> Void

    private struct State: ~Copyable {
        var items: [Work] = []
        var waiter: CheckedContinuation<Work?, Never>?
        var finished = false
    }

    private let state = Mutex(State())

    /// Queues `work`; dropped once the queue is finished (the pass ended).
    func yield(_ work: @escaping Work) {
        let waiter = state.withLock { state -> CheckedContinuation<Work?, Never>? in
            guard !state.finished else { return nil }
            if let waiter = state.waiter.take() { return waiter }
            state.items.append(work)
            return nil
        }
        waiter?.resume(returning: work)
    }

    /// Ends the queue: ``next()`` returns nil once the queued work is taken.
    func finish() {
        let waiter = state.withLock { state -> CheckedContinuation<Work?, Never>? in
            state.finished = true
            return state.waiter.take()
        }
        waiter?.resume(returning: nil)
    }

    /// The next work, waiting for it; nil when finished. One caller at a time.
    func next() async -> Work? {
        await withCheckedContinuation { continuation in
            let ready = state.withLock { state -> Work?? in
                if !state.items.isEmpty { return .some(state.items.removeFirst()) }
                if state.finished { return .some(nil) }
                state.waiter = continuation
                return .none
            }
            if let ready { continuation.resume(returning: ready) }
        }
    }
}
