/// What a job asks the server to do.
public enum JobKind: String, Sendable, Codable, CaseIterable {
    /// `POST /v1/expenses`.
    case create
    /// `PUT /v1/expenses/{id}/receipt`, after its create.
    case receipt
    /// `PATCH /v1/expenses/{id}`.
    case edit
    /// `DELETE /v1/expenses/{id}`.
    case delete
}

/// Where a job is in its life.
public enum JobState: String, Sendable, Codable, CaseIterable {
    /// Waiting for a drain pass (maybe backing off until its next attempt time).
    case queued
    /// Handed to the HTTP client; back to queued at start-up if the daemon died.
    case sending
    /// Rejected too often; waits for `retry` or `discard`.
    case needsAttention = "needs_attention"
}

/// The state of an expense's receipt as `list` shows it.
public enum ReceiptState: String, Sendable, Codable {
    case none, pending, uploaded
    /// With the daemon, in its folder of kept receipts: the backend stores
    /// no files (ihatemoney). The receipt URL is a `file://` URL.
    case keptLocally = "kept locally"
}
