import ExpenseCore
import Posix

/// `expensectl`: parse the command line, run the subcommand, map failures
/// to an exit status and one `expensectl: …` line on stderr.
public enum ExpenseCtl {
    public static let version = ReleaseVersion.current

    static var topHelp: String {
        var text = """
            OVERVIEW: Add, inspect and manage the expenses expensed keeps.

            USAGE: expensectl [--socket PATH] [--json] <subcommand> [options]

            OPTIONS:

            """
        text += OptionTable(globalOptions.options + [versionOption]).rendered(.standard)
        text += "\nSUBCOMMANDS:\n"
        text += HelpLayout.standard.rows(subcommands.map { ($0.name, $0.abstract) })
        text += "\n  See 'expensectl help <subcommand>' or 'expensectl <subcommand> --help' for details.\n"
        return text
    }

    /// Runs `expensectl` with `arguments` (after the program name), as the
    /// kernel passed them: bytes that need not be UTF-8.
    public static func main(arguments: [[UInt8]]) -> Int32 {
        var arguments = arguments.map(Argument.init)
        if arguments.first?.text == "help" {
            arguments.removeFirst()
            arguments.append(Argument("--help".utf8))
        }
        let parsed: ParsedCommandLine
        do {
            parsed = try parseCommandLine(arguments, subcommands: subcommands, topHelp: topHelp)
        } catch {
            if error.status == .usage {
                let hint = error.subcommand.map { "expensectl \($0) --help" } ?? "expensectl --help"
                Output.error("expensectl: \(error.message)\nTry '\(hint)' for more information.")
            } else {
                Output.error("expensectl: \(error.message)")
            }
            return error.status.rawValue
        }
        switch parsed {
        case .help(let text):
            Output.out(text)
            return 0
        case .version:
            Output.out("expensectl \(version)")
            return 0
        case .run(let subcommand, let invocation, let socket, let json, let accounts):
            do {
                let context = Context(socketPath: try socketPath(option: socket), json: json, accounts: accounts)
                return try subcommand.run(invocation, context).rawValue
            } catch let error as ClientError {
                Output.error("expensectl: \(error.message)")
                return error.status.rawValue
            } catch {
                Output.error("expensectl: \(error)")
                return ExitStatus.software.rawValue
            }
        }
    }

    /// Where the daemon listens: `--socket`, else `$EXPENSED_SOCKET`, else
    /// the default. An empty one is refused, saying where it came from,
    /// rather than tried as a path.
    static func socketPath(option: String?) throws -> String {
        if let option {
            guard !option.isEmpty else { throw ClientError(status: .usage, message: "--socket needs a path, not an empty value") }
            return option
        }
        if let variable = Environment["EXPENSED_SOCKET"] {
            guard !variable.isEmpty else {
                throw ClientError(status: .usage, message: "EXPENSED_SOCKET is set but empty; unset it, or set it to the path of expensed's control socket")
            }
            return variable
        }
        return "/run/expensed/control.sock"
    }
}
