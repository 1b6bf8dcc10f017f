/// How the client treats what came back from a request
/// (contract.md, "How a client classifies an outcome").
public enum Outcome: Sendable, Equatable {
    /// `2xx`: store the returned expense, remove the job.
    case applied
    /// No HTTP response at all: end the pass, count no attempt.
    case transport
    /// `408 425 429 500 502 503 504`: count a transient attempt, back off.
    case transient
    /// `409 request_in_progress`: retry later, count nothing.
    case inProgress
    /// `401 403`: pause everything until the credentials change.
    case auth
    /// Any other `4xx` (and other statuses): count an attempt toward needs-attention.
    case rejected

    /// Classifies a response by its status and, for 409, its error code.
    public static func classify(status: Int, errorCode: String?) -> Outcome {
        switch status {
        case 200..<300: return .applied
        case 408, 425, 429, 500, 502, 503, 504: return .transient
        case 409 where errorCode == "request_in_progress": return .inProgress
        case 401, 403: return .auth
        default: return .rejected
        }
    }

    /// The name stored with a job's last error and shown by `show` and `status`.
    public var className: String {
        switch self {
        case .applied: "applied"
        case .transport: "transport"
        case .transient: "transient"
        case .inProgress: "in_progress"
        case .auth: "auth"
        case .rejected: "rejected"
        }
    }
}

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
