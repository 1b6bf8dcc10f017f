import Synchronization

/// The one copy of the ``MeteredHold``: written by the sync engine (the
/// link's state as the daemon hears it, and `sync --now`), read by whatever
/// reports it (the status publisher, the `status` op).
public final class MeteredRecord: Sendable {
    private let hold: Mutex<MeteredHold>

    public init(mode: MeteredMode) {
        hold = Mutex(MeteredHold(mode: mode))
    }

    /// The hold as it is now.
    public var current: MeteredHold { hold.withLock { $0 } }

    /// Applies `change`.
    /// - Returns: the hold before and after.
    func update(_ change: (inout MeteredHold) -> Void) -> (before: MeteredHold, after: MeteredHold) {
        hold.withLock { hold in
            let before = hold
            change(&hold)
            return (before, hold)
        }
    }
}
