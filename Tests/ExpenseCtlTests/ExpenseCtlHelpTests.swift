import ExpenseTestSupport
import Foundation
import Testing

/// `expensectl`'s help, through the built binary: every subcommand's
/// `--help` is the documented text (the files in `Help/`, compared byte
/// for byte, as argument-parser's example tests do), the three ways to ask
/// for it agree, and what is not a subcommand or an option is a usage error.
@Suite struct ExpenseCtlHelpTests {
    /// Every subcommand; a new one fails ``subcommandList_isEveryOneTestedHere`` until it is added here and to `Help/`.
    static let subcommands = ["add", "list", "show", "retry", "discard", "status", "watch", "sync", "stats", "edit", "receipt", "delete", "resolve", "read"]

    static func ctl(_ arguments: [String]) throws -> CommandResult {
        try runCommand(BuiltProducts.path("expensectl"), arguments, environment: ["EXPENSED_SOCKET": "/nonexistent/expensed.sock"])
    }

    static func expectedHelp(_ name: String) throws -> String {
        let folder = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Help")
        return try String(contentsOf: folder.appendingPathComponent("\(name).txt"), encoding: .utf8)
    }

    @Test func subcommandList_isEveryOneTestedHere() throws {
        let help = try Self.ctl(["--help"]).stdout
        guard let start = help.range(of: "SUBCOMMANDS:\n") else { throw TestFailure("no SUBCOMMANDS in --help") }
        let listed = help[start.upperBound...].split(separator: "\n").compactMap { line -> String? in
            guard line.hasPrefix("  "), !line.hasPrefix("   "), let name = line.split(separator: " ").first, name != "See" else { return nil }
            return String(name)
        }
        #expect(listed == Self.subcommands)
    }

    @Test func topLevelHelp_isTheDocumentedText_howeverAskedFor() throws {
        let expected = try Self.expectedHelp("expensectl")
        for arguments in [["--help"], ["-h"], ["help"]] {
            let result = try Self.ctl(arguments)
            #expect(result.status == 0, "\(arguments)")
            #expect(result.stdout == expected, "\(arguments)")
            #expect(result.stderr.isEmpty, "\(arguments): \(result.stderr)")
        }
    }

    @Test(arguments: subcommands)
    func subcommandHelp_isTheDocumentedText_howeverAskedFor(_ name: String) throws {
        let expected = try Self.expectedHelp(name)
        #expect(expected.hasPrefix("OVERVIEW: ") && expected.contains("\nUSAGE: expensectl \(name)"))
        for arguments in [[name, "--help"], [name, "-h"], ["help", name], ["--json", name, "--help"]] {
            let result = try Self.ctl(arguments)
            #expect(result.status == 0, "\(arguments)")
            #expect(result.stdout == expected, "\(arguments)")
            #expect(result.stderr.isEmpty, "\(arguments): \(result.stderr)")
        }
    }

    @Test(arguments: subcommands)
    func unknownOption_isAUsageError_pointingAtTheSubcommandsHelp(_ name: String) throws {
        let result = try Self.ctl([name, "--no-such-option"])
        #expect(result.status == 64)
        #expect(result.stdout.isEmpty)
        #expect(result.stderr == "expensectl: unknown option '--no-such-option' for '\(name)'\nTry 'expensectl \(name) --help' for more information.\n")
    }

    @Test(arguments: [
        ([], "expensectl: missing subcommand\nTry 'expensectl --help' for more information.\n"),
        (["bogus"], "expensectl: unknown subcommand 'bogus'\nTry 'expensectl --help' for more information.\n"),
        (["help", "bogus"], "expensectl: unknown subcommand 'bogus'\nTry 'expensectl --help' for more information.\n"),
    ] as [([String], String)])
    func missingOrUnknownSubcommand_isAUsageError(_ arguments: [String], _ message: String) throws {
        let result = try Self.ctl(arguments)
        #expect(result.status == 64)
        #expect(result.stderr == message)
    }

    @Test func version_printsTheVersion() throws {
        let result = try Self.ctl(["--version"])
        #expect(result.status == 0)
        #expect(result.stdout.hasPrefix("expensectl "))
    }

    /// Without a daemon every subcommand that talks to it exits 69
    /// (unavailable) and names the socket, JSON asked for or not.
    @Test(arguments: subcommands)
    func noDaemon_isUnavailable(_ name: String) throws {
        let arguments: [String] = switch name {
        case "add": ["add", "--merchant", "M", "--amount", "1.00", "--currency", "EUR", "--date", "2026-11-29"]
        case "show", "retry", "discard", "delete", "read": [name, "cp-0206e11a39722b8b0b0d34"]
        case "edit": ["edit", "cp-0206e11a39722b8b0b0d34", "--merchant", "M"]
        case "resolve": ["resolve", "cp-0206e11a39722b8b0b0d34", "--take", "server"]
        // To a file, since --json needs one (and standard output may be a terminal).
        case "receipt": ["receipt", "cp-0206e11a39722b8b0b0d34", "-o", "\(NSTemporaryDirectory())/expensectl-no-daemon-\(UUID().uuidString).jpg"]
        default: [name]
        }
        for json in [false, true] {
            let result = try Self.ctl(json ? ["--json"] + arguments : arguments)
            #expect(result.status == 69, "\(arguments): \(result.stderr)")
            #expect(result.stdout.isEmpty)
            #expect(result.stderr.hasPrefix("expensectl: ") && result.stderr.contains("/nonexistent/expensed.sock"), "\(result.stderr)")
        }
    }
}
