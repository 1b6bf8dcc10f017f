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
    /// Times it was handed to the network (a claim counts one; a claim
    /// given back unsent takes it back).
    public var sends: Int

    public init(seq: Int64, uuid: String, kind: JobKind, state: JobState, fields: ExpenseFields = ExpenseFields(),
                attempts: Int = 0, transientAttempts: Int = 0, lastError: String? = nil, lastErrorClass: String? = nil,
                nextAttemptMilliseconds: Int64 = 0, createdMilliseconds: Int64 = 0, sends: Int = 0) {
        self.sends = sends
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
