/// p50, p95 and max of enqueue-to-applied latencies, in milliseconds; all
/// nil until something was applied (`stats`).
public struct LatencySummary: Sendable, Equatable {
    public var p50: Int64?
    public var p95: Int64?
    public var max: Int64?

    public init(p50: Int64?, p95: Int64?, max: Int64?) {
        self.p50 = p50
        self.p95 = p95
        self.max = max
    }

    /// Of the latencies themselves; each figure the nearest rank's (the
    /// smallest that at least that share of the samples do not exceed), as
    /// the histogram's are, so that both measure the same samples alike.
    public init(samples: [Int64]) {
        guard !samples.isEmpty else {
            self.init(p50: nil, p95: nil, max: nil)
            return
        }
        let sorted = samples.sorted()
        func at(_ p: Double) -> Int64 { sorted[Swift.max(Int((Double(sorted.count) * p).rounded(.up)), 1) - 1] }
        self.init(p50: at(0.5), p95: at(0.95), max: sorted.last)
    }

    /// The histogram's bucket of a latency: bucket k counts latencies in
    /// [2^(k-1), 2^k) ms, bucket 0 those of 0 ms (or less: a clock set back).
    public static func bucket(milliseconds: Int64) -> Int {
        milliseconds <= 0 ? 0 : 64 - milliseconds.leadingZeroBitCount
    }

    /// Of a histogram whose bucket k counts latencies in [2^(k-1), 2^k) ms:
    /// each figure is the upper bound of its bucket.
    public init(histogram buckets: [Int: Int]) {
        let total = buckets.values.reduce(0, +)
        guard total > 0, let top = buckets.keys.max() else {
            self.init(p50: nil, p95: nil, max: nil)
            return
        }
        let ordered = buckets.sorted { $0.key < $1.key }
        func bound(_ bucket: Int) -> Int64 { bucket == 0 ? 0 : Int64(1) << bucket }
        func at(_ p: Double) -> Int64? {
            let rank = Int((Double(total) * p).rounded(.up))
            var seen = 0
            for (bucket, count) in ordered {
                seen += count
                if seen >= Swift.max(rank, 1) { return bound(bucket) }
            }
            return nil
        }
        self.init(p50: at(0.5), p95: at(0.95), max: bound(top))
    }
}
