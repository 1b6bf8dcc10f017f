import ExpenseCore

/// `stats`' answer: since the daemon started, and in total across restarts.
public struct StatsReport: ControlResult, Equatable {
    public var sinceStart: Part
    /// The latencies come from a power-of-two histogram: each is the upper bound of its bucket.
    public var total: Part

    public struct Part: Sendable, Equatable {
        public var applied: Int
        public var latency: LatencySummary
        /// Failures by class (`transport`, `transient`, `rejected`, …).
        public var failures: [String: Int]
        /// Adds and spool drops refused for room, by reason
        /// (``OutboxRefusal/Reason``): the outbox's, the same in every account's.
        public var refusals: [String: Int]

        public init(applied: Int, latency: LatencySummary, failures: [String: Int], refusals: [String: Int] = [:]) {
            self.applied = applied
            self.latency = latency
            self.failures = failures
            self.refusals = refusals
        }

        var json: JSONValue {
            [
                "applied": .integer(applied),
                "latency_ms": [
                    "p50": latency.p50.map { .integer($0) } ?? .null,
                    "p95": latency.p95.map { .integer($0) } ?? .null,
                    "max": latency.max.map { .integer($0) } ?? .null,
                ],
                "failures": .object(failures.mapValues { .integer($0) }),
                "refusals": .object(refusals.mapValues { .integer($0) }),
            ]
        }

        init(_ m: Members) throws(ControlDecodingError) {
            let latency = try m.object("latency_ms")
            let failureMembers = try m.object("failures")
            var failures: [String: Int] = [:]
            for key in failureMembers.object.keys { failures[key] = try failureMembers.int(key) }
            let refusalMembers = try m.object("refusals")
            var refusals: [String: Int] = [:]
            for key in refusalMembers.object.keys { refusals[key] = try refusalMembers.int(key) }
            self.init(applied: try m.int("applied"),
                      latency: LatencySummary(p50: try latency.nullableInteger("p50"), p95: try latency.nullableInteger("p95"),
                                              max: try latency.nullableInteger("max")),
                      failures: failures, refusals: refusals)
        }
    }

    public init(sinceStart: Part, total: Part) {
        self.sinceStart = sinceStart
        self.total = total
    }

    public var json: JSONValue { ["since_start": sinceStart.json, "total": total.json] }

    public init(json: JSONValue) throws(ControlDecodingError) {
        let m = try Members(json, path: "result")
        self.init(sinceStart: try Part(try m.object("since_start")), total: try Part(try m.object("total")))
    }
}
