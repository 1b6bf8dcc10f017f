/// One argument as the kernel passed it.
public struct Argument: Sendable, Equatable {
    public let bytes: [UInt8]
    /// The argument as text; nil when its bytes are not UTF-8.
    public let text: String?

    public init(_ bytes: some Collection<UInt8>) {
        self.bytes = Array(bytes)
        text = String(validating: self.bytes, as: UTF8.self)
    }

    /// For messages and for matching: the text, with U+FFFD for bytes that are not UTF-8.
    public var shown: String { text ?? String(decoding: bytes, as: UTF8.self) }
}

/// The one command-line loop of `expensed`, `expensectl` and
/// `expense-server`: it walks the arguments, one option (with its value)
/// or other argument at a time, against the ``CommandOption``s the
/// executable knows at that point, and refuses what none of them may take,
/// with the same words in all three.
///
/// An argument that starts with `-` (but `-` alone) is an option; `--`
/// ends the options. A value comes as `--name=VALUE` or as the next
/// argument, which must not start with `--`: that is a forgotten value,
/// not a value (`--name=--x` gives one that starts so). A flag refuses a
/// value; only a path may hold bytes that are not UTF-8. An option given
/// twice is refused, unless the scanner is told that the last one wins
/// (`expensed`, whose unit file's flags a drop-in may override).
public struct ArgumentScanner: Sendable {
    public enum Item: Sendable {
        /// A known option, and its value (nil for a flag).
        case option(CommandOption, Argument?)
        case positional(Argument)
    }

    private let arguments: [Argument]
    private var index = 0
    private var onlyPositional = false
    private var given: Set<String> = []
    private let lastWins: Bool

    /// - Parameter lastWins: an option may be given again, the caller
    ///   keeping the last; otherwise that is an error.
    public init(_ arguments: [Argument], lastWins: Bool = false) {
        self.arguments = arguments
        self.lastWins = lastWins
    }

    public init(_ arguments: [String], lastWins: Bool = false) {
        self.init(arguments.map { Argument($0.utf8) }, lastWins: lastWins)
    }

    /// The next option or other argument; nil after the last.
    /// - Parameters:
    ///   - lookup: the option a spelling (`--json`, `-h`) names here; nil
    ///     when it is unknown here.
    ///   - scope: what an unknown option is unknown to (`list`), if anything.
    ///   - subcommand: carried by the errors, for the pointer to its help.
    public mutating func next(_ lookup: (String) -> CommandOption?, scope: String? = nil,
                              subcommand: String? = nil) throws(UsageError) -> Item? {
        func fail(_ message: String, status: ExitStatus = .usage) -> UsageError {
            UsageError(message, subcommand: subcommand, status: status)
        }
        while index < arguments.count {
            let argument = arguments[index]
            index += 1
            let shown = argument.shown
            if onlyPositional || !shown.hasPrefix("-") || shown == "-" { return .positional(argument) }
            var name = shown
            var inlineValue: Argument?
            if shown.hasPrefix("--"), let equals = argument.bytes.firstIndex(of: UInt8(ascii: "=")) {
                name = Argument(argument.bytes[..<equals]).shown
                inlineValue = Argument(argument.bytes[(equals + 1)...])
            }
            if name == "--" && inlineValue == nil {
                onlyPositional = true
                continue
            }
            let quotedName = LogText.quoted(name, limit: 64)
            guard let option = lookup(name) else {
                throw fail("unknown option \(quotedName)" + (scope.map { " for \(LogText.quoted($0, limit: 64))" } ?? ""))
            }
            guard given.insert(option.name).inserted || lastWins else { throw fail("option \(quotedName) given twice") }
            guard option.kind != .none else {
                if inlineValue != nil { throw fail("option \(quotedName) takes no value") }
                return .option(option, nil)
            }
            let value: Argument
            if let inlineValue {
                value = inlineValue
            } else {
                guard index < arguments.count, !arguments[index].shown.hasPrefix("--") else {
                    throw fail("option \(quotedName) needs a value")
                }
                value = arguments[index]
                index += 1
            }
            if value.text == nil && option.kind != .path {
                throw fail("the value of \(quotedName) is not valid UTF-8", status: option.kind == .field ? .dataError : .usage)
            }
            return .option(option, value)
        }
        return nil
    }
}
