import ExpenseCore
import Posix

/// `expensectl`: parse the command line, run the subcommand, map failures
/// to an exit status and one `expensectl: …` line on stderr.
public enum ExpenseCtl {
    public static let version = "0.1.0"

    static var topHelp: String {
        var text = """
            OVERVIEW: Add, inspect and manage the expenses expensed keeps.

            USAGE: expensectl [--socket PATH] [--json] <subcommand> [options]

            OPTIONS:

            """
        for option in globalOptions { text += formatRow(option.name + (option.valueName.map { " \($0)" } ?? ""), option.help) }
        text += formatRow("--version", "show the version")
        text += "\nSUBCOMMANDS:\n"
        for subcommand in subcommands { text += formatRow(subcommand.name, subcommand.abstract) }
        text += "\n  See 'expensectl help <subcommand>' or 'expensectl <subcommand> --help' for details.\n"
        return text
    }

    public static func main(arguments: [String]) -> Int32 {
        var arguments = arguments
        if arguments.first == "help" {
            arguments.removeFirst()
            arguments.append("--help")
        }
        let parsed: ParsedCommandLine
        do {
            parsed = try parseCommandLine(arguments, subcommands: subcommands, topHelp: topHelp)
        } catch {
            let hint = error.subcommand.map { "expensectl \($0) --help" } ?? "expensectl --help"
            Output.error("expensectl: \(error.message)\nTry '\(hint)' for more information.")
            return ExitStatus.usage.rawValue
        }
        switch parsed {
        case .help(let text):
            Output.out(text)
            return 0
        case .version:
            Output.out("expensectl \(version)")
            return 0
        case .run(let subcommand, let invocation, let socket, let json):
            let path = socket ?? Environment["EXPENSED_SOCKET"] ?? "/run/expensed/control.sock"
            do {
                return try subcommand.run(invocation, Context(socketPath: path, json: json)).rawValue
            } catch let error as ClientError {
                Output.error("expensectl: \(error.message)")
                return error.status.rawValue
            } catch {
                Output.error("expensectl: \(error)")
                return ExitStatus.software.rawValue
            }
        }
    }
}
