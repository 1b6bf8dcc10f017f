import Synchronization

/// Idempotency keys whose first request is still being processed in this
/// process (contract.md: `409 request_in_progress`). Enough for one
/// server process per database; the PostgreSQL engine adds a lock every
/// process sees. Across processes, the UNIQUE constraints still decide
/// who wins whatever the claims say.
public final class InFlightKeys: Sendable {
    private let keys = Mutex<Set<Entry>>([])

    private struct Entry: Hashable {
        let user: Int64
        let key: String
    }

    public init() {}

    /// Marks the key as being processed.
    /// - Returns: false when another request with the same key already is.
    public func claim(user: Int64, key: String) -> Bool {
        keys.withLock { $0.insert(Entry(user: user, key: key)).inserted }
    }

    public func release(user: Int64, key: String) {
        _ = keys.withLock { $0.remove(Entry(user: user, key: key)) }
    }
}
