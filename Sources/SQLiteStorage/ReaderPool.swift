import SQLite
import Synchronization

/// Read-only connections for the connection threads. WAL lets them read
/// while the writer commits; each is used by one thread at a time.
final class ReaderPool: Sendable {
    private let path: String
    private let idle = Mutex<[ReaderConnection]>([])
    /// Idle connections kept for reuse; more are closed after use.
    private let keep = 64

    init(path: String) {
        self.path = path
    }

    /// Runs `body` with a connection of its own, on the calling thread.
    func read<T>(_ body: (Connection) throws -> T) throws -> T {
        let reader = try idle.withLock { $0.popLast() } ?? ReaderConnection(path: path)
        defer {
            idle.withLock { pool in
                if pool.count < keep { pool.append(reader) }
            }
        }
        return try body(reader.connection)
    }
}

/// A connection that moves between threads only through the pool's lock,
/// and is used by one thread at a time, which is all SQLite asks of a
/// connection opened `SQLITE_OPEN_NOMUTEX`.
private final class ReaderConnection: @unchecked Sendable {
    let connection: Connection

    init(path: String) throws {
        connection = try Connection(path: path, create: false)
        connection.setBusyTimeout(milliseconds: 5000)
        try connection.execute("PRAGMA query_only = ON")
    }
}
