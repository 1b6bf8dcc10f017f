/// Exponential backoff with full jitter, capped, honouring `Retry-After`.
public struct Backoff: Sendable, Equatable {
    public var baseMilliseconds: Int64
    public var capMilliseconds: Int64

    public init(baseMilliseconds: Int64 = 1000, capMilliseconds: Int64 = 300_000) {
        self.baseMilliseconds = baseMilliseconds
        self.capMilliseconds = capMilliseconds
    }

    /// The delay before attempt number `attempt` (1 for the first retry):
    /// uniform in `[0, min(cap, base · 2^(attempt-1))]`, and never shorter
    /// than `retryAfter` when the server sent one.
    /// - Parameter random: a source of uniform values in `0...1`, so tests can fix it.
    public func delay(attempt: Int, retryAfterMilliseconds: Int64? = nil, random: () -> Double) -> Int64 {
        let exponent = min(max(attempt - 1, 0), 40)
        let ceiling = min(capMilliseconds, baseMilliseconds.multipliedReportingOverflow(by: Int64(1) << exponent).overflow
            ? capMilliseconds : baseMilliseconds << exponent)
        let jittered = Int64((Double(ceiling) * min(max(random(), 0), 1)).rounded())
        if let retryAfterMilliseconds { return max(jittered, min(retryAfterMilliseconds, capMilliseconds)) }
        return jittered
    }

    /// Parses a `Retry-After` header given in seconds (RFC 9110 §10.2.3);
    /// HTTP dates are not used by the reference server and are ignored.
    public static func parseRetryAfter(_ value: String) -> Int64? {
        let trimmed = value.trimmingSpaces()
        guard !trimmed.isEmpty, trimmed.count <= 9, trimmed.allSatisfy(\.isASCII), let seconds = Int64(trimmed), seconds >= 0 else { return nil }
        return seconds * 1000
    }
}
