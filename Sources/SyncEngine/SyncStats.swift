import ExpenseCore

/// What the sync engine has done since start: applied jobs' latencies
/// (enqueue to applied) and failures by class. Totals across restarts live
/// in the store (``Store/totals()``).
public struct SyncStats: Sendable {
    /// The newest latencies, at most ``capacity`` of them.
    private(set) var latencies: [Int64] = []
    private var next = 0
    public private(set) var applied = 0
    public private(set) var failures: [String: Int] = [:]
    static let capacity = 100_000

    public init() {}

    mutating func recordApplied(latencyMilliseconds: Int64) {
        applied += 1
        if latencies.count < Self.capacity {
            latencies.append(latencyMilliseconds)
        } else {
            latencies[next] = latencyMilliseconds
            next = (next + 1) % Self.capacity
        }
    }

    mutating func recordFailure(_ errorClass: String) {
        failures[errorClass, default: 0] += 1
    }

    /// Sets the count of one class (another record's, such as the server's transport failures).
    mutating func setFailures(_ errorClass: String, _ count: Int?) {
        failures[errorClass] = count
    }

    /// p50, p95 and max of the kept latencies.
    public var latency: LatencySummary { LatencySummary(samples: latencies) }
}
