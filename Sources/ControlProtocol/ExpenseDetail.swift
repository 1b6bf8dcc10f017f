import ExpenseCore

/// One expense as `show` (and `retry`, `edit`, `resolve`) answers it: the
/// list's shape plus when it was created and every pending job.
public struct ExpenseDetail: ControlResult, Equatable {
    public var summary: ExpenseSummary
    /// The server's creation time, once synced.
    public var createdAt: String?
    public var jobs: [Job]

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

    public init(summary: ExpenseSummary, createdAt: String?, jobs: [Job]) {
        self.summary = summary
        self.createdAt = createdAt
        self.jobs = jobs
    }

    public init(_ view: ExpenseView) {
        self.init(summary: ExpenseSummary(view), createdAt: view.createdAt,
                  jobs: view.jobs.map { Job($0, transactionID: view.transactionID) })
    }

    public var json: JSONValue {
        var object = summary.members
        object["created_at"] = .string(createdAt)
        object["jobs"] = .array(jobs.map(\.json))
        return .object(object)
    }

    public init(json: JSONValue) throws(ControlDecodingError) {
        let m = try Members(json, path: "result")
        var jobs: [Job] = []
        for (item, path) in try m.array("jobs") { jobs.append(try Job(try Members(item, path: path))) }
        self.init(summary: try ExpenseSummary(m), createdAt: try m.nullableString("created_at"), jobs: jobs)
    }
}
