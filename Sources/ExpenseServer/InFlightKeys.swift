import Synchronization

/// Idempotency keys whose first request is still being processed in this
/// process (contract.md: `409 request_in_progress`). In-process tracking
/// is enough for one server process on one SQLite file; across processes
/// the UNIQUE constraint still decides who wins.
final class InFlightKeys: Sendable {
    private let keys = Mutex<Set<Entry>>([])

    private struct Entry: Hashable {
        let user: Int64
        let key: String
    }

    /// Marks the key as being processed.
    /// - Returns: false when another request with the same key already is.
    func claim(user: Int64, key: String) -> Bool {
        keys.withLock { $0.insert(Entry(user: user, key: key)).inserted }
    }

    func release(user: Int64, key: String) {
        _ = keys.withLock { $0.remove(Entry(user: user, key: key)) }
    }

}
