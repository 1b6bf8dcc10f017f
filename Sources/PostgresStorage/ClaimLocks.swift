import Digest
import Postgres
import ServerStorage
import Synchronization

/// "In progress" (contract.md: `409 request_in_progress`) for every server
/// process on the database: a session-level advisory lock per (user, key),
/// held by one connection of this process that does nothing else, from
/// the moment a request's headers arrive until its answer is decided.
///
/// Why a session lock on a connection of its own, and not a lock taken by
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
/// `409` while both are in flight, and the client retries. If the claim
/// connection is lost, its locks go with it: the keys it held are then
/// unclaimed for other processes until their requests end, and the
/// database's UNIQUE constraints still decide every race.
final class ClaimLocks: Sendable {
    private let url: String
    private let defaults: [(String, String)]
    private let local = InFlightKeys()
    private let state = Mutex(State())

    private struct State: ~Copyable {
        var connection: Holder?
        /// Which connection took each lock (a number per connection made;
        /// the entries of a lost one are dropped with it), and how often: a session takes a lock it holds again (two keys
        /// whose hashes meet) and must unlock it as often.
        var holders: [Int64: (generation: Int, count: Int)] = [:]
        var generation = 0
    }

    init(url: String, defaults: [(String, String)]) {
        self.url = url
        self.defaults = defaults
    }

    /// - Returns: false when a request with the key is in progress, in
    ///   this process or another.
    /// - Throws: ``PostgresError`` when the database cannot be asked.
    func claim(user: Int64, key: String) throws -> Bool {
        guard local.claim(user: user, key: key) else { return false }
        let lock = Self.lock(user: user, key: key)
        do {
            let taken = try state.withLock { state throws -> Bool in
                let holder = try connection(&state)
                let taken = try holder.connection.queryFirst("SELECT pg_try_advisory_lock($1)", [.integer(lock)]) { $0.bool(0) } == true
                if taken { state.holders[lock] = (holder.generation, (state.holders[lock]?.count ?? 0) + 1) }
                return taken
            }
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
        state.withLock { state in
            guard let held = state.holders[lock] else { return }
            state.holders[lock] = held.count > 1 ? (held.generation, held.count - 1) : nil
            guard let holder = state.connection, holder.generation == held.generation else { return }
            do {
                _ = try holder.connection.queryFirst("SELECT pg_advisory_unlock($1)", [.integer(lock)]) { $0.bool(0) }
            } catch {
                // Its locks went with the connection; the next claim makes a new one.
                state.connection = nil
            }
        }
        local.release(user: user, key: key)
    }

    /// The claim connection, made again when it was lost.
    private func connection(_ state: inout State) throws -> Holder {
        if let holder = state.connection, holder.connection.isUsable { return holder }
        state.connection = nil
        // The locks of the lost connection are gone with it.
        state.holders = [:]
        state.generation += 1
        let holder = Holder(try Connection(url, defaults: defaults), generation: state.generation)
        state.connection = holder
        return holder
    }

    /// The first 8 bytes of SHA-256(user, key), as a signed 64-bit lock key.
    static func lock(user: Int64, key: String) -> Int64 {
        let digest = SHA256.hash(Array("\(user) \(key)".utf8))
        return Int64(bitPattern: digest.prefix(8).reduce(UInt64(0)) { $0 << 8 | UInt64($1) })
    }
}

/// The claim connection: used only under ``ClaimLocks``' lock.
private final class Holder: @unchecked Sendable {
    let connection: Connection
    let generation: Int
    init(_ connection: Connection, generation: Int) {
        self.connection = connection
        self.generation = generation
    }
}
