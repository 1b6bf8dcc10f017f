import Digest
import Dispatch
import Postgres
import ServerStorage
import Synchronization

/// "In progress" (contract.md: `409 request_in_progress`) for every server
/// process on the database: a session-level advisory lock per (user, key),
/// held by one of a few connections of this process that do nothing else,
/// from the moment a request's headers arrive until its answer is decided.
///
/// Why a session lock on connections of their own, and not a lock taken by
/// the request's transaction or a row in a state: a request is in
/// progress while its body arrives (a receipt upload can take minutes),
/// and a transaction open that long would hold a pooled connection per
/// slow client; a row would cost a commit of its own per request and
/// need a lease to recover from a process that died. A session lock costs
/// one round trip and no commit, and when a process dies, the server ends
/// its session and drops all its locks at once: the key is free for the
/// retry through another process.
///
/// The locks are hashed to 64 bits; two keys that meet answer each other
/// `409` while both are in flight, and the client retries. If a claim
/// connection is lost, its locks go with it: the keys it held are then
/// unclaimed for other processes until their requests end, and the
/// database's UNIQUE constraints still decide every race.
final class ClaimLocks: Sendable {
    private let local = InFlightKeys()
    /// Connections for the locks, each with a lock of its own, so that
    /// claims do not queue behind one round trip; a key always goes to the
    /// same one (its lock is unlocked where it was locked).
    private let shards: [Shard]

    /// - Parameter reconnectDelayMilliseconds: how long a failure to
    ///   connect is remembered (the pool's: claims meanwhile fail at once).
    init(url: String, defaults: [(String, String)], connections: Int = 4,
         reconnectDelayMilliseconds: Int = ConnectionPool.Options().reconnectDelayMilliseconds) {
        shards = (0..<connections).map { _ in Shard(url: url, defaults: defaults, reconnectDelayMilliseconds: reconnectDelayMilliseconds) }
    }

    /// - Returns: false when a request with the key is in progress, in
    ///   this process or another.
    /// - Throws: ``PostgresError`` when the database cannot be asked.
    func claim(user: Int64, key: String) throws -> Bool {
        guard local.claim(user: user, key: key) else { return false }
        let lock = Self.lock(user: user, key: key)
        do {
            let taken = try shard(lock).lock(lock)
            if !taken { local.release(user: user, key: key) }
            return taken
        } catch {
            local.release(user: user, key: key)
            throw error
        }
    }

    /// Ends a claim. A lock whose connection was lost meanwhile is gone already.
    func release(user: Int64, key: String) {
        let lock = Self.lock(user: user, key: key)
        shard(lock).unlock(lock)
        local.release(user: user, key: key)
    }

    private func shard(_ lock: Int64) -> Shard {
        shards[Int(UInt64(bitPattern: lock) % UInt64(shards.count))]
    }

    /// The first 8 bytes of SHA-256(user, key), as a signed 64-bit lock key.
    static func lock(user: Int64, key: String) -> Int64 {
        let digest = SHA256.hash(Array("\(user) \(key)".utf8))
        return Int64(bitPattern: digest.prefix(8).reduce(UInt64(0)) { $0 << 8 | UInt64($1) })
    }
}

/// One claim connection and the locks it holds.
private final class Shard: Sendable {
    private let url: String
    private let defaults: [(String, String)]
    private let reconnectDelayNanoseconds: UInt64
    private let state = Mutex(State())

    private struct State: ~Copyable {
        var connection: Holder?
        /// How often each lock is held (a session takes a lock it holds
        /// again, when two keys' hashes meet, and must unlock it as often).
        /// Emptied with a lost connection, whose locks went with it.
        var holds: [Int64: Int] = [:]
        /// The last failure to connect, and when (monotonic nanoseconds).
        var failure: (error: PostgresError, at: UInt64)?
    }

    init(url: String, defaults: [(String, String)], reconnectDelayMilliseconds: Int) {
        self.url = url
        self.defaults = defaults
        reconnectDelayNanoseconds = UInt64(reconnectDelayMilliseconds) * 1_000_000
    }

    /// `pg_try_advisory_lock`, on the connection, made again when it was lost.
    func lock(_ lock: Int64) throws -> Bool {
        // Twice at most: a connection made by `connect()` can be lost again
        // before its first query; the second loss is an error.
        for attempt in 0..<2 {
            let taken = try state.withLock { state throws -> Bool? in
                if let holder = state.connection, !holder.connection.isUsable {
                    state.connection = nil
                    state.holds = [:]
                }
                guard let holder = state.connection else { return nil }
                let taken = try holder.connection.queryFirst("SELECT pg_try_advisory_lock($1)", [.integer(lock)]) { $0.bool(0) } == true
                if taken { state.holds[lock, default: 0] += 1 }
                return taken
            }
            if let taken { return taken }
            if attempt == 0 { try connect() }
        }
        throw PostgresError(.connection, message: "the claim connection was lost as soon as it was made")
    }

    /// Makes the shard's connection, outside its mutex: a database that
    /// does not answer keeps each claim waiting for one connect timeout,
    /// never for those of every claim queued before it. A failure is
    /// remembered for a moment, as the pool does, so that the claims
    /// meanwhile are answered `503` at once.
    private func connect() throws {
        // The clock read after the failure: never before it, whatever another thread recorded.
        if let failure = state.withLock({ $0.failure }), DispatchTime.now().uptimeNanoseconds - failure.at < reconnectDelayNanoseconds {
            throw failure.error
        }
        do {
            let holder = Holder(try Connection(url, defaults: defaults))
            state.withLock { state in
                state.failure = nil
                // Another claim may have connected meanwhile: keep the one
                // whose locks are held; this one closes as it goes.
                if state.connection == nil { state.connection = holder }
            }
        } catch {
            if error.isUnavailable { state.withLock { $0.failure = (error, DispatchTime.now().uptimeNanoseconds) } }
            throw error
        }
    }

    /// `pg_advisory_unlock` of a lock this connection holds.
    func unlock(_ lock: Int64) {
        state.withLock { state in
            guard let count = state.holds[lock], let holder = state.connection else { return }
            state.holds[lock] = count > 1 ? count - 1 : nil
            do {
                _ = try holder.connection.queryFirst("SELECT pg_advisory_unlock($1)", [.integer(lock)]) { $0.bool(0) }
            } catch {
                // Its locks went with the connection; the next claim makes a new one.
                state.connection = nil
                state.holds = [:]
            }
        }
    }
}

/// A claim connection: used only under its ``Shard``'s lock.
private final class Holder: @unchecked Sendable {
    let connection: Connection
    init(_ connection: Connection) { self.connection = connection }
}
