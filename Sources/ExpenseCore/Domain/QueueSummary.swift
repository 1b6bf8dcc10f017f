/// The queue at a glance: what `status`, `watch` and systemd's `STATUS=` show.
public struct QueueSummary: Sendable, Equatable {
    public var queued = 0
    public var sending = 0
    public var needsAttention = 0
    /// Creation time (ms since the epoch) of the oldest job, if any.
    public var oldestJobMilliseconds: Int64?
    /// "not configured", "ok", "unreachable", "needs credentials", …
    public var server: ServerState = .notConfigured
    /// Files in the spool's `rejected/` now (reason files aside).
    public var spoolRejected = 0
    /// Files left in the spool until the outbox has room for them.
    public var spoolWaiting = 0
    /// Queued jobs a metered link holds now (counted in `queued` too): 0
    /// when nothing is held, and while `sync --now` lifts the hold.
    public var held = 0
    /// Expenses held as incomplete: the backend needs fields they lack
    /// (``RequiredFields``). Their jobs count in `queued` too.
    public var incomplete = 0
    /// The queued jobs those expenses hold back (their creates, receipts
    /// and edits), less those a metered link holds (counted in `held`).
    public var incompleteJobs = 0
    /// Queued jobs that wait for an earlier job of their expense that needs
    /// attention (counted in `queued` too; not those counted in `held`):
    /// they go once it is retried or discarded.
    public var behindAttention = 0
    /// Receipts whose reading is still to do (docs/sync.md, "Readings"):
    /// the create of a receipt-only expense waits for its reading, at most
    /// `reading_wait`.
    public var reading = 0

    public init() {}

    public enum ServerState: String, Sendable, Equatable {
        case notConfigured = "not_configured"
        case unknown
        case ok
        case unreachable
        case needsCredentials = "needs_credentials"
    }

    public var pending: Int { queued + sending }

    /// What is pending but not held (by a metered link, as incomplete, or
    /// behind a job that needs attention): what passes send now.
    public var pendingUnheld: Int { max(pending - held - incompleteJobs - behindAttention, 0) }

    /// "2 waiting behind one that needs attention", or nil when none is:
    /// how the summary line, `status` and `watch --summary` say it.
    public var behindAttentionNote: String? {
        behindAttention > 0 ? "\(behindAttention) waiting behind one that needs attention" : nil
    }

    /// One line, e.g. "3 queued, 1 sending, 0 need attention; oldest 2m; server ok".
    public func line(nowMilliseconds: Int64) -> String {
        var text = "\(queued) queued, \(sending) sending, \(needsAttention) need attention"
        if let oldest = oldestJobMilliseconds {
            text += "; oldest \(Self.age(milliseconds: nowMilliseconds - oldest))"
        }
        switch server {
        case .notConfigured: text += "; no server configured"
        case .unknown: text += "; server not contacted yet"
        case .ok: text += "; server ok"
        case .unreachable: text += "; server unreachable"
        case .needsCredentials: text += "; server needs credentials"
        }
        if held > 0 { text += "; \(held) held (metered link)" }
        if incomplete > 0 { text += "; \(incomplete) incomplete" }
        if let behind = behindAttentionNote { text += "; " + behind }
        if reading > 0 { text += "; \(reading) receipt\(reading == 1 ? "" : "s") being read" }
        if spoolRejected > 0 { text += "; \(spoolRejected) spool files rejected" }
        if spoolWaiting > 0 { text += "; \(spoolWaiting) spool files wait for room in the outbox" }
        return text
    }

    /// A short age: "250ms", "45s", "12m", "3h", "2d".
    public static func age(milliseconds: Int64) -> String {
        if milliseconds < 1000 { return "\(max(0, milliseconds))ms" }
        let seconds = milliseconds / 1000
        if seconds < 60 { return "\(seconds)s" }
        if seconds < 3600 { return "\(seconds / 60)m" }
        if seconds < 86400 { return "\(seconds / 3600)h" }
        return "\(seconds / 86400)d"
    }
}
