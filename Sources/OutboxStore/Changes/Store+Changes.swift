import ExpenseCore
import Posix
import SQLite

// The changes of state `watch` shows. A write that makes some reads the
// states of the expenses it touches at its start and at its end, inside
// its transaction and only while someone watches (``ChangeFeed``); the
// changes are handed on once it committed, from the store's queue, so in
// the order of the commits.
extension Store {
    /// A write whose changes `watch` shows: `body` gets whether someone
    /// watches, and returns its value with the changes it made (none when
    /// nobody watches).
    /// - Parameter usingHeadroom: a write of the drain (or one that frees
    ///   room): when the file system is full, the drain's headroom is given
    ///   up and the WAL truncated (``makeRoomForDrain()``), and the write
    ///   tried once more. An add never uses it.
    /// - Parameter committed: runs with the value once the write committed,
    ///   on the store's queue, before anything later on it (a read of the
    ///   counts a summary shows): for what must be seen with the commit.
    func write<T: Sendable>(durability: DatabaseQueue.Durability = .durable, usingHeadroom: Bool = false,
                            committed: @escaping @Sendable (T) -> Void = { _ in },
                            watched body: @escaping @Sendable (Connection, _ watched: Bool) throws -> (T, [ExpenseChange])) async throws -> T {
        do {
            return try await writeOnce(durability: durability, committed: committed, watched: body)
        } catch let error as SQLiteError where error.isDiskFull && usingHeadroom {
            guard await makeRoomForDrain() else { throw error }
            return try await writeOnce(durability: durability, committed: committed, watched: body)
        }
    }

    private func writeOnce<T: Sendable>(durability: DatabaseQueue.Durability, committed: @escaping @Sendable (T) -> Void,
                                        watched body: @escaping @Sendable (Connection, _ watched: Bool) throws -> (T, [ExpenseChange])) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            database.write(durability: durability, { [changes] db in try body(db, changes.isWanted) }, completion: { [changes] result in
                if case .success(let (value, made)) = result {
                    committed(value)
                    changes.deliver(made, at: Clock.wallMilliseconds)
                }
                continuation.resume(with: result.map { $0.0 })
            })
        }
    }

    /// Hands on changes from a write's completion (on the store's queue,
    /// after its commit); `make` runs only when someone watches.
    func emit(_ make: () -> [ExpenseChange]) {
        guard changes.isWanted else { return }
        changes.deliver(make(), at: Clock.wallMilliseconds)
    }

    /// The state `watch` shows of an expense, as ``ExpenseView/fold(cached:jobs:transactionID:keepingTombstone:)``
    /// folds it (a deleted one with nothing pending is `deleted`), with a
    /// synced expense the server flagged shown as `conflict`; nil when
    /// there is nothing to show. One read.
    static func watchedState(_ db: Connection, _ transactionID: String) throws -> String? {
        try db.queryFirst("""
            SELECT count(*), coalesce(max(state = 'needs_attention'), 0), coalesce(max(kind = 'delete'), 0),
                   coalesce(max(state = 'sending'), 0), coalesce(max(kind = 'create'), 0),
                   (SELECT deleted FROM expenses WHERE transaction_id = ?1), (SELECT conflict FROM expenses WHERE transaction_id = ?1)
            FROM jobs WHERE transaction_id = ?1
            """, [.text(transactionID)]) { r -> String? in
            let jobs = r.int(0), cached = !r.isNull(5), deleted = cached && r.bool(5)
            typealias State = ExpenseView.State
            if !cached && !r.bool(4) { return nil }
            if r.bool(1) { return State.needsAttention.rawValue }
            if deleted && jobs == 0 { return State.deleted.rawValue }
            if deleted || r.bool(2) { return State.deleting.rawValue }
            if r.bool(3) { return State.sending.rawValue }
            if jobs > 0 { return State.queued.rawValue }
            return r.bool(6) ? "conflict" : State.synced.rawValue
        } ?? nil
    }

    /// The state `watch` shows of a view (``watchedState(_:_:)``).
    static func watchedState(_ view: ExpenseView) -> String {
        view.state == .synced && view.conflict ? "conflict" : view.state.rawValue
    }

    /// Whose expense `transactionID` is (``accountOf(_:)``).
    static func account(_ db: Connection, transactionID: String) throws -> String {
        try db.queryFirst("SELECT \(Store.accountOf(1))", [.text(transactionID)]) { $0.string(0) } ?? AccountName.defaultName
    }

    /// "conflict on currency: the server kept EUR, not USD", for each field held back.
    static func conflictReason(_ conflicts: [String: ConflictValues]) -> String {
        let fields = conflicts.keys.sorted().map { name in
            "\(name): the server kept \(conflicts[name]?.server ?? "none"), not \(conflicts[name]?.client ?? "none")"
        }
        return "conflict on " + fields.joined(separator: "; ")
    }

    /// Why an answer recorded changed its expense, as `watch` says it;
    /// `to` is the expense's state after it. Nil when the state says it
    /// all (a create synced, a delete done, a job put back).
    static func reason(_ job: OutboxJob, _ update: JobUpdate, to: String?, now: Int64) -> String? {
        switch update {
        case .applied(let expense):
            if let expense, expense.conflict, !expense.conflicts.isEmpty, to == "conflict" { return conflictReason(expense.conflicts) }
            switch job.kind {
            case .create: return to == "synced" || to == "conflict" ? nil : "create applied"
            case .delete: return to == "deleted" ? nil : "delete applied"
            case .edit, .receipt: return "\(job.kind.rawValue) applied"
            }
        case .dropReceipt: return "receipt upload dropped: the expense is gone on the server"
        case .requeue: return nil
        case .retry(let next, _, _, let error, _): return "\(error), retry in \(QueueSummary.age(milliseconds: next - now))"
        case .needsAttention(_, _, let error, _): return error
        }
    }
}

/// The states of the expenses a write touches, read at its start, to
/// compare with their states at its end: the changes `watch` shows of
/// it. Reads nothing when nobody watches.
struct StateChanges {
    private let watched: Bool
    private var order: [String] = []
    private var before: [String: (account: String, state: String?)] = [:]

    init(_ db: Connection, watched: Bool, _ transactionIDs: some Sequence<String> = [String]()) throws {
        self.watched = watched
        try note(db, transactionIDs)
    }

    /// Reads the states of more expenses, before the write changes them.
    mutating func note(_ db: Connection, _ transactionIDs: some Sequence<String>) throws {
        guard watched else { return }
        for id in transactionIDs where before[id] == nil {
            order.append(id)
            before[id] = (try Store.account(db, transactionID: id), try Store.watchedState(db, id))
        }
    }

    /// One change for each expense noted whose state is not what it was,
    /// or that has a reason (`reason` gets its id and its state now).
    /// `gone` is the `to` of one with nothing left to show; one unknown
    /// before and deleted (or gone) after shows nothing.
    func changes(_ db: Connection, gone: String = "deleted", reason: (String, String?) -> String? = { _, _ in nil }) throws -> [ExpenseChange] {
        guard watched else { return [] }
        return try order.compactMap { id in
            let (known, from) = before[id]!
            let now = try Store.watchedState(db, id)
            // Unknown before and gone (or deleted) after, or deleted before
            // and after (a refresh bringing back this device's own delete):
            // nothing to show.
            if (from ?? "deleted") == "deleted" && (now ?? "deleted") == "deleted" { return nil }
            let why = reason(id, now)
            let to = now ?? gone
            guard from != to || why != nil else { return nil }
            // New here (a refresh's): whose it is is known only now.
            let account = from == nil ? try Store.account(db, transactionID: id) : known
            return ExpenseChange(account: account, transactionID: id, from: from, to: to, reason: why)
        }
    }
}
