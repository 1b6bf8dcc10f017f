/// Which connections are waiting for a request head, since when, and which
/// of them to close: the decisions of ``ConnectionGuard``, without threads
/// or sockets, so that they can be tested with tables.
///
/// A connection waits for a head from the moment it opens, and again from
/// the end of each exchange (keep-alive) until the next head is complete.
/// libmicrohttpd's own timeout measures silence only, so a client that
/// trickles a header line a second would hold its connection for ever;
/// here the whole head has a deadline. And when every slot is taken, the
/// connection that has waited longest for its head makes room for the new
/// one, so slow clients cannot lock others out even before their deadline.
struct HeadDeadlines {
    /// A connection, as libmicrohttpd's pointer to it (unique while open).
    typealias ConnectionID = UInt

    /// Why a connection was closed by these rules.
    enum Reason: Equatable {
        /// Its head was not complete within the deadline.
        case headTimeout
        /// It was still waiting for its head when the limit was reached
        /// and it had waited longest: it made room for a new connection.
        case evicted
        /// It arrived at the limit, and no connection was waiting for a head.
        case connectionLimit
    }

    private struct Connection {
        let descriptor: Int32
        /// The number of its current (or last) wait, so that a queued wait
        /// that is over is told apart from the current one.
        var wait = 0
        var isWaiting = true
        var closing: Reason?
    }

    /// One wait for a head, in the order they began.
    private struct Wait {
        let connection: ConnectionID
        let wait: Int
        let since: UInt64
    }

    let limit: Int
    let timeoutNanoseconds: UInt64
    private var connections: [ConnectionID: Connection] = [:]
    /// Open connections not being closed: the ones the limit counts.
    private(set) var served = 0
    /// Every wait begun, oldest first; waits that ended (the head came,
    /// the connection closed) stay until they reach the front. A wait's
    /// `since` is the time it was queued, so the front is the oldest.
    private var waits: [Wait] = []
    private var front = 0
    /// Numbers waits across all connections: libmicrohttpd may give a new
    /// connection the address of a closed one, whose waits may still be queued.
    private var nextWait = 0
    /// The timer found no wait to time and sleeps until it is woken.
    private var timerIsIdle = false

    init(limit: Int, timeoutNanoseconds: UInt64) {
        precondition(limit > 0)
        self.limit = limit
        self.timeoutNanoseconds = timeoutNanoseconds
    }

    /// What a caller must do after a change.
    struct Actions: Equatable {
        /// Sockets to shut down (`shutdown(2)`): libmicrohttpd then sees the
        /// end of the stream and closes the connection itself.
        var shutDown: [Int32] = []
        /// The timer sleeps without a deadline and must be woken.
        var wakeTimer = false
    }

    /// A connection was accepted. At the limit, the connection that has
    /// waited longest for its head is closed to make room; when none is
    /// waiting, the new one is closed instead.
    /// - Parameter headIsUnread: whether a connection's whole head is in its
    ///   socket, not yet read: its client is not slow, the server is (its
    ///   thread has not run yet), so it is passed over while another waits.
    mutating func opened(_ id: ConnectionID, descriptor: Int32, now: UInt64,
                         headIsUnread: (Int32) -> Bool = { _ in false }) -> Actions {
        var actions = Actions()
        var connection = Connection(descriptor: descriptor)
        if served >= limit {
            if let victim = evictionVictim(sparing: headIsUnread) {
                close(victim, .evicted, into: &actions)
                _ = oldestWait()
            } else {
                connection.closing = .connectionLimit
                connection.isWaiting = false
                actions.shutDown.append(descriptor)
                connections[id] = connection
                return actions
            }
        }
        connections[id] = connection
        served += 1
        beginWait(id, now: now, into: &actions)
        return actions
    }

    /// The connection's head is complete (libmicrohttpd calls the access
    /// handler for the first time). False when the connection is being
    /// closed: the request must not be served.
    mutating func headArrived(_ id: ConnectionID) -> Bool {
        guard var connection = connections[id] else { return true }
        guard connection.closing == nil else { return false }
        connection.isWaiting = false
        connections[id] = connection
        return true
    }

    /// An exchange on the connection ended; unless the connection is being
    /// closed, it now waits for the next head.
    /// - Returns: why these rules closed it, if they did.
    mutating func exchangeEnded(_ id: ConnectionID, now: UInt64) -> (reason: Reason?, actions: Actions) {
        var actions = Actions()
        guard let connection = connections[id] else { return (nil, actions) }
        if let reason = connection.closing { return (reason, actions) }
        beginWait(id, now: now, into: &actions)
        return (nil, actions)
    }

    /// libmicrohttpd is done with the connection and about to close its socket.
    mutating func closed(_ id: ConnectionID) {
        guard let connection = connections.removeValue(forKey: id) else { return }
        if connection.closing == nil { served -= 1 }
        if connections.isEmpty {
            waits.removeAll(keepingCapacity: true)
            front = 0
        }
    }

    /// Closes the connections whose head is late.
    /// - Returns: the actions, and when the next head is due (`nil`: none
    ///   is awaited; the timer sleeps until ``Actions/wakeTimer``).
    mutating func expire(now: UInt64) -> (actions: Actions, next: UInt64?) {
        var actions = Actions()
        while let oldest = oldestWait() {
            let due = oldest.since + timeoutNanoseconds
            if due > now { return (actions, due) }
            close(oldest.connection, .headTimeout, into: &actions)
            dropFront()
        }
        timerIsIdle = true
        return (actions, nil)
    }

    /// Why these rules closed the connection, if they did.
    func reason(_ id: ConnectionID) -> Reason? { connections[id]?.closing }

    /// Waits in the queue, ended ones included.
    var queuedWaits: Int { waits.count - front }

    // MARK: -

    private mutating func beginWait(_ id: ConnectionID, now: UInt64, into actions: inout Actions) {
        guard var connection = connections[id] else { return }
        nextWait += 1
        connection.wait = nextWait
        connection.isWaiting = true
        connections[id] = connection
        waits.append(Wait(connection: id, wait: connection.wait, since: now))
        // Drops the waits that ended at the front, so that a busy server's
        // queue stays near the number of connections rather than growing
        // until the timer next wakes.
        _ = oldestWait()
        if timerIsIdle {
            timerIsIdle = false
            actions.wakeTimer = true
        }
    }

    private mutating func close(_ id: ConnectionID, _ reason: Reason, into actions: inout Actions) {
        guard var connection = connections[id], connection.closing == nil else { return }
        connection.closing = reason
        connection.isWaiting = false
        connections[id] = connection
        served -= 1
        actions.shutDown.append(connection.descriptor)
    }

    /// The connection to close to make room: the one that has waited
    /// longest, unless its head is in and unread; the oldest when every
    /// waiting head is. On a starved CPU a normal request can wait, its head
    /// unread, while as many slow clients as there are slots arrive after
    /// it: by age alone it would be the one closed.
    private mutating func evictionVictim(sparing headIsUnread: (Int32) -> Bool) -> ConnectionID? {
        guard let oldest = oldestWait() else { return nil }
        for index in front..<waits.count {
            let wait = waits[index]
            guard let connection = connections[wait.connection], connection.isWaiting, connection.wait == wait.wait else { continue }
            if !headIsUnread(connection.descriptor) { return wait.connection }
        }
        return oldest.connection
    }

    /// The oldest wait still current, after dropping those that ended.
    private mutating func oldestWait() -> Wait? {
        while front < waits.count {
            let wait = waits[front]
            if let connection = connections[wait.connection], connection.isWaiting, connection.wait == wait.wait {
                return wait
            }
            dropFront()
        }
        return nil
    }

    private mutating func dropFront() {
        front += 1
        // Compact once the dead prefix is most of the array.
        if front > 64 && front * 2 > waits.count {
            waits.removeFirst(front)
            front = 0
        }
    }
}
