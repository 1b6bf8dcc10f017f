import ExpenseCore
/// One option a subcommand takes: `--name VALUE` or a `--flag`.
struct Option: Sendable {
    let name: String
    /// `nil` for a flag without a value.
    let valueName: String?
    let help: String
    /// Shown without brackets in the usage line (the subcommand checks it).
    var isRequired = false
}

/// A subcommand: what it is called, what it takes, and what it does. One
/// table of these drives both parsing and `--help`.
struct Subcommand: Sendable {
    let name: String
    let abstract: String
    let arguments: [(name: String, help: String)]
    let options: [Option]
    let discussion: String?
    let run: @Sendable (Invocation, Context) throws -> ExitStatus

    init(_ name: String, _ abstract: String, arguments: [(name: String, help: String)] = [], options: [Option] = [],
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
            let spelled = option.name + (option.valueName.map { " \($0)" } ?? "")
            text += option.isRequired ? " \(spelled)" : " [\(spelled)]"
        }
        for argument in arguments { text += " <\(argument.name)>" }
        return text
    }

    var help: String {
        var text = "OVERVIEW: \(abstract)\n\nUSAGE: \(usage)\n"
        if let discussion { text += "\n\(discussion)\n" }
        if !arguments.isEmpty {
            text += "\nARGUMENTS:\n"
            for argument in arguments { text += formatRow("<\(argument.name)>", argument.help) }
        }
        text += "\nOPTIONS:\n"
        for option in options + globalOptions {
            text += formatRow(option.name + (option.valueName.map { " \($0)" } ?? ""), option.help)
        }
        return text
    }
}

/// What the command line said, after parsing against a subcommand's table.
struct Invocation: Sendable {
    var positional: [String] = []
    var values: [String: String] = [:]
    var flags: Set<String> = []

    func value(_ name: String) -> String? { values[name] }
    func has(_ flag: String) -> Bool { flags.contains(flag) }
}

/// Options every subcommand takes.
let globalOptions = [
    Option(name: "--socket", valueName: "PATH", help: "expensed's control socket (default $EXPENSED_SOCKET, else /run/expensed/control.sock)"),
    Option(name: "--json", valueName: nil, help: "print JSON instead of text"),
    Option(name: "-h, --help", valueName: nil, help: "show help"),
]

func formatRow(_ left: String, _ right: String) -> String {
    let width = 24
    if left.count + 2 >= width { return "  \(left)\n" + String(repeating: " ", count: width + 2) + right + "\n" }
    return "  " + left + String(repeating: " ", count: width - left.count) + right + "\n"
}

/// A command line that cannot be run, with what was wrong.
struct CommandLineError: Error {
    let message: String
    let subcommand: String?
}

/// What the whole command line asked for.
enum ParsedCommandLine {
    case run(Subcommand, Invocation, socket: String?, json: Bool)
    case help(String)
    case version
}

/// Parses arguments (without the program name) against `subcommands`.
/// Global options may come anywhere; `--` ends options.
func parseCommandLine(_ arguments: [String], subcommands: [Subcommand], topHelp: String) throws(CommandLineError) -> ParsedCommandLine {
    var socket: String?
    var json = false
    var subcommand: Subcommand?
    var invocation = Invocation()
    var wantsHelp = false
    var onlyPositional = false
    var index = 0

    while index < arguments.count {
        let argument = arguments[index]
        index += 1
        if onlyPositional || !argument.hasPrefix("-") || argument == "-" {
            if subcommand == nil {
                guard let found = subcommands.first(where: { $0.name == argument }) else {
                    throw CommandLineError(message: "unknown subcommand '\(argument.prefix(64))'", subcommand: nil)
                }
                subcommand = found
            } else {
                invocation.positional.append(argument)
            }
            continue
        }
        var name = argument
        var inlineValue: String?
        if let equals = argument.firstIndex(of: "="), argument.hasPrefix("--") {
            name = String(argument[..<equals])
            inlineValue = String(argument[argument.index(after: equals)...])
        }
        func value() throws(CommandLineError) -> String {
            if let inlineValue { return inlineValue }
            guard index < arguments.count else {
                throw CommandLineError(message: "option '\(name)' needs a value", subcommand: subcommand?.name)
            }
            index += 1
            return arguments[index - 1]
        }
        switch name {
        case "--": onlyPositional = true
        case "-h", "--help": wantsHelp = true
        case "--version": if subcommand == nil { return .version }
        case "--json": json = true
        case "--socket": socket = try value()
        default:
            guard let option = subcommand?.options.first(where: { $0.name == name }) else {
                let scope = subcommand.map { " for '\($0.name)'" } ?? ""
                throw CommandLineError(message: "unknown option '\(name.prefix(64))'\(scope)", subcommand: subcommand?.name)
            }
            if option.valueName != nil {
                let v = try value()
                if invocation.values[name] != nil {
                    throw CommandLineError(message: "option '\(name)' given twice", subcommand: subcommand?.name)
                }
                invocation.values[name] = v
            } else {
                if inlineValue != nil { throw CommandLineError(message: "option '\(name)' takes no value", subcommand: subcommand?.name) }
                invocation.flags.insert(name)
            }
        }
    }
    if wantsHelp { return .help(subcommand?.help ?? topHelp) }
    guard let subcommand else { throw CommandLineError(message: "missing subcommand", subcommand: nil) }
    if invocation.positional.count < subcommand.arguments.count {
        let missing = subcommand.arguments[invocation.positional.count].name
        throw CommandLineError(message: "missing <\(missing)>", subcommand: subcommand.name)
    }
    if invocation.positional.count > subcommand.arguments.count {
        throw CommandLineError(message: "unexpected argument '\(invocation.positional[subcommand.arguments.count].prefix(64))'", subcommand: subcommand.name)
    }
    return .run(subcommand, invocation, socket: socket, json: json)
}
