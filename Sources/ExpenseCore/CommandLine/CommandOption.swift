/// What an option's value is, which decides what bytes it may hold.
public enum OptionValueKind: Sendable {
    /// A flag: it takes no value, not even `--flag=true`.
    case none
    /// Text for the command line itself (a number, a choice, a UUID):
    /// UTF-8, or the command line is wrong (exit 64).
    case text
    /// An expense field: UTF-8, or the data is bad (exit 65). The daemon
    /// refuses anything else too; repairing it would store U+FFFD.
    case field
    /// A file's path: any bytes, as the kernel takes them.
    case path
}

/// One option of a command line: `--name VALUE` or a `--flag`. The three
/// executables list theirs in tables of these, which drive both their
/// parsing (what is known, what takes a value) and their `--help`
/// (``OptionTable``).
public struct CommandOption: Sendable {
    /// As `--help` shows it: `--listen` or `-h, --help`.
    public let name: String
    /// `nil` for a flag without a value.
    public let valueName: String?
    /// One line, or several separated by newlines (indented in `--help`).
    public let help: String
    /// Shown without brackets in a usage line (the command checks it).
    public var isRequired = false
    public let kind: OptionValueKind

    public init(_ name: String, valueName: String?, help: String, isRequired: Bool = false, kind: OptionValueKind? = nil) {
        self.name = name
        self.valueName = valueName
        self.help = help
        self.isRequired = isRequired
        self.kind = kind ?? (valueName == nil ? .none : .text)
    }

    /// The spellings the parser matches: `-h, --help` is two.
    public var spellings: [String] { name.split(separator: ",").map { String($0.drop(while: { $0 == " " })) } }

    /// The left column of its `--help` row: `--listen HOST:PORT`.
    public var synopsis: String { name + (valueName.map { " \($0)" } ?? "") }

    /// Whether `spelling` (`--json`, `-h`) names this option.
    public func matches(_ spelling: String) -> Bool { spellings.contains(spelling) }
}
