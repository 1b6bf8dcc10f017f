import ControlProtocol
import DaemonSupport
import ExpenseCore
import Posix
import Synchronization

/// Identifies one control connection for the life of the daemon.
public typealias ConnectionID = UInt64

/// A checked request handed from the socket thread to the handlers.
public struct IncomingRequest: Sendable {
    public let connection: ConnectionID
    public let request: ControlRequest
    /// The receipt's descriptor, for an `add` that said `"receipt": true`.
    public let receipt: FileDescriptor?
    public let peer: PeerCredentials
}

/// What the socket thread does after writing a response.
public enum ResponseAction: Sendable {
    /// Read the connection's next request.
    case next
    /// Stream queue summaries on this connection from now on (`watch`).
    /// `seenVersion` is the published version current when the answered
    /// summary was read: anything published later is sent too.
    case watch(id: JSONValue, seenVersion: Int)
}

/// Who may use the control socket: root, the daemon's own user, and
/// members of one configured group (checked with `SO_PEERCRED`).
public struct AccessPolicy: Sendable {
    public let daemonUID: UInt32
    public let groupID: UInt32?
    public let groupName: String?

    public init(daemonUID: UInt32, groupID: UInt32?, groupName: String?) {
        self.daemonUID = daemonUID
        self.groupID = groupID
        self.groupName = groupName
    }

    public func allows(_ peer: PeerCredentials) -> Bool {
        if peer.uid == 0 || peer.uid == daemonUID { return true }
        guard let groupID else { return false }
        return peer.gid == groupID || peer.groups.contains(groupID)
    }

    func refusal(_ peer: PeerCredentials) -> String {
        var allowed = "root and uid \(daemonUID)"
        if let groupName { allowed += " and members of group '\(groupName)'" }
        return "uid \(peer.uid) may not use expensed (allowed: \(allowed))"
    }
}

/// Limits on what one client can make the daemon hold.
public struct ControlLimits: Sendable {
    public var maxConnections = 64
    public var idleTimeoutMilliseconds: Int64 = 30_000
    public var lineMaxBytes = 1 << 20
    public init() {}
}

/// The control socket's I/O: one dedicated thread polls the listener and
/// every connection, frames lines, checks peers and limits, and hands
/// parsed requests to the handlers through ``requests``. Handlers answer
/// with ``respond(to:_:then:)`` from any thread; one request per connection
/// is in flight at a time, so answers keep their order.
public final class ControlServer: Sendable {
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
    private let finished = Mutex<[CheckedContinuation<Void, Never>]?>([])

    struct SharedState: ~Copyable {
        var responses: [(ConnectionID, [UInt8], ResponseAction)] = []
        var summary: QueueSummary?
        var summaryVersion = 0
        var stopping = false
        var pings: [@Sendable () -> Void] = []
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

    /// Sends `response` on `connection` (dropped if it has gone).
    public func respond(to connection: ConnectionID, _ response: ControlResponse, then action: ResponseAction = .next) {
        var line = response.json.serializedBytes()
        line.append(0x0A)
        shared.withLock { $0.responses.append((connection, line, action)) }
        wakeup.signal()
    }

    /// Makes `summary` the newest state for every `watch` connection. A
    /// watcher that has not read the previous one skips to this one.
    public func publish(summary: QueueSummary) {
        shared.withLock {
            $0.summary = summary
            $0.summaryVersion += 1
        }
        wakeup.signal()
    }

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
