import ExpenseCore

/// What the daemon knows of the server: its ``ServerHealth`` and the
/// ``CredentialsPause``, changed together by each request's outcome (the
/// methods below, one per outcome). ``ServerRecord`` holds the one copy;
/// `status`, `watch` and systemd's `STATUS=` read it. Pure.
public struct ServerStatus: Sendable, Equatable {
    public private(set) var health = ServerHealth()
    public private(set) var pause = CredentialsPause()

    public init() {}

    /// What the summary's `server` says: `needs_credentials` while paused,
    /// else the state of the last contact.
    public var state: QueueSummary.ServerState { pause.isPaused ? .needsCredentials : health.state }

    /// Sending is paused until the token changes or `sync` is asked for.
    public var isPaused: Bool { pause.isPaused }

    /// Whether the daemon should look at the server at its next chance,
    /// even with nothing to send: it has not been contacted since start or
    /// since a pause ended, or it could not be reached.
    public var wantsContact: Bool { state == .unknown || state == .unreachable }

    mutating func succeeded(at now: Int64) { health.succeeded(at: now) }

    mutating func failed(_ errorClass: String, _ message: String, at now: Int64) { health.failed(errorClass, message, at: now) }

    mutating func answered(at now: Int64) { health.answered(at: now) }

    /// No answer at all: a transport failure, which also ends a pause.
    /// - Returns: true when this starts an outage (to log it once).
    mutating func unreachable(_ reason: String, at now: Int64) -> Bool {
        let starts = state != .unreachable
        pause.end()
        health.unreachable(reason, at: now)
        return starts
    }

    /// The server refused the token of `generation` (`code`: 401, 403): sending pauses.
    /// - Returns: true when this starts the pause (to log it once).
    mutating func refused(tokenGeneration generation: Int, code: String, at now: Int64) -> Bool {
        health.refused(code: code, at: now)
        return pause.pause(refusedGeneration: generation)
    }

    /// Ends a pause: the token file changed since the refusal, or `force`
    /// (`sync`). The server's view of the token is unknown until the next
    /// contact.
    /// - Returns: whether sending is still paused.
    mutating func resume(tokenGeneration generation: Int, force: Bool) -> Bool {
        if pause.resume(tokenGeneration: generation, force: force) { health.forgetState() }
        return isPaused
    }
}
