import OutboxStore
import Posix
import Synchronization

/// Receipts copied into the state directory while they wait out the
/// settle time for a sidecar, so that the copy, the slow part of an
/// intake, is done by the time the receipt is taken.
///
/// A copy is used only if the spool file is still the very file copied,
/// unchanged; otherwise, and whenever it is not used, it is removed. The
/// copy keeps the file it was made from open: while it does, no other file
/// can get that inode, so the same device and inode prove the same file,
/// and an unchanged change time (`st_ctim`, set by every write and never
/// by a writer) an unchanged one. (Closed, a file removed and a new one
/// written with the same size and mtime could take its inode, and the
/// copy of the old bytes would be queued for the new file.) Copies are
/// never referenced by a job until the intake's commit, so a crash leaves
/// at most unreferenced files, which the start-up sweep removes.
final class SpoolEarlyCopies: Sendable {
    struct Copy: Sendable {
        /// The spool file copied, still open, as it was when opened.
        let file: SpoolFile
        let staged: StagedReceipt

        /// True when `status` (of the file now under the copy's name) is
        /// the very file copied, unchanged since.
        func isCopy(of status: FileStatus) -> Bool {
            let copied = file.status
            return status.device == copied.device && status.inode == copied.inode && status.size == copied.size
                && status.modifiedNanoseconds == copied.modifiedNanoseconds && status.changedNanoseconds == copied.changedNanoseconds
        }
    }

    /// The most copies made or kept at once, each holding its spool file
    /// open: a flood of lone receipts costs descriptors up to this, and the
    /// receipts past it are copied when taken.
    static let limit = 64

    private enum Entry {
        /// Being copied; `waiters` are takes waiting for the outcome.
        case running(ticket: UInt64, waiters: [CheckedContinuation<Copy?, Never>])
        case done(Copy?)
    }

    private let entries = Mutex<[FileName: Entry]>([:])
    private let tickets = Atomic<UInt64>(0)
    /// Removes a copy that will not be used.
    let discard: @Sendable (StagedReceipt) -> Void

    init(discard: @escaping @Sendable (StagedReceipt) -> Void) {
        self.discard = discard
    }

    /// A copy of `name` is starting; one started before is superseded.
    /// Call in the order the work was handed out, before the copy runs.
    /// - Returns: the ticket to ``finish(_:ticket:copy:)`` with; nil when
    ///   ``limit`` copies are kept already (no copy is to be made).
    func begin(_ name: FileName) -> UInt64? {
        enum Begun { case full, started(superseded: Copy?) }
        let ticket = tickets.add(1, ordering: .relaxed).newValue
        let begun = entries.withLock { entries -> Begun in
            switch entries[name] {
            case .running(_, let waiters):
                entries[name] = .running(ticket: ticket, waiters: waiters)
                return .started(superseded: nil)
            case .done(let copy):
                entries[name] = .running(ticket: ticket, waiters: [])
                return .started(superseded: copy)
            case nil:
                if entries.count >= Self.limit { return .full }
                entries[name] = .running(ticket: ticket, waiters: [])
                return .started(superseded: nil)
            }
        }
        guard case .started(let superseded) = begun else { return nil }
        if let superseded { discard(superseded.staged) }
        return ticket
    }

    /// The copy with `ticket` is done (nil: it could not be made).
    func finish(_ name: FileName, ticket: UInt64, copy: Copy?) {
        let (waiters, isCurrent) = entries.withLock { entries -> ([CheckedContinuation<Copy?, Never>], Bool) in
            guard case .running(let current, let waiters) = entries[name], current == ticket else { return ([], false) }
            entries[name] = waiters.isEmpty ? .done(copy) : nil
            return (waiters, true)
        }
        guard isCurrent else {
            if let copy { discard(copy.staged) }
            return
        }
        // One take per name at a time: a second waiter is never expected,
        // but would get nil and make its own copy.
        for (index, waiter) in waiters.enumerated() { waiter.resume(returning: index == 0 ? copy : nil) }
    }

    /// How many takes wait for the copy of `name` (for tests).
    func waiterCount(_ name: FileName) -> Int {
        entries.withLock { entries in
            if case .running(_, let waiters) = entries[name] { return waiters.count }
            return 0
        }
    }

    /// Takes the copy of `name`, waiting for it when it is being made.
    /// - Returns: nil when none was made; the caller must use or discard it.
    func claim(_ name: FileName) async -> Copy? {
        await withCheckedContinuation { (continuation: CheckedContinuation<Copy?, Never>) in
            enum Now { case wait, answer(Copy?) }
            let now = entries.withLock { entries -> Now in
                switch entries[name] {
                case .running(let ticket, var waiters):
                    waiters.append(continuation)
                    entries[name] = .running(ticket: ticket, waiters: waiters)
                    return .wait
                case .done(let copy):
                    entries[name] = nil
                    return .answer(copy)
                case nil:
                    return .answer(nil)
                }
            }
            if case .answer(let copy) = now { continuation.resume(returning: copy) }
        }
    }
}
