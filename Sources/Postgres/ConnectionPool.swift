import Dispatch
import Synchronization

/// Up to `size` connections to one database, lent to one thread at a time,
/// for callers on threads of their own (an HTTP server's connection
/// threads): ``withConnection(_:)`` blocks, so never call it from async code.
///
/// Connections are made when needed and kept while they work. One that
/// broke, or that the server closed while it sat idle (a restart), is
/// dropped and replaced by a new one on the next loan, so the pool
/// recovers by itself once the server is back. While connecting fails,
/// loans fail quickly: a failure less than ``Options/reconnectDelayMilliseconds``
/// old is thrown again without trying.
public final class ConnectionPool: Sendable {
    public struct Options: Sendable {
        /// Connections open at most.
        public var size = 16
        /// How long a loan waits for a connection while all are lent out.
        public var waitMilliseconds = 5_000
        /// How long a failure to connect is remembered.
        public var reconnectDelayMilliseconds = 250
        /// Keywords the connection string may override (`connect_timeout`, …).
        public var defaults: [(String, String)] = []

        public init() {}
    }

    private let conninfo: String
    private let options: Options
    private let prepare: @Sendable (Connection) throws -> Void
    private let slots: DispatchSemaphore
    private let state = Mutex(State())

    private struct State: ~Copyable {
        var idle: [Lent] = []
        /// The last failure to connect, and when (monotonic nanoseconds).
        var failure: (error: PostgresError, at: UInt64)?
    }

    /// - Parameter prepare: runs on every new connection before its first
    ///   loan (session settings); an error fails that loan.
    public init(_ conninfo: String, options: Options = Options(), prepare: @escaping @Sendable (Connection) throws -> Void = { _ in }) {
        self.conninfo = conninfo
        self.options = options
        self.prepare = prepare
        slots = DispatchSemaphore(value: options.size)
    }

    /// Runs `body` with a connection of its own, on the calling thread.
    /// A connection that `body` leaves broken or in a transaction is closed.
    /// - Throws: ``PostgresError`` (``PostgresError/Kind/busy`` when no
    ///   connection came free in time, ``PostgresError/Kind/connection``
    ///   when none could be made), or what `body` threw.
    public func withConnection<T>(_ body: (Connection) throws -> T) throws -> T {
        guard slots.wait(timeout: .now() + .milliseconds(options.waitMilliseconds)) == .success else {
            throw PostgresError(.busy, message: "all \(options.size) connections to the database stayed busy for \(options.waitMilliseconds) ms")
        }
        defer { slots.signal() }
        let lent = try checkout()
        defer { checkin(lent) }
        return try body(lent.connection)
    }

    /// Connections idle in the pool right now.
    public var idleCount: Int { state.withLock { $0.idle.count } }

    private func checkout() throws -> Lent {
        while let lent = state.withLock({ $0.idle.popLast() }) {
            if lent.connection.isUsable { return lent }
        }
        // The clock is read after the failure: a failure another thread
        // recorded after an earlier reading would make the difference negative.
        if let failure = state.withLock({ $0.failure }),
           DispatchTime.now().uptimeNanoseconds - failure.at < UInt64(options.reconnectDelayMilliseconds) * 1_000_000 {
            throw failure.error
        }
        do {
            let connection = try Connection(conninfo, defaults: options.defaults)
            try prepare(connection)
            state.withLock { $0.failure = nil }
            return Lent(connection)
        } catch let error as PostgresError where error.isUnavailable {
            state.withLock { $0.failure = (error, DispatchTime.now().uptimeNanoseconds) }
            throw error
        }
    }

    private func checkin(_ lent: Lent) {
        guard lent.connection.isUsable, !lent.connection.isInTransaction else { return }
        state.withLock { $0.idle.append(lent) }
    }
}

/// A connection that moves between threads only through the pool's lock
/// and is used by one thread at a time, which is all libpq asks.
private final class Lent: @unchecked Sendable {
    let connection: Connection
    init(_ connection: Connection) { self.connection = connection }
}
