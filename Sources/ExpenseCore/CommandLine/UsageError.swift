/// A command line that cannot be run, with what was wrong: the one error
/// of `expensed`'s, `expensectl`'s and `expense-server`'s parsers. Each
/// prints its message with a pointer to its `--help` and exits with
/// ``status`` (64, `EX_USAGE`, unless the bytes of a field's value were
/// bad data: 65).
public struct UsageError: Error, Sendable, Equatable, CustomStringConvertible {
    public let message: String
    /// The subcommand being parsed, for the pointer to its own help.
    public var subcommand: String?
    public var status: ExitStatus

    public init(_ message: String, subcommand: String? = nil, status: ExitStatus = .usage) {
        self.message = message
        self.subcommand = subcommand
        self.status = status
    }

    public var description: String { message }
}
