/// One expense as a person should see it: the server's last word with the
/// work still pending folded on top, so what was entered offline shows.
public struct ExpenseView: Sendable, Equatable {
    /// `synced`, or the state of the pending work: `queued`, `sending`,
    /// `needs_attention`, `deleting`; `deleted` once the server deleted it
    /// (only `show` folds that in: ``fold(cached:jobs:transactionID:keepingTombstone:)``).
    public enum State: String, Sendable {
        case synced, queued, sending, needsAttention = "needs_attention", deleting, deleted
    }

    public var transactionID: String
    public var clientID: String
    public var state: State
    public var fields: ExpenseFields
    /// Fields whose shown value is not yet on the server.
    public var pendingFields: [String]
    public var receipt: ReceiptState
    public var receiptURL: String?
    public var version: Int?
    public var conflict: Bool
    public var conflicts: [String: ConflictValues]
    public var createdAt: String?
    public var jobs: [PendingJob]
    /// Where it came from, when this device made it (``ExpenseSource``).
    public var source: ExpenseSource?
    /// The fields a reading of its receipt filled, with the reading's
    /// confidence (0...1), while they still have the value read.
    public var read: [String: Double] = [:]

    /// Folds `jobs` (any order) over `cached`. Returns `nil` when there is
    /// nothing to show: no cache row and no create, or a deleted expense
    /// with nothing pending, unless `keepingTombstone` (what `show` asks
    /// for): then it is a view in state `deleted`, with its last values.
    public static func fold(cached: CanonicalExpense?, jobs unsorted: [PendingJob], transactionID: String,
                            keepingTombstone: Bool = false) -> ExpenseView? {
        let jobs = unsorted.sorted { $0.seq < $1.seq }
        let create = jobs.first { $0.kind == .create }
        guard cached != nil || create != nil else { return nil }
        let isTombstone = cached?.deleted == true && jobs.isEmpty
        if isTombstone && !keepingTombstone { return nil }

        var fields = cached?.fields ?? ExpenseFields()
        var pending: Set<String> = []
        var isDeleting = cached?.deleted ?? false
        var hasReceiptJob = false
        for job in jobs {
            switch job.kind {
            case .create, .edit:
                fields = fields.merging(job.fields)
                pending.formUnion(job.fields.changedNames)
            case .receipt:
                hasReceiptJob = true
            case .delete:
                isDeleting = true
            }
        }

        let state: State
        if jobs.contains(where: { $0.state == .needsAttention }) { state = .needsAttention }
        else if isTombstone { state = .deleted }
        else if isDeleting { state = .deleting }
        else if jobs.contains(where: { $0.state == .sending }) { state = .sending }
        else if !jobs.isEmpty { state = .queued }
        else { state = .synced }

        let receipt: ReceiptState = hasReceiptJob ? .pending
            : cached?.receiptURL.map { $0.hasPrefix("file://") ? .keptLocally : .uploaded } ?? .none
        return ExpenseView(
            transactionID: transactionID,
            clientID: cached?.clientID ?? create?.uuid ?? "",
            state: state,
            fields: fields.values,
            pendingFields: ExpenseFields.names.filter(pending.contains),
            receipt: receipt,
            receiptURL: cached?.receiptURL,
            version: cached?.version,
            conflict: cached?.conflict ?? false,
            conflicts: cached?.conflicts ?? [:],
            createdAt: cached?.createdAt,
            jobs: jobs,
            source: nil)
    }
}
