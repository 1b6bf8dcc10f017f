import ExpenseCore

/// Whether the server answers, as of the last contact: its reachability,
/// when it last answered, and the last request that failed. Part of the
/// one record of the server (``ServerStatus``); whether our token is
/// refused is the ``CredentialsPause``'s. Pure: the engine passes the time in.
public struct ServerHealth: Sendable, Equatable {
    /// `unknown` (not contacted, or not since sending resumed), `ok` or `unreachable`.
    public private(set) var state: QueueSummary.ServerState = .unknown
    /// When the server last answered at all, ms since the epoch.
    public private(set) var lastContactMilliseconds: Int64?
    /// The last request that failed, while nothing has succeeded since.
    public private(set) var lastError: Failure?

    public struct Failure: Sendable, Equatable {
        /// `transport`, `auth`, `transient`, `rejected`, … (as `show` and `stats` name them).
        public let errorClass: String
        /// What went wrong, without personal data: an HTTP status and the
        /// server's error code, or the transport's reason.
        public let message: String
        public let milliseconds: Int64
    }

    public init() {}

    /// A request with our credentials was applied: the server is there,
    /// and any earlier failure is over.
    mutating func succeeded(at now: Int64) {
        lastContactMilliseconds = now
        lastError = nil
        state = .ok
    }

    /// The server answered but did not apply the request (a rejection, a
    /// 5xx): it is there, and this is the last error.
    mutating func failed(_ errorClass: String, _ message: String, at now: Int64) {
        lastContactMilliseconds = now
        lastError = Failure(errorClass: errorClass, message: message, milliseconds: now)
        state = .ok
    }

    /// The server answered (the batch's outcomes follow one by one): it is there.
    mutating func answered(at now: Int64) {
        lastContactMilliseconds = now
        state = .ok
    }

    /// No answer at all: a transport failure.
    mutating func unreachable(_ reason: String, at now: Int64) {
        lastError = Failure(errorClass: "transport", message: reason, milliseconds: now)
        state = .unreachable
    }

    /// The server answered by refusing the token (`code`: 401, 403).
    mutating func refused(code: String, at now: Int64) {
        lastContactMilliseconds = now
        lastError = Failure(errorClass: "auth", message: "\(code): the server refused the token", milliseconds: now)
        state = .ok
    }

    /// Sending resumes after a pause: what the server makes of the token is
    /// unknown until the next contact.
    mutating func forgetState() {
        state = .unknown
    }
}
