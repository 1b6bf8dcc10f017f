import DaemonSupport
import ExpenseCore
import Posix

/// The spool files left in place because the outbox had no room for
/// them (docs/sync.md, "A bounded outbox"): not rejected (they are not
/// bad), not claimed, taken as room frees. A pure record of which wait,
/// fed each take's outcome, saying when the waiting starts and ends so
/// that the journal hears of it once, not once per file and try.
struct SpoolRoomWait {
    private(set) var names: Set<FileName> = []

    /// What a take's outcome changed.
    struct Change: Equatable {
        /// The take's files were not waiting before: a new refusal to count.
        var isNewRefusal = false
        /// Nothing waited before this take; now its files do.
        var started = false
        /// The last waiting files were taken (or went).
        var ended = false
        /// How many files wait, when that changed.
        var count: Int?
    }

    /// `take`'s files were refused for room (`waiting`), or are done with
    /// (queued, rejected, gone, or to be tried again for another reason).
    mutating func finished(_ take: [FileName], waiting: Bool) -> Change {
        let before = names.count
        var change = Change()
        if waiting {
            change.isNewRefusal = !take.contains { names.contains($0) }
            names.formUnion(take)
            change.started = before == 0
        } else {
            names.subtract(take)
            change.ended = before > 0 && names.isEmpty
        }
        if names.count != before { change.count = names.count }
        return change
    }
}

extension SpoolIntake {
    /// Records what became of `take` for the files waiting for room:
    /// counts a new refusal, says in the journal when files start and
    /// stop waiting, and tells the count on.
    func noteRoom(_ take: SpoolSchedule.Take, _ outcome: Outcome) {
        var refusal: OutboxRefusal?
        if case .waitForRoom(let why) = outcome { refusal = why }
        // The count is told under the lock: two takes finishing at once
        // must not tell theirs in the other order and leave the older.
        let change = roomWait.withLock { wait in
            let change = wait.finished(take.names, waiting: refusal != nil)
            if let count = change.count { onWaitingCount(count) }
            return change
        }
        let what = take.names.map { "'\($0.displayName)'" }.joined(separator: " and ")
        if let refusal {
            if change.isNewRefusal { store.countRefusal(refusal) }
            store.restoreHeadroom()
            if change.started {
                logger.warning("Spool file \(what) waits for room in the outbox, and so will others: \(refusal.message); they stay in the spool and are taken as room frees")
            } else {
                logger.debug("Spool file \(what) waits for room in the outbox: \(refusal.message)")
            }
        }
        if change.ended { logger.notice("The outbox has room again: the spool files that waited for it are taken") }
    }

    /// The names of the files that wait for room.
    var namesWaitingForRoom: Set<FileName> { roomWait.withLock { $0.names } }
}
