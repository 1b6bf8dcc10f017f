import ExpenseCore

/// One expense as `show` (and `retry`, `edit`, `resolve`) answers it: the
/// list's shape plus when it was created and every pending job.
public struct ExpenseDetail: ControlResult, Equatable {
    public var summary: ExpenseSummary
    /// The server's creation time, once synced.
    public var createdAt: String?
    public var jobs: [Job]
    /// The bytes as received of a receipt sent as a legible copy (`show`
    /// only; nil for a receipt that went as it is, or none).
    public var original: Original?
    /// Its receipt's reading, while it is still to do (`show` only).
    public var reading: Reading?

    /// A reading still to do (docs/sync.md, "Readings").
    public struct Reading: Sendable, Equatable {
        public var queuedMilliseconds: Int64
        /// Until when the create of a receipt-only expense waits for it
        /// (`reading_wait` after it was queued); nil when nothing waits.
        public var createWaitsUntilMilliseconds: Int64?

        public init(queuedMilliseconds: Int64, createWaitsUntilMilliseconds: Int64?) {
            self.queuedMilliseconds = queuedMilliseconds
            self.createWaitsUntilMilliseconds = createWaitsUntilMilliseconds
        }

        var json: JSONValue {
            .object(["queued_at": timestampJSON(queuedMilliseconds), "create_waits_until": timestampJSON(createWaitsUntilMilliseconds)])
        }

        init(_ m: Members) throws(ControlDecodingError) {
            self.init(queuedMilliseconds: try m.timestamp("queued_at"), createWaitsUntilMilliseconds: try m.nullableTimestamp("create_waits_until"))
        }
    }

    /// The original kept of a receipt sent as a copy (docs/receipts.md).
    public struct Original: Sendable, Equatable {
        public var kind: ReceiptKind
        public var size: Int64
        /// Hex SHA-256 of the bytes as received.
        public var sha256: String?
        public var receivedMilliseconds: Int64
        /// When it was removed as `receipt_original_retention` says; nil while kept.
        public var removedMilliseconds: Int64?

        public init(kind: ReceiptKind, size: Int64, sha256: String?, receivedMilliseconds: Int64, removedMilliseconds: Int64?) {
            self.kind = kind
            self.size = size
            self.sha256 = sha256
            self.receivedMilliseconds = receivedMilliseconds
            self.removedMilliseconds = removedMilliseconds
        }

        var json: JSONValue {
            .object(["kind": .string(kind.rawValue), "size": .integer(size), "sha256": .string(sha256),
                     "received_at": timestampJSON(receivedMilliseconds), "removed_at": timestampJSON(removedMilliseconds)])
        }

        init(_ m: Members) throws(ControlDecodingError) {
            self.init(kind: try m.choice("kind", ReceiptKind.self), size: try m.integer("size"), sha256: try m.nullableString("sha256"),
                      receivedMilliseconds: try m.timestamp("received_at"), removedMilliseconds: try m.nullableTimestamp("removed_at"))
        }
    }

    /// A pending job, as `show` lists it.
    public struct Job: Sendable, Equatable {
        public var uuid: String
        public var seq: Int64
        public var kind: JobKind
        public var state: JobState
        public var attempts: Int
        public var transientAttempts: Int
        public var lastError: String?
        public var lastErrorClass: String?
        /// When it is tried again (ms since the epoch); nil when at once.
        public var nextAttemptMilliseconds: Int64?
        public var createdMilliseconds: Int64
        /// For a job that needs attention: what can be done about it.
        public var hint: String?

        public init(uuid: String, seq: Int64, kind: JobKind, state: JobState, attempts: Int, transientAttempts: Int, lastError: String?,
                    lastErrorClass: String?, nextAttemptMilliseconds: Int64?, createdMilliseconds: Int64, hint: String?) {
            self.uuid = uuid
            self.seq = seq
            self.kind = kind
            self.state = state
            self.attempts = attempts
            self.transientAttempts = transientAttempts
            self.lastError = lastError
            self.lastErrorClass = lastErrorClass
            self.nextAttemptMilliseconds = nextAttemptMilliseconds
            self.createdMilliseconds = createdMilliseconds
            self.hint = hint
        }

        /// `job` of the expense `transactionID`, with the hint its class gives when it needs attention.
        public init(_ job: PendingJob, transactionID: String) {
            self.init(uuid: job.uuid, seq: job.seq, kind: job.kind, state: job.state, attempts: job.attempts,
                      transientAttempts: job.transientAttempts, lastError: job.lastError, lastErrorClass: job.lastErrorClass,
                      nextAttemptMilliseconds: job.nextAttemptMilliseconds > 0 ? job.nextAttemptMilliseconds : nil,
                      createdMilliseconds: job.createdMilliseconds,
                      hint: job.state == .needsAttention ? AttentionHint.text(errorClass: job.lastErrorClass, transactionID: transactionID) : nil)
        }

        var json: JSONValue {
            var detail: [String: JSONValue] = [
                "uuid": .string(uuid),
                "seq": .integer(seq),
                "kind": .string(kind.rawValue),
                "state": .string(state.rawValue),
                "attempts": .integer(attempts),
                "transient_attempts": .integer(transientAttempts),
                "last_error": .string(lastError),
                "last_error_class": .string(lastErrorClass),
                "next_attempt_at": timestampJSON(nextAttemptMilliseconds),
                "created_at": timestampJSON(createdMilliseconds),
            ]
            if let hint { detail["hint"] = .string(hint) }
            return .object(detail)
        }

        init(_ m: Members) throws(ControlDecodingError) {
            self.init(uuid: try m.string("uuid"), seq: try m.integer("seq"), kind: try m.choice("kind", JobKind.self),
                      state: try m.choice("state", JobState.self), attempts: try m.int("attempts"),
                      transientAttempts: try m.int("transient_attempts"), lastError: try m.nullableString("last_error"),
                      lastErrorClass: try m.nullableString("last_error_class"),
                      nextAttemptMilliseconds: try m.nullableTimestamp("next_attempt_at"),
                      createdMilliseconds: try m.timestamp("created_at"), hint: try m.optionalString("hint"))
        }
    }

    public init(summary: ExpenseSummary, createdAt: String?, jobs: [Job], original: Original? = nil) {
        self.summary = summary
        self.createdAt = createdAt
        self.jobs = jobs
        self.original = original
    }

    public init(_ view: ExpenseView) {
        self.init(summary: ExpenseSummary(view), createdAt: view.createdAt,
                  jobs: view.jobs.map { Job($0, transactionID: view.transactionID) })
    }

    public var json: JSONValue {
        var object = summary.members
        object["created_at"] = .string(createdAt)
        object["jobs"] = .array(jobs.map(\.json))
        if let original { object["original"] = original.json }
        if let reading { object["reading"] = reading.json }
        return .object(object)
    }

    public init(json: JSONValue) throws(ControlDecodingError) {
        let m = try Members(json, path: "result")
        var jobs: [Job] = []
        for (item, path) in try m.array("jobs") { jobs.append(try Job(try Members(item, path: path))) }
        let original: Original?
        if let value = m.value("original"), value != .null { original = try Original(try m.object("original")) } else { original = nil }
        self.init(summary: try ExpenseSummary(m), createdAt: try m.nullableString("created_at"), jobs: jobs, original: original)
        if let value = m.value("reading"), value != .null { reading = try Reading(try m.object("reading")) }
    }
}
