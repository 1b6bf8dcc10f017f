import ExpenseCore

/// Why the daemon could not start, with the exit status it ends with
/// (sysexits, as expensed(8) lists them). Each subsystem's start-up throws
/// it; the daemon logs its message once and exits.
public struct StartupFailure: Error, Sendable {
    public let code: ExitStatus
    public let message: String

    public init(code: ExitStatus, message: String) {
        self.code = code
        self.message = message
    }
}
