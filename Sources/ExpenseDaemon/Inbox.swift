import Synchronization

/// Events for one waiting task, posted from any thread or task. Posting
/// never blocks or suspends; the waiting task is woken once for whatever
/// arrived while it was busy or asleep, and takes it all at once.
final class Inbox<Event: Sendable>: Sendable {
    private struct State: ~Copyable {
        var events: [Event] = []
        var waiter: CheckedContinuation<[Event], Never>?
    }

    private let state = Mutex(State())

    func post(_ event: Event) {
        let waiter = state.withLock { state -> CheckedContinuation<[Event], Never>? in
            // A waiter exists only while nothing is waiting to be taken.
            guard let waiter = state.waiter.take() else {
                state.events.append(event)
                return nil
            }
            return waiter
        }
        waiter?.resume(returning: [event])
    }

    /// Everything posted since the last call, oldest first; waits for at
    /// least one event. One task at a time may call it.
    func next() async -> [Event] {
        if let ready = takeAll() { return ready }
        return await withCheckedContinuation { continuation in
            let ready = state.withLock { state -> [Event]? in
                guard !state.events.isEmpty else {
                    state.waiter = continuation
                    return nil
                }
                defer { state.events = [] }
                return state.events
            }
            if let ready { continuation.resume(returning: ready) }
        }
    }

    private func takeAll() -> [Event]? {
        state.withLock { state in
            guard !state.events.isEmpty else { return nil }
            defer { state.events = [] }
            return state.events
        }
    }
}
