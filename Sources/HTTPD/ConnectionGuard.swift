#if canImport(Glibc)
import Glibc
#endif
import Posix
import Synchronization

/// Applies ``HeadDeadlines`` to a running libmicrohttpd daemon: its
/// callbacks report connections opening, heads arriving, exchanges ending
/// and connections closing, and a timer thread of its own closes the
/// connections whose head is late.
///
/// A connection is closed with `shutdown(2)` on its socket, which wakes its
/// thread with the end of the stream; libmicrohttpd then closes it as if the
/// client had left, and cleans up. The descriptor stays libmicrohttpd's:
/// it closes a connection's socket only after reporting the connection
/// closed (`MHD_CONNECTION_NOTIFY_CLOSED`, in `MHD_cleanup_connections`),
/// and that report waits for this lock, so a descriptor shut down under
/// the lock is still that connection's, never a number reused since.
/// libmicrohttpd shuts sockets down from another thread the same way when
/// it stops (`close_all_connections`).
final class ConnectionGuard: Sendable {
    private struct State {
        var deadlines: HeadDeadlines
        var isStopped = false
    }

    private let state: Mutex<State>
    private let wakeUp: EventNotifier

    /// Starts the timer thread.
    /// - Throws: ``SystemCallError`` when its wake-up descriptor cannot be made.
    init(limit: Int, headTimeoutSeconds: Int) throws(SystemCallError) {
        state = Mutex(State(deadlines: HeadDeadlines(limit: limit, timeoutNanoseconds: UInt64(headTimeoutSeconds) * 1_000_000_000)))
        wakeUp = try EventNotifier()
        Threads.spawn(name: "http-deadlines") { [self] in runTimer() }
    }

    /// A connection was accepted (libmicrohttpd's daemon thread).
    func opened(_ id: HeadDeadlines.ConnectionID, descriptor: Int32) {
        perform { $0.opened(id, descriptor: descriptor, now: Clock.monotonicNanoseconds, headIsUnread: Self.headIsUnread) }
    }

    /// Whether the socket's receive queue holds a whole request head (up to
    /// its empty line), peeked at, never consumed. libmicrohttpd reads what
    /// arrives as soon as its thread runs, so a head trickled in holds at
    /// most its latest piece here; a whole one means the client sent it at
    /// once and the connection's thread has not run yet. Called under the
    /// lock, so the descriptor is still the connection's.
    private static func headIsUnread(_ descriptor: Int32) -> Bool {
        var buffer = [UInt8](repeating: 0, count: 8192)
        let count = Glibc.recv(descriptor, &buffer, buffer.count, Int32(MSG_PEEK | MSG_DONTWAIT))
        guard count >= 4 else { return false }
        let end: [UInt8] = [13, 10, 13, 10]
        return (0...(count - 4)).contains { buffer[$0..<$0 + 4].elementsEqual(end) }
    }

    /// The head is complete; false when the connection is being closed.
    func headArrived(_ id: HeadDeadlines.ConnectionID) -> Bool {
        state.withLock { $0.deadlines.headArrived(id) }
    }

    /// An exchange ended. - Returns: why the connection was closed, if it was closed here.
    func exchangeEnded(_ id: HeadDeadlines.ConnectionID) -> HeadDeadlines.Reason? {
        state.withLock { state in
            let (reason, actions) = state.deadlines.exchangeEnded(id, now: Clock.monotonicNanoseconds)
            apply(actions)
            return reason
        }
    }

    /// libmicrohttpd is about to close the connection's socket.
    func closed(_ id: HeadDeadlines.ConnectionID) {
        state.withLock { $0.deadlines.closed(id) }
    }

    /// Ends the timer thread; call after `MHD_stop_daemon`.
    func stop() {
        state.withLock { $0.isStopped = true }
        wakeUp.signal()
    }

    private func perform(_ change: (inout HeadDeadlines) -> HeadDeadlines.Actions) {
        state.withLock { state in apply(change(&state.deadlines)) }
    }

    /// Runs under the lock (see the type's comment).
    private func apply(_ actions: HeadDeadlines.Actions) {
        for descriptor in actions.shutDown { _ = Glibc.shutdown(descriptor, Int32(SHUT_RDWR)) }
        if actions.wakeTimer { wakeUp.signal() }
    }

    /// Sleeps until the next head is due (or until woken when a wait begins
    /// while none was timed), closes the late ones, again.
    private func runTimer() {
        while true {
            let next: UInt64?? = state.withLock { state in
                if state.isStopped { return .none }
                let now = Clock.monotonicNanoseconds
                let (actions, next) = state.deadlines.expire(now: now)
                apply(actions)
                return .some(next.map { $0 - now })
            }
            guard let wait = next else { return }
            // Rounded up, so a wake-up never comes before the deadline.
            let milliseconds = wait.map { Int32(clamping: ($0 + 999_999) / 1_000_000) } ?? -1
            _ = try? Poll.wait([(wakeUp.descriptor, .readable)], timeoutMilliseconds: milliseconds)
            wakeUp.drain()
        }
    }
}
