import ExpenseCore

/// What the daemon knows of the server: its ``ServerHealth`` and a
/// ``CredentialsPause`` per account, changed together by each request's
/// outcome (the methods below, one per outcome). ``ServerRecord`` holds
/// the one copy; `status`, `watch` and systemd's `STATUS=` read it. Pure.
public struct ServerStatus: Sendable, Equatable {
    public private(set) var health = ServerHealth()
    /// The accounts whose token the server refused (or that have none), each
    /// paused alone: the others keep sending.
    public private(set) var pauses: [String: CredentialsPause] = [:]
    /// Each account's last failed request, while none of that account's
    /// has succeeded since: what `status` tells that account. Another
    /// account's refusal or rejection is not theirs to see.
    public private(set) var accountErrors: [String: ServerHealth.Failure] = [:]

    public init() {}

    /// What the summary's `server` says: `needs_credentials` while any
    /// account is paused (``pausedAccounts`` says which), else the state of
    /// the last contact.
    public var state: QueueSummary.ServerState { isPaused ? .needsCredentials : health.state }

    /// What one account's summary says: `needs_credentials` while it is paused.
    public func state(of account: String) -> QueueSummary.ServerState {
        pauses[account] != nil ? .needsCredentials : health.state
    }

    /// Some account is paused until its token changes or `sync` is asked for.
    public var isPaused: Bool { !pauses.isEmpty }

    /// The accounts paused now.
    public var pausedAccounts: Set<String> { Set(pauses.keys) }

    /// Whether the daemon should look at the server at its next chance,
    /// even with nothing to send: it has not been contacted since start or
    /// since a pause ended, or it could not be reached.
    public var wantsContact: Bool { health.state == .unknown || health.state == .unreachable }

    mutating func succeeded(account: String, at now: Int64) {
        health.succeeded(at: now)
        accountErrors[account] = nil
    }

    mutating func failed(account: String, _ errorClass: String, _ message: String, at now: Int64) {
        health.failed(errorClass, message, at: now)
        accountErrors[account] = health.lastError
    }

    /// The last error `account` is told of: its own last failure, or an
    /// outage since (no answer at all is everyone's, and names no one's
    /// expense).
    public func lastError(of account: String) -> ServerHealth.Failure? {
        let outage = health.lastError.flatMap { $0.errorClass == "transport" ? $0 : nil }
        guard let own = accountErrors[account], let outage else { return accountErrors[account] ?? outage }
        return own.milliseconds > outage.milliseconds ? own : outage
    }

    mutating func answered(at now: Int64) { health.answered(at: now) }

    /// No answer at all: a transport failure, which also ends every pause
    /// (the refusals say nothing of the server as it will be).
    /// - Returns: true when this starts an outage (to log it once).
    mutating func unreachable(_ reason: String, at now: Int64) -> Bool {
        let starts = health.state != .unreachable || isPaused
        pauses = [:]
        health.unreachable(reason, at: now)
        return starts
    }

    /// The server refused `account`'s token of `generation` (`code`: 401,
    /// 403), or it has none: that account's sending pauses.
    /// - Returns: true when this starts the pause (to log it once).
    mutating func refused(account: String = AccountName.defaultName, tokenGeneration generation: Int, code: String, at now: Int64,
                          contacted: Bool = true) -> Bool {
        if contacted {
            health.refused(code: code, at: now)
            accountErrors[account] = health.lastError
        }
        var pause = pauses[account] ?? CredentialsPause()
        defer { pauses[account] = pause }
        return pause.pause(refusedGeneration: generation)
    }

    /// Ends `account`'s pause: its token file changed since the refusal, or
    /// `force` (`sync`). The server's view of the token is unknown until
    /// the next contact.
    /// - Returns: whether that account is still paused.
    mutating func resume(account: String = AccountName.defaultName, tokenGeneration generation: Int, force: Bool) -> Bool {
        guard var pause = pauses[account] else { return false }
        if pause.resume(tokenGeneration: generation, force: force) {
            pauses[account] = nil
            health.forgetState()
            return false
        }
        pauses[account] = pause
        return true
    }
}
