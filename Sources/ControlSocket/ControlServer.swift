import ControlProtocol
import DaemonSupport
import ExpenseCore
import Posix
import Synchronization

/// The control socket's I/O: one dedicated thread polls the listener and
/// every connection, frames lines, checks peers and limits, and hands
/// parsed requests to the handlers through ``requests``. Handlers answer
/// with ``respond(to:_:then:)`` from any thread; one request per connection
/// is in flight at a time, so answers keep their order.
public final class ControlServer: ChangeSink {
    public let requests: AsyncStream<IncomingRequest>
    let continuation: AsyncStream<IncomingRequest>.Continuation
    let listener: FileDescriptor
    /// The socket file to remove at shutdown (nil when systemd owns it).
    let ownedSocketPath: String?
    let wakeup: EventNotifier
    let shared = Mutex(SharedState())
    let limits: ControlLimits
    let access: AccessPolicy
    let logger: Logger
    /// How many connections are watching (kept by the socket thread).
    let watcherCount = Atomic<Int>(0)
    /// How many of them watch changes rather than summaries.
    let changeWatcherCount = Atomic<Int>(0)
    private let finished = Mutex<[CheckedContinuation<Void, Never>]?>([])

    struct SharedState: ~Copyable {
        var responses: [(ConnectionID, [UInt8], ResponseAction, FileDescriptor?)] = []
        /// The newest summary of each scope watched.
        var summaries: [AccountScope: QueueSummary] = [:]
        var summaryVersion = 0
        var stopping = false
        var pings: [@Sendable () -> Void] = []
        /// Changes published since the socket thread last took them,
        /// numbered; at most a ring's worth (older ones are missed anyway).
        var changes: [ExpenseChange] = []
        var lastChangeSeq: Int64 = 0
        /// The last `accountSeq` given, by account.
        var lastAccountSeq: [String: Int64] = [:]
    }

    public init(listener: FileDescriptor, ownedSocketPath: String?, limits: ControlLimits, access: AccessPolicy, logger: Logger) throws(SystemCallError) {
        self.listener = listener
        self.ownedSocketPath = ownedSocketPath
        self.limits = limits
        self.access = access
        self.logger = logger
        wakeup = try EventNotifier()
        try listener.setNonBlocking(true)
        (requests, continuation) = AsyncStream.makeStream(of: IncomingRequest.self)
    }

    /// Starts the socket thread. `direct` may take a request on the socket
    /// thread itself (it must not block, and must answer through
    /// ``respond(to:_:then:)``); the requests it declines go to ``requests``.
    public func start(direct: (@Sendable (IncomingRequest) -> Bool)? = nil) {
        Threads.spawn(name: "control") { [self] in
            let loop = ControlLoop(server: self, direct: direct)
            loop.run()
            continuation.finish()
            if let ownedSocketPath { try? FileSystem.remove(ownedSocketPath) }
            let waiters = finished.withLock { waiters -> [CheckedContinuation<Void, Never>] in
                defer { waiters = nil }
                return waiters ?? []
            }
            for waiter in waiters { waiter.resume() }
        }
    }

    /// Sends `response` on `connection` (dropped if it has gone), with
    /// `descriptor` attached to its line's first byte (`SCM_RIGHTS`) when given.
    public func respond(to connection: ConnectionID, _ response: ControlResponse, then action: ResponseAction = .next,
                        passing descriptor: FileDescriptor? = nil) {
        var line = response.json.serializedBytes()
        line.append(0x0A)
        shared.withLock { $0.responses.append((connection, line, action, descriptor)) }
        wakeup.signal()
    }

    /// Makes `summary` the newest state for every `watch` connection. A
    /// watcher that has not read the previous one skips to this one.
    public func publish(summary: QueueSummary) {
        publish(summaries: [.all: summary])
    }

    /// Makes each summary the newest state for the `watch` connections of
    /// its scope (each person follows their own account's queue).
    public func publish(summaries: [AccountScope: QueueSummary]) {
        shared.withLock {
            $0.summaries = summaries
            $0.summaryVersion += 1
        }
        wakeup.signal()
    }

    /// Adds committed changes to the ring `watch` connections follow; with
    /// nobody watching changes they are dropped here.
    public func publish(changes: [ExpenseChange]) {
        guard wantsChanges else { return }
        shared.withLock { s in
            for change in changes {
                var numbered = change
                s.lastChangeSeq += 1
                numbered.seq = s.lastChangeSeq
                numbered.accountSeq = s.lastAccountSeq[change.account, default: 0] + 1
                s.lastAccountSeq[change.account] = numbered.accountSeq
                s.changes.append(numbered)
            }
            if s.changes.count > ChangeRing.capacity { s.changes.removeFirst(s.changes.count - ChangeRing.capacity) }
        }
        wakeup.signal()
    }

    /// True when some connection watches changes (or asked to): the store
    /// builds them only then.
    public var wantsChanges: Bool { changeWatcherCount.load(ordering: .relaxed) > 0 }

    /// The version of the newest published summary.
    public func publishedVersion() -> Int {
        shared.withLock { $0.summaryVersion }
    }

    /// True when some connection is watching the queue (or asked to).
    public var hasWatchers: Bool { watcherCount.load(ordering: .relaxed) > 0 }

    /// Calls `answer` from the socket thread once it has gone round its
    /// loop: proof that it is alive (the watchdog asks this).
    public func probe(_ answer: @escaping @Sendable () -> Void) {
        shared.withLock { $0.pings.append(answer) }
        wakeup.signal()
    }

    /// Stops accepting connections and requests; requests already being
    /// handled still get their answers. Returns when the thread has ended.
    public func shutdown() async {
        shared.withLock { $0.stopping = true }
        wakeup.signal()
        await withCheckedContinuation { continuation in
            let done = finished.withLock { waiters -> Bool in
                if waiters == nil { return true }
                waiters!.append(continuation)
                return false
            }
            if done { continuation.resume() }
        }
    }
}
