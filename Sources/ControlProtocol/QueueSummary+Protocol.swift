import ExpenseCore

/// The summary `status` starts with and `watch` streams
/// (docs/control-protocol.md, "The summary").
extension QueueSummary: ControlResult {
    public var json: JSONValue { .object(members) }

    var members: [String: JSONValue] {
        [
            "queued": .integer(queued),
            "sending": .integer(sending),
            "needs_attention": .integer(needsAttention),
            "oldest_job_at": timestampJSON(oldestJobMilliseconds),
            "server": .string(server.rawValue),
            "spool_rejected": .integer(spoolRejected),
            "spool_waiting": .integer(spoolWaiting),
            "held": .integer(held),
            "incomplete": .integer(incomplete),
            "incomplete_jobs": .integer(incompleteJobs),
            "behind_attention": .integer(behindAttention),
            "reading": .integer(reading),
        ]
    }

    public init(json: JSONValue) throws(ControlDecodingError) {
        try self.init(try Members(json, path: "result"))
    }

    init(_ m: Members) throws(ControlDecodingError) {
        self.init()
        queued = try m.int("queued")
        sending = try m.int("sending")
        needsAttention = try m.int("needs_attention")
        oldestJobMilliseconds = try m.nullableTimestamp("oldest_job_at")
        server = try m.choice("server", ServerState.self)
        spoolRejected = try m.int("spool_rejected")
        spoolWaiting = try m.int("spool_waiting")
        held = try m.int("held")
        incomplete = try m.int("incomplete")
        incompleteJobs = try m.int("incomplete_jobs")
        behindAttention = try m.int("behind_attention")
        reading = try m.int("reading")
    }
}
