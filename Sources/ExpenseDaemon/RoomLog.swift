import DaemonSupport
import ExpenseCore
import Synchronization

/// Says in the journal when requests start being refused for room, and
/// when an add is taken again: once each, not once per refused request
/// (a client retrying in a loop would flood the journal). Each refusal
/// after the first of its reason is logged at debug level.
final class RoomLog: Sendable {
    private let logger: Logger
    /// The reason of the refusals since the last add taken; nil: none.
    private let refusing = Mutex<OutboxRefusal.Reason?>(nil)

    init(logger: Logger) {
        self.logger = logger
    }

    /// A request was refused for room.
    /// - Parameter what: the request, for the log line ("'add'").
    func refused(_ refusal: OutboxRefusal, what: String) {
        let isNew = refusing.withLock { reason -> Bool in
            defer { reason = refusal.reason }
            return reason != refusal.reason
        }
        if isNew {
            logger.warning("Refused \(what) for room, and will refuse adds until there is some: \(refusal.message)")
        } else {
            logger.debug("Refused \(what) for room: \(refusal.message)")
        }
    }

    /// An add was taken: said once after refusals.
    func admitted() {
        let was = refusing.withLock { reason -> OutboxRefusal.Reason? in
            defer { reason = nil }
            return reason
        }
        if was != nil { logger.notice("The outbox has room again: adds are taken") }
    }
}
