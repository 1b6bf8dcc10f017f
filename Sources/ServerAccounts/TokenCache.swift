import Posix
import Synchronization

/// Recent successful token lookups, so most requests authenticate without
/// touching the database. Only hits are kept, for `lifetime`: a token
/// removed from the database stops working within that time; an unknown
/// token is looked up every time.
public final class TokenCache: Sendable {
    private let entries = Mutex<[String: Entry]>([:])
    private let lifetimeNanoseconds: UInt64
    /// Entries kept at most; the cache is emptied when it would grow past.
    private let capacity = 10_000

    private struct Entry {
        let user: Int64
        let expires: UInt64
    }

    public init(lifetimeSeconds: UInt64 = 60) {
        lifetimeNanoseconds = lifetimeSeconds * 1_000_000_000
    }

    /// The user of the token whose SHA-256 (hex) is `hash`, when looked up recently.
    public func user(forHash hash: String) -> Int64? {
        let now = Clock.monotonicNanoseconds
        return entries.withLock { entries in
            guard let entry = entries[hash] else { return nil }
            guard entry.expires > now else {
                entries[hash] = nil
                return nil
            }
            return entry.user
        }
    }

    public func remember(hash: String, user: Int64) {
        let expires = Clock.monotonicNanoseconds + lifetimeNanoseconds
        entries.withLock { entries in
            if entries.count >= capacity { entries.removeAll(keepingCapacity: true) }
            entries[hash] = Entry(user: user, expires: expires)
        }
    }
}
