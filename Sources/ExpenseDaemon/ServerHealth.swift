import ExpenseCore

/// What the daemon knows of the server, as of its last contact: the one
/// record of it. The ``StatusPublisher`` keeps it (it is part of every
/// summary); only the ``Drainer`` changes it, through the methods below,
/// each of which is what one request's outcome says; `status` and `watch`
/// read it. Pure: the drainer passes the time in.
struct ServerHealth: Sendable, Equatable {
    private(set) var state: QueueSummary.ServerState
    /// When the server last answered at all, ms since the epoch.
    private(set) var lastContactMilliseconds: Int64?
    /// The last request that failed, while nothing has succeeded since.
    private(set) var lastError: Failure?
    /// The generation of the token the server refused, while sending is
    /// paused for it (`state` is then `needs_credentials`).
    private(set) var refusedTokenGeneration: Int?

    struct Failure: Sendable, Equatable {
        /// `transport`, `auth`, `transient`, `rejected`, … (as `show` and `stats` name them).
        let errorClass: String
        /// What went wrong, without personal data: an HTTP status and the
        /// server's error code, or the transport's reason.
        let message: String
        let milliseconds: Int64
    }

    init(configured: Bool) {
        state = configured ? .unknown : .notConfigured
    }

    /// Sending is paused until the token changes or `sync` is asked for.
    var isPaused: Bool { refusedTokenGeneration != nil }

    /// Whether the daemon should look at the server at its next chance,
    /// even with nothing to send: it has not been contacted since start or
    /// since a pause ended, or it could not be reached.
    var wantsContact: Bool { state == .unknown || state == .unreachable }

    /// A request with our credentials was applied (2xx): the server is
    /// there, it takes our token, and any earlier failure is over.
    mutating func succeeded(at now: Int64) {
        lastContactMilliseconds = now
        lastError = nil
        if !isPaused { state = .ok }
    }

    /// The server answered but did not apply the request (a rejection, a
    /// 5xx): it is there, and this is the last error.
    mutating func failed(_ errorClass: String, _ message: String, at now: Int64) {
        lastContactMilliseconds = now
        lastError = Failure(errorClass: errorClass, message: message, milliseconds: now)
        if !isPaused { state = .ok }
    }

    /// The server answered (the batch's outcomes follow one by one): it is there.
    mutating func answered(at now: Int64) {
        lastContactMilliseconds = now
        if !isPaused { state = .ok }
    }

    /// No answer at all: a transport failure.
    /// - Returns: true when this starts an outage (to log it once).
    mutating func unreachable(_ reason: String, at now: Int64) -> Bool {
        let starts = state != .unreachable
        lastError = Failure(errorClass: "transport", message: reason, milliseconds: now)
        refusedTokenGeneration = nil
        state = .unreachable
        return starts
    }

    /// The server refused the token of `generation` (401, 403): sending pauses.
    /// - Returns: true when this starts the pause (to log it once).
    mutating func refused(tokenGeneration generation: Int, status: Int, at now: Int64) -> Bool {
        let starts = !isPaused
        lastContactMilliseconds = now
        lastError = Failure(errorClass: "auth", message: "\(status): the server refused the token", milliseconds: now)
        refusedTokenGeneration = generation
        state = .needsCredentials
        return starts
    }

    /// Ends a pause: the token file changed since the refusal (a token of
    /// another generation than the refused one), or `force` (`sync`). The
    /// server's view of the token is unknown until the next contact.
    /// - Returns: whether sending is still paused.
    mutating func resume(tokenGeneration generation: Int, force: Bool) -> Bool {
        guard let refused = refusedTokenGeneration, force || refused != generation else { return isPaused }
        refusedTokenGeneration = nil
        state = .unknown
        return false
    }
}
