import ExpenseCore

/// What the sync engine has done since start: applied jobs' latencies
/// (enqueue to applied) and failures by class. Totals across restarts live
/// in the store (``Store/totals()``).
struct SyncStats: Sendable {
    /// The newest latencies, at most ``capacity`` of them.
    private(set) var latencies: [Int64] = []
    private var next = 0
    private(set) var applied = 0
    private(set) var failures: [String: Int] = [:]
    static let capacity = 100_000

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

    /// p50, p95 and max of the kept latencies.
    var latencySummary: JSONValue {
        guard !latencies.isEmpty else { return ["p50": nil, "p95": nil, "max": nil] }
        let sorted = latencies.sorted()
        func at(_ p: Double) -> JSONValue { .integer(sorted[min(sorted.count - 1, Int(Double(sorted.count) * p))]) }
        return ["p50": at(0.5), "p95": at(0.95), "max": .integer(sorted.last!)]
    }

    /// p50, p95 and max from a histogram whose bucket k counts [2^(k-1), 2^k) ms:
    /// each figure is the upper bound of its bucket.
    static func histogramSummary(_ buckets: [Int: Int]) -> JSONValue {
        let total = buckets.values.reduce(0, +)
        guard total > 0 else { return ["p50": nil, "p95": nil, "max": nil] }
        let ordered = buckets.sorted { $0.key < $1.key }
        func at(_ p: Double) -> JSONValue {
            let rank = Int((Double(total) * p).rounded(.up))
            var seen = 0
            for (bucket, count) in ordered {
                seen += count
                if seen >= max(rank, 1) { return .integer(bucket == 0 ? 0 : Int64(1) << bucket) }
            }
            return nil
        }
        let top = ordered.last!.key
        return ["p50": at(0.5), "p95": at(0.95), "max": .integer(top == 0 ? 0 : Int64(1) << top)]
    }
}
