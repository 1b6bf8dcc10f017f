import Synchronization

/// The one copy of the ``ServerStatus``, shared between the sync engine,
/// its only writer, and whatever reports it (the status publisher, the
/// `status` op), which read it.
public final class ServerRecord: Sendable {
    private let status = Mutex(ServerStatus())

    public init() {}

    /// The record as it is now.
    public var current: ServerStatus { status.withLock { $0 } }

    /// Applies `change`, one request's outcome.
    /// - Returns: what `change` returns, and whether the state the summary
    ///   shows changed (so that it is published again).
    func update<R>(_ change: (inout ServerStatus) -> R) -> (result: R, stateChanged: Bool) {
        status.withLock { status in
            let before = status.state
            let result = change(&status)
            return (result, status.state != before)
        }
    }
}
