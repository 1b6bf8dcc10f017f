import Dispatch
import Synchronization

/// One connection on its own serial queue, so SQLite's blocking calls
/// (a commit under `synchronous=FULL` waits for `fsync`) never run on
/// Swift's cooperative pool.
///
/// Writes are group-committed: writes that arrive while a commit is running
/// are gathered and committed together, each inside its own savepoint, so
/// one failing write undoes only itself. Every caller resumes only after
/// the commit that holds its write returned.
///
/// The database must be in WAL mode. A ``Durability/durable`` write returns
/// once its commit is on stable storage (`synchronous=FULL`: the WAL is
/// fsynced). A ``Durability/deferred`` write is atomic, ordered, and
/// survives the process being killed, but not a power loss (it commits
/// with `synchronous=NORMAL`: the WAL is fsynced at the next durable commit
/// or checkpoint). A group with any durable write commits durably.
public final class DatabaseQueue: Sendable {
    public enum Durability: Sendable {
        case durable
        case deferred
    }

    private let queue: DispatchQueue
    private let box: ConnectionBox
    private let pending = Mutex(PendingWrites())

    /// Opens the database at `path` and runs `prepare` on it (pragmas, migrations).
    public init(path: String, label: String = "database", prepare: (Connection) throws -> Void) throws {
        let connection = try Connection(path: path)
        try prepare(connection)
        box = ConnectionBox(connection)
        box.synchronousFull = (try connection.scalarInt("PRAGMA synchronous") ?? 2) >= 2
        queue = DispatchQueue(label: label)
    }

    /// Runs `body` on the queue, alone (no transaction is opened for it).
    public func read<T: Sendable>(_ body: @escaping @Sendable (Connection) throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            queue.async { [box] in
                continuation.resume(with: Result { try body(box.connection) })
            }
        }
    }

    /// Runs `body` inside a transaction shared with other concurrent writes;
    /// returns once that transaction has committed.
    public func write<T: Sendable>(durability: Durability = .durable, _ body: @escaping @Sendable (Connection) throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            enqueue(Self.item(durability, body) { continuation.resume(with: $0) })
        }
    }

    /// Like ``write(durability:_:)``, without waiting: `completion` runs on
    /// the queue's thread once the commit holding the write returned. For
    /// callers on threads of their own that must not block.
    public func write<T: Sendable>(durability: Durability = .durable, _ body: @escaping @Sendable (Connection) throws -> T,
                                   completion: @escaping @Sendable (Result<T, Error>) -> Void) {
        enqueue(Self.item(durability, body, complete: completion))
    }

    /// Runs `body` on the queue, between transactions, without waiting for
    /// it (it runs once the queue has finished what is before it): a
    /// liveness probe, or upkeep nobody waits on.
    public func probe(_ body: @escaping @Sendable () -> Void) {
        queue.async(execute: body)
    }

    /// Like ``write(_:)``, but blocks the calling thread until the commit
    /// that holds the write returned: for callers on threads of their own
    /// (an HTTP server's connection threads), never from async code. The
    /// write joins the same group commit as every other.
    public func writeAndWait<T: Sendable>(durability: Durability = .durable, _ body: @escaping @Sendable (Connection) throws -> T) throws -> T {
        let done = DispatchSemaphore(value: 0)
        let outcome = Mutex<Result<T, Error>?>(nil)
        enqueue(Self.item(durability, body) { result in
            outcome.withLock { $0 = result }
            done.signal()
        })
        done.wait()
        // The semaphore is signalled only after the outcome is set.
        return try outcome.withLock { $0! }.get()
    }

    /// A write for the next group commit: `body` runs in its own savepoint
    /// when it shares the transaction (alone, the transaction is its
    /// savepoint); `complete` gets its value once the commit succeeded, or
    /// the error.
    private static func item<T: Sendable>(_ durability: Durability, _ body: @escaping @Sendable (Connection) throws -> T,
                                          complete: @escaping @Sendable (Result<T, Error>) -> Void) -> WriteItem {
        WriteItem(durable: durability == .durable, run: { connection, alone in
            do {
                let value = alone ? try body(connection) : try connection.savepoint { try body(connection) }
                return (nil, { commitError in complete(commitError.map { .failure($0) } ?? .success(value)) })
            } catch {
                return (error, { _ in complete(.failure(error)) })
            }
        }, fail: { error in complete(.failure(error)) })
    }

    private func enqueue(_ item: WriteItem) {
        let schedule = pending.withLock { state -> Bool in
            state.items.append(item)
            if state.isScheduled { return false }
            state.isScheduled = true
            return true
        }
        if schedule { queue.async { [self] in flush() } }
    }

    /// Runs `body` on the queue and waits for it, blocking the calling
    /// thread: for start-up and tests, never from async code.
    public func sync<T>(_ body: (Connection) throws -> T) throws -> T {
        try queue.sync { try body(box.connection) }
    }

    private func flush() {
        let items = pending.withLock { state -> [WriteItem] in
            defer { state.items = []; state.isScheduled = false }
            return state.items
        }
        var rest = items[...]
        while !rest.isEmpty { rest = commit(rest) }
    }

    /// Runs `items` in one transaction and commits it. When SQLite rolls
    /// the whole transaction back by itself (a full disk, an I/O error),
    /// every write run so far in it fails with that error and the writes
    /// not yet run are returned, for a transaction of their own: no write
    /// ever runs outside a transaction, and none is reported committed
    /// unless it was.
    private func commit(_ items: ArraySlice<WriteItem>) -> ArraySlice<WriteItem> {
        let connection = box.connection
        do {
            let durable = items.contains { $0.durable }
            if durable != box.synchronousFull {
                try connection.execute(durable ? "PRAGMA synchronous = FULL" : "PRAGMA synchronous = NORMAL", [])
                box.synchronousFull = durable
            }
            try connection.execute("BEGIN IMMEDIATE", [])
        } catch {
            for item in items { item.fail(error) }
            return []
        }
        let alone = items.count == 1
        var outcomes: [(error: Error?, complete: @Sendable (Error?) -> Void)] = []
        for (offset, item) in items.enumerated() {
            outcomes.append(item.run(connection, alone))
            if !connection.isInTransaction {
                // With the cause's code: a full disk is a full disk to every
                // write it undid (the outbox refuses an add, the drain makes room).
                let cause = outcomes.last?.error as? SQLiteError
                let error = SQLiteError(code: cause?.code ?? 4, message: "SQLite rolled the shared transaction back after another write failed (\(cause?.message ?? "an error")); nothing of this write was stored")
                for outcome in outcomes { outcome.complete(error) }
                return items.dropFirst(offset + 1)
            }
        }
        var commitError: Error?
        if alone && outcomes[0].error != nil {
            // Its own transaction: undo what it did before it threw.
            try? connection.execute("ROLLBACK", [])
        } else {
            do {
                try connection.execute("COMMIT", [])
            } catch {
                commitError = error
                try? connection.execute("ROLLBACK", [])
            }
        }
        for outcome in outcomes { outcome.complete(commitError) }
        return []
    }
}

private struct PendingWrites: ~Copyable {
    var items: [WriteItem] = []
    var isScheduled = false
}

/// A write waiting for the next group commit. `run` executes it (in a
/// savepoint unless it is alone) and returns its error, if it failed, and
/// what to do once the commit's outcome is known.
private struct WriteItem: Sendable {
    /// Whether the caller needs the commit on stable storage before it resumes.
    let durable: Bool
    let run: @Sendable (Connection, _ alone: Bool) -> (error: Error?, complete: @Sendable (Error?) -> Void)
    /// Resumes the caller with `error` without running the write.
    let fail: @Sendable (Error) -> Void
}

/// The connection, touched only on the queue's thread.
private final class ConnectionBox: @unchecked Sendable {
    let connection: Connection
    /// Whether the connection's `synchronous` setting is FULL (or EXTRA).
    var synchronousFull = true
    init(_ connection: Connection) { self.connection = connection }
}
