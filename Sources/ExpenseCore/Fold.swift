/// A job waiting in the outbox, as reads see it.
public struct PendingJob: Sendable, Equatable {
    public var seq: Int64
    public var uuid: String
    public var kind: JobKind
    public var state: JobState
    /// The fields a create carries, or the fields an edit sets.
    public var fields: ExpenseFields
    public var attempts: Int
    public var transientAttempts: Int
    public var lastError: String?
    public var lastErrorClass: String?
    public var nextAttemptMilliseconds: Int64
    public var createdMilliseconds: Int64

    public init(seq: Int64, uuid: String, kind: JobKind, state: JobState, fields: ExpenseFields = ExpenseFields(),
                attempts: Int = 0, transientAttempts: Int = 0, lastError: String? = nil, lastErrorClass: String? = nil,
                nextAttemptMilliseconds: Int64 = 0, createdMilliseconds: Int64 = 0) {
        self.seq = seq
        self.uuid = uuid
        self.kind = kind
        self.state = state
        self.fields = fields
        self.attempts = attempts
        self.transientAttempts = transientAttempts
        self.lastError = lastError
        self.lastErrorClass = lastErrorClass
        self.nextAttemptMilliseconds = nextAttemptMilliseconds
        self.createdMilliseconds = createdMilliseconds
    }
}

/// One expense as a person should see it: the server's last word with the
/// work still pending folded on top, so what was entered offline shows.
public struct ExpenseView: Sendable, Equatable {
    /// `synced`, or the state of the pending work: `queued`, `sending`,
    /// `needs_attention`, `deleting`.
    public enum State: String, Sendable {
        case synced, queued, sending, needsAttention = "needs_attention", deleting
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

    /// Folds `jobs` (any order) over `cached`. Returns `nil` when there is
    /// nothing to show: no cache row and no create, or a deleted expense
    /// with nothing pending.
    public static func fold(cached: CanonicalExpense?, jobs unsorted: [PendingJob], transactionID: String) -> ExpenseView? {
        let jobs = unsorted.sorted { $0.seq < $1.seq }
        let create = jobs.first { $0.kind == .create }
        guard cached != nil || create != nil else { return nil }
        if let cached, cached.deleted, jobs.isEmpty { return nil }

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
        else if isDeleting { state = .deleting }
        else if jobs.contains(where: { $0.state == .sending }) { state = .sending }
        else if !jobs.isEmpty { state = .queued }
        else { state = .synced }

        let receipt: ReceiptState = hasReceiptJob ? .pending : (cached?.receiptURL != nil ? .uploaded : .none)
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
            jobs: jobs)
    }

    /// The `list --json` shape (docs/control-protocol.md).
    public var json: JSONValue {
        var object: [String: JSONValue] = [
            "transaction_id": .string(transactionID),
            "client_id": .string(clientID),
            "state": .string(state.rawValue),
            "pending_fields": .array(pendingFields.map(JSONValue.string)),
            "receipt": .string(receipt.rawValue),
            "receipt_url": .string(receiptURL),
            "version": version.map { .integer($0) } ?? .null,
            "conflict": .bool(conflict),
            "conflicts": .object(conflicts.mapValues { ["server": .string($0.server), "client": .string($0.client)] }),
        ]
        for name in ExpenseFields.names { object[name] = .string(fields[name]) }
        return .object(object)
    }

    /// The `show --json` shape: the list shape plus every pending job.
    public func detailJSON() -> JSONValue {
        guard case .object(var object) = json else { return json }
        object["created_at"] = .string(createdAt)
        object["jobs"] = .array(jobs.map { job in
            var detail: [String: JSONValue] = [
                "uuid": .string(job.uuid),
                "seq": .integer(job.seq),
                "kind": .string(job.kind.rawValue),
                "state": .string(job.state.rawValue),
                "attempts": .integer(job.attempts),
                "transient_attempts": .integer(job.transientAttempts),
                "last_error": .string(job.lastError),
                "last_error_class": .string(job.lastErrorClass),
                "next_attempt_at": job.nextAttemptMilliseconds > 0 ? .string(Timestamp.format(milliseconds: job.nextAttemptMilliseconds)) : .null,
                "created_at": .string(Timestamp.format(milliseconds: job.createdMilliseconds)),
            ]
            if job.state == .needsAttention {
                detail["hint"] = .string(AttentionHint.text(errorClass: job.lastErrorClass, transactionID: transactionID))
            }
            return .object(detail)
        })
        return .object(object)
    }
}
