import ExpenseCore

/// A subcommand: what it is called, what it takes, and what it does. One
/// table of these drives both parsing and `--help`.
struct Subcommand: Sendable {
    let name: String
    let abstract: String
    let arguments: [(name: String, help: String)]
    let options: [CommandOption]
    let discussion: String?
    let run: @Sendable (Invocation, Context) throws -> ExitStatus

    init(_ name: String, _ abstract: String, arguments: [(name: String, help: String)] = [], options: [CommandOption] = [],
         discussion: String? = nil, run: @escaping @Sendable (Invocation, Context) throws -> ExitStatus) {
        self.name = name
        self.abstract = abstract
        self.arguments = arguments
        self.options = options
        self.discussion = discussion
        self.run = run
    }

    var usage: String {
        var text = "expensectl \(name)"
        for option in options {
            text += option.isRequired ? " \(option.synopsis)" : " [\(option.synopsis)]"
        }
        for argument in arguments { text += " <\(argument.name)>" }
        return text
    }

    var help: String {
        var text = "OVERVIEW: \(abstract)\n\nUSAGE: \(usage)\n"
        if let discussion { text += "\n\(discussion)\n" }
        if !arguments.isEmpty {
            text += "\nARGUMENTS:\n"
            text += HelpLayout.standard.rows(arguments.map { ("<\($0.name)>", $0.help) })
        }
        text += "\nOPTIONS:\n"
        text += OptionTable(options + globalOptions.options).rendered(.standard)
        return text
    }
}

/// What the command line said, after parsing against a subcommand's table.
struct Invocation: Sendable {
    var positional: [String] = []
    var values: [String: String] = [:]
    /// The bytes of path values (``OptionValueKind/path``), which need not be UTF-8;
    /// `values` holds them for messages, with U+FFFD for such bytes.
    var paths: [String: [UInt8]] = [:]
    var flags: Set<String> = []

    func value(_ name: String) -> String? { values[name] }
    func path(_ name: String) -> [UInt8]? { paths[name] }
    func has(_ flag: String) -> Bool { flags.contains(flag) }
}

/// One argument as the kernel passed it.
struct Argument: Sendable {
    let bytes: [UInt8]
    /// The argument as text; nil when its bytes are not UTF-8.
    let text: String?

    init(_ bytes: some Collection<UInt8>) {
        self.bytes = Array(bytes)
        text = String(validating: self.bytes, as: UTF8.self)
    }

    /// For messages and for matching: the text, with U+FFFD for bytes that are not UTF-8.
    var shown: String { text ?? String(decoding: bytes, as: UTF8.self) }
}

/// Options every subcommand takes.
let globalOptions = OptionTable([
    CommandOption("--socket", valueName: "PATH", help: "expensed's control socket (default $EXPENSED_SOCKET, else /run/expensed/control.sock)"),
    CommandOption("--json", valueName: nil, help: "print JSON instead of text"),
    CommandOption("-h, --help", valueName: nil, help: "show help"),
])

/// Only before a subcommand.
let versionOption = CommandOption("--version", valueName: nil, help: "show the version")

/// What the whole command line asked for.
enum ParsedCommandLine {
    case run(Subcommand, Invocation, socket: String?, json: Bool)
    case help(String)
    case version
}

/// Parses arguments (without the program name) against `subcommands`.
/// Global options may come anywhere; `--` ends options. Every flag, global
/// or not, refuses a value (`--json=1`); every option refuses to be given
/// twice; only a path may hold bytes that are not UTF-8.
func parseCommandLine(_ arguments: [Argument], subcommands: [Subcommand], topHelp: String) throws(UsageError) -> ParsedCommandLine {
    var socket: String?
    var json = false
    var subcommand: Subcommand?
    var invocation = Invocation()
    var wantsHelp = false
    var onlyPositional = false
    var index = 0

    func fail(_ message: String, status: ExitStatus = .usage) -> UsageError {
        UsageError(message, subcommand: subcommand?.name, status: status)
    }

    while index < arguments.count {
        let argument = arguments[index]
        index += 1
        let shown = argument.shown
        if onlyPositional || !shown.hasPrefix("-") || shown == "-" {
            guard let text = argument.text else { throw fail("argument '\(shown.prefix(64))' is not valid UTF-8") }
            if subcommand == nil {
                guard let found = subcommands.first(where: { $0.name == text }) else {
                    throw fail("unknown subcommand '\(text.prefix(64))'")
                }
                subcommand = found
            } else {
                invocation.positional.append(text)
            }
            continue
        }
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
        guard let option = globalOptions.option(name) ?? (subcommand == nil && versionOption.matches(name) ? versionOption : nil)
                ?? subcommand?.options.first(where: { $0.matches(name) }) else {
            let scope = subcommand.map { " for '\($0.name)'" } ?? ""
            throw fail("unknown option '\(name.prefix(64))'\(scope)")
        }
        guard option.kind != .none else {
            if inlineValue != nil { throw fail("option '\(name)' takes no value") }
            switch option.name {
            case "--version": return .version
            case "-h, --help": wantsHelp = true
            case "--json": json = true
            default: invocation.flags.insert(option.name)
            }
            continue
        }
        let value: Argument
        if let inlineValue {
            value = inlineValue
        } else {
            guard index < arguments.count else { throw fail("option '\(name)' needs a value") }
            value = arguments[index]
            index += 1
        }
        if value.text == nil && option.kind != .path {
            throw fail("the value of '\(name)' is not valid UTF-8", status: option.kind == .field ? .dataError : .usage)
        }
        if option.name == "--socket" {
            if socket != nil { throw fail("option '\(name)' given twice") }
            socket = value.shown
            continue
        }
        if invocation.values[option.name] != nil { throw fail("option '\(name)' given twice") }
        invocation.values[option.name] = value.shown
        if option.kind == .path { invocation.paths[option.name] = value.bytes }
    }
    if wantsHelp { return .help(subcommand?.help ?? topHelp) }
    guard let subcommand else { throw fail("missing subcommand") }
    if invocation.positional.count < subcommand.arguments.count {
        let missing = subcommand.arguments[invocation.positional.count].name
        throw fail("missing <\(missing)>")
    }
    if invocation.positional.count > subcommand.arguments.count {
        throw fail("unexpected argument '\(invocation.positional[subcommand.arguments.count].prefix(64))'")
    }
    return .run(subcommand, invocation, socket: socket, json: json)
}
