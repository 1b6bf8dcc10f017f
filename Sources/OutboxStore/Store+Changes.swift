import ExpenseCore
import Posix
import SQLite

// The changes of state `watch` shows, built after each commit and only
// while someone watches them (``ChangeFeed``).
extension Store {
    /// Hands the changes a commit made to whoever watches them; `make`
    /// runs only when someone does.
    func emit(_ make: () -> [ExpenseChange]) {
        changes.emit(at: Clock.wallMilliseconds, make)
    }

    /// The state `watch` shows for a view: a synced expense the server
    /// flagged shows as `conflict`.
    static func watchedState(_ view: ExpenseView) -> String {
        view.state == .synced && view.conflict ? "conflict" : view.state.rawValue
    }

    /// The state an expense's pending jobs give it, as ``ExpenseView``
    /// folds it; nil when none is left. One indexed read.
    static func pendingState(_ db: Connection, transactionID: String) throws -> String? {
        try db.queryFirst("""
            SELECT count(*), max(state = 'needs_attention'), max(kind = 'delete'), max(state = 'sending')
            FROM jobs WHERE transaction_id = ?
            """, [.text(transactionID)]) { r -> String? in
            if r.int(0) == 0 { return nil }
            if r.bool(1) { return ExpenseView.State.needsAttention.rawValue }
            if r.bool(2) { return ExpenseView.State.deleting.rawValue }
            return r.bool(3) ? ExpenseView.State.sending.rawValue : ExpenseView.State.queued.rawValue
        } ?? nil
    }

    /// Whose expense `transactionID` is (``accountOf(_:)``).
    static func account(_ db: Connection, transactionID: String) throws -> String {
        try db.queryFirst("SELECT \(Store.accountOf(1))", [.text(transactionID)]) { $0.string(0) } ?? AccountName.defaultName
    }

    /// The change an answer recorded makes to its expense, as `watch` shows
    /// it. `pending` is the state the expense's jobs left give it (another
    /// job of it still to send), nil when none is left.
    static func change(_ job: OutboxJob, _ update: JobUpdate, pending: String?, now: Int64) -> ExpenseChange {
        var (to, reason): (String, String?) = switch update {
        case .applied(let expense):
            if job.kind == .delete { ("deleted", nil) }
            else if let expense, expense.conflict, !expense.conflicts.isEmpty { ("conflict", conflictReason(expense.conflicts)) }
            else { ("synced", job.kind == .create ? nil : "\(job.kind.rawValue) applied") }
        case .dropReceipt: ("synced", "receipt upload dropped: the expense is gone on the server")
        case .requeue: ("queued", nil)
        case .retry(let next, _, _, let error, _): ("queued", "\(error), retry in \(QueueSummary.age(milliseconds: next - now))")
        case .needsAttention(_, _, let error, _): ("needs_attention", error)
        }
        if let pending, to == "synced" || to == "conflict" {
            // Applied, with more of it still to send (the receipt after its create).
            reason = [reason ?? "\(job.kind.rawValue) applied", to == "conflict" ? "a conflict" : nil].compactMap { $0 }.joined(separator: ", ")
            to = pending
        }
        return ExpenseChange(account: job.account, transactionID: job.transactionID, from: "sending", to: to, reason: reason)
    }

    /// "conflict on currency: the server kept EUR, not USD", for each field held back.
    static func conflictReason(_ conflicts: [String: ConflictValues]) -> String {
        let fields = conflicts.keys.sorted().map { name in
            "\(name): the server kept \(conflicts[name]?.server ?? "none"), not \(conflicts[name]?.client ?? "none")"
        }
        return "conflict on " + fields.joined(separator: "; ")
    }

    /// The changes a refresh page makes, for expenses whose cached row was
    /// `before` (nil: not cached) and whose pending jobs now give
    /// `pending`: new ones from elsewhere, changes made elsewhere, deletions.
    static func refreshChange(_ expense: CanonicalExpense, before: (version: Int, deleted: Bool, conflict: Bool)?,
                              pending: String?, account: String) -> ExpenseChange? {
        if let before, before.version >= expense.version { return nil }
        let from: String? = before.map { $0.deleted ? "deleted" : $0.conflict ? "conflict" : "synced" }
        let to: String
        let reason: String
        if expense.deleted {
            guard before?.deleted != true else { return nil }
            to = pending ?? "deleted"
            reason = pending == nil ? "deleted on the server" : "deleted on the server; the edit waiting here was not applied"
        } else {
            to = pending ?? (expense.conflict ? "conflict" : "synced")
            reason = before == nil ? "from the server" : "changed on the server (version \(expense.version))"
        }
        return ExpenseChange(account: account, transactionID: expense.transactionID, from: from, to: to, reason: reason)
    }
}
