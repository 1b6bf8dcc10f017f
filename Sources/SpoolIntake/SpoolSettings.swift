import ExpenseCore

/// What the spool is told: how large a file it takes, and how long a file
/// must stay unchanged before it is taken. The daemon maps its
/// configuration into it.
public struct SpoolSettings: Sendable, Equatable {
    /// The largest file taken; larger ones are rejected.
    public var maxBytes: Int
    /// How long a file waits unchanged before it is taken (docs/spool.md).
    public var settleMilliseconds: Int64
    /// How long after a receipt is taken alone a sidecar of its name edits
    /// its expense rather than making one of its own; 0: never.
    public var sidecarWindowMilliseconds: Int64
    /// How often the spool is listed besides inotify (`spool_scan_interval`).
    public var scanInterval: SpoolScanInterval

    public init(maxBytes: Int, settleMilliseconds: Int64, sidecarWindowMilliseconds: Int64 = 10 * 60_000,
                scanInterval: SpoolScanInterval = .automatic) {
        self.maxBytes = maxBytes
        self.settleMilliseconds = settleMilliseconds
        self.sidecarWindowMilliseconds = sidecarWindowMilliseconds
        self.scanInterval = scanInterval
    }
}

/// What the spool tells the rest of the daemon, which it does not know:
/// the sync engine and the status publisher are reached only through these;
/// and the one thing it asks, whose account a file's owner has.
public struct SpoolEvents: Sendable {
    /// A job was queued: a pass may send it.
    public var queued: @Sendable () -> Void
    /// The queue may have changed: republish the summary.
    public var changed: @Sendable () -> Void
    /// `rejected/` holds this many files now.
    public var rejectedCount: @Sendable (Int) -> Void
    /// This many files wait in the spool for room in the outbox now.
    /// Called under the spool's lock of that count, so in order: it must
    /// return at once and call nothing of the spool's.
    public var waitingForRoom: @Sendable (Int) -> Void
    /// The account of a file owned by this uid (the spool is sticky: the
    /// owner is the writer), or nil with why it has none.
    public var accountOfOwner: @Sendable (UInt32) -> (account: String?, reason: String)

    public init(queued: @escaping @Sendable () -> Void, changed: @escaping @Sendable () -> Void,
                rejectedCount: @escaping @Sendable (Int) -> Void, waitingForRoom: @escaping @Sendable (Int) -> Void = { _ in },
                accountOfOwner: @escaping @Sendable (UInt32) -> (account: String?, reason: String) = { _ in (AccountName.defaultName, "") }) {
        self.queued = queued
        self.changed = changed
        self.rejectedCount = rejectedCount
        self.waitingForRoom = waitingForRoom
        self.accountOfOwner = accountOfOwner
    }
}
