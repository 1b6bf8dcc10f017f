/// What the sync engine is told: when to send, how hard to retry, where
/// its token is. The daemon maps its configuration into it.
public struct SyncSettings: Sendable, Equatable {
    /// Requests in flight at once (a backend may allow fewer).
    public var concurrency = 4
    /// The retry timer while anything is pending.
    public var drainIntervalMilliseconds: Int64 = 5_000
    /// How often to fetch the server's changes.
    public var refreshIntervalMilliseconds: Int64 = 900_000
    public var backoffBaseMilliseconds: Int64 = 1_000
    public var backoffCapMilliseconds: Int64 = 300_000
    /// Rejections before a job needs attention.
    public var maxAttempts = 5
    /// How long a receipt-only expense's create waits for its receipt's
    /// reading (`reading_wait`); nil when receipts are not read.
    public var readingWaitMilliseconds: Int64?
    /// The file holding the bearer token; nil for systemd's
    /// `$CREDENTIALS_DIRECTORY/token`, when there is one.
    public var tokenFile: String?
    /// The longest one request may take, connecting included: a pass that
    /// makes no progress for longer than this (and 10 s) is stuck.
    public var longestRequestMilliseconds: Int64 = 70_000
    /// The backend sends a create again only after a lookup of its marker
    /// (no idempotency keys): a create whose request was cut off (a stop
    /// while it was in flight, a crash) waits `longestRequestMilliseconds`
    /// before it is tried, since the backend may still be committing it.
    public var settlesInterruptedCreates = false

    public init() {}
}
