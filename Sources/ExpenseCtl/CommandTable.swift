import ControlProtocol
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
            // `-o, --output FILE` is `-o|--output FILE` in a usage line.
            let synopsis = option.spellings.joined(separator: "|") + (option.valueName.map { " \($0)" } ?? "")
            text += option.isRequired ? " \(synopsis)" : " [\(synopsis)]"
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

/// Options every subcommand takes.
let globalOptions = OptionTable([
    CommandOption("--socket", valueName: "PATH", help: "expensed's control socket (default $EXPENSED_SOCKET, else /run/expensed/control.sock)"),
    CommandOption("--json", valueName: nil, help: "print JSON instead of text"),
    CommandOption("--account", valueName: "NAME", help: "act on NAME's account ('' for the default one): root and admin_group only"),
    CommandOption("--all-accounts", valueName: nil, help: "act on every account: root and admin_group only"),
    CommandOption("-h, --help", valueName: nil, help: "show help"),
])

/// Only before a subcommand.
let versionOption = CommandOption("--version", valueName: nil, help: "show the version")

/// What the whole command line asked for.
enum ParsedCommandLine {
    case run(Subcommand, Invocation, socket: String?, json: Bool, accounts: ControlRequest.AccountSelection)
    case help(String)
    case version
}

/// Parses arguments (without the program name) against `subcommands`,
/// with the shared ``ArgumentScanner``. Global options may come anywhere.
func parseCommandLine(_ arguments: [Argument], subcommands: [Subcommand], topHelp: String) throws(UsageError) -> ParsedCommandLine {
    var socket: String?
    var json = false
    var account: String?
    var allAccounts = false
    var subcommand: Subcommand?
    var invocation = Invocation()
    var wantsHelp = false
    var scanner = ArgumentScanner(arguments)

    func fail(_ message: String) -> UsageError {
        UsageError(message, subcommand: subcommand?.name)
    }
    func lookup(_ name: String) -> CommandOption? {
        globalOptions.option(name) ?? (subcommand == nil && versionOption.matches(name) ? versionOption : nil)
            ?? subcommand?.options.first(where: { $0.matches(name) })
    }

    while let item = try scanner.next(lookup, scope: subcommand?.name, subcommand: subcommand?.name) {
        switch item {
        case .positional(let argument):
            guard let text = argument.text else { throw fail("argument \(LogText.quoted(argument.shown, limit: 64)) is not valid UTF-8") }
            if subcommand == nil {
                guard let found = subcommands.first(where: { $0.name == text }) else {
                    throw fail("unknown subcommand \(LogText.quoted(text, limit: 64))")
                }
                subcommand = found
            } else {
                invocation.positional.append(text)
            }
        case .option(let option, nil):
            switch option.name {
            case "--version": return .version
            case "-h, --help": wantsHelp = true
            case "--json": json = true
            case "--all-accounts": allAccounts = true
            default: invocation.flags.insert(option.name)
            }
        case .option(let option, let value?):
            if option.name == "--socket" {
                socket = value.shown
            } else if option.name == "--account" {
                account = value.shown
            } else {
                invocation.values[option.name] = value.shown
                if option.kind == .path { invocation.paths[option.name] = value.bytes }
            }
        }
    }
    if wantsHelp { return .help(subcommand?.help ?? topHelp) }
    guard let subcommand else { throw fail("missing subcommand") }
    if invocation.positional.count < subcommand.arguments.count {
        let missing = subcommand.arguments[invocation.positional.count].name
        throw fail("missing <\(missing)>")
    }
    if invocation.positional.count > subcommand.arguments.count {
        throw fail("unexpected argument \(LogText.quoted(invocation.positional[subcommand.arguments.count], limit: 64))")
    }
    if account != nil && allAccounts { throw fail("--account and --all-accounts exclude each other") }
    return .run(subcommand, invocation, socket: socket, json: json, accounts: account.map { .account($0) } ?? (allAccounts ? .all : .caller))
}
