import ExpenseCore
import Testing

/// The command-line loop the three executables share: what it makes of
/// each argument, and the words of what it refuses.
@Suite struct ArgumentScannerTests {
    static let table = OptionTable([
        CommandOption("--listen", valueName: "HOST:PORT", help: ""),
        CommandOption("--merchant", valueName: "TEXT", help: "", kind: .field),
        CommandOption("--file", valueName: "PATH", help: "", kind: .path),
        CommandOption("-h, --help", valueName: nil, help: ""),
    ])

    /// The items of `arguments`, written `--name=value`, `--flag` or `<positional>`.
    static func items(_ arguments: [Argument]) throws(UsageError) -> [String] {
        var scanner = ArgumentScanner(arguments)
        var items: [String] = []
        while let item = try scanner.next(table.option, scope: "serve", subcommand: "serve") {
            switch item {
            case .positional(let argument): items.append("<\(argument.shown)>")
            case .option(let option, nil): items.append(option.name)
            case .option(let option, let value?): items.append("\(option.name)=\(value.shown)")
            }
        }
        return items
    }

    static func items(_ arguments: [String]) throws(UsageError) -> [String] {
        try items(arguments.map { Argument($0.utf8) })
    }

    @Test(arguments: [
        (["--listen", "a:1", "x"], ["--listen=a:1", "<x>"]),
        (["--listen=--x"], ["--listen=--x"]),
        (["--listen="], ["--listen="]),
        (["-h", "-"], ["-h, --help", "<->"]),
        (["--help", "--", "--listen", "-h"], ["-h, --help", "<--listen>", "<-h>"]),
        (["--merchant", "-5"], ["--merchant=-5"]),
        ([], []),
    ] as [([String], [String])])
    func arguments_becomeOptionsWithTheirValues_orPositionals(arguments: [String], expected: [String]) throws {
        #expect(try Self.items(arguments) == expected)
    }

    @Test(arguments: [
        (["--bogus"], "unknown option '--bogus' for 'serve'"),
        (["-x"], "unknown option '-x' for 'serve'"),
        (["--b\u{1B}[2J=1"], "unknown option '--b\\u{1B}[2J' for 'serve'"),
        (["--listen"], "option '--listen' needs a value"),
        (["--listen", "--help"], "option '--listen' needs a value"),
        (["--listen", "a:1", "--listen=b:2"], "option '--listen' given twice"),
        (["-h", "--help"], "option '--help' given twice"),
        (["--help=1"], "option '--help' takes no value"),
    ] as [([String], String)])
    func commandLinesThatCannotBeRun_areRefusedInOneWording(arguments: [String], message: String) {
        #expect(throws: UsageError(message, subcommand: "serve")) { try Self.items(arguments) }
    }

    @Test func optionGivenAgain_isTheCallersToKeep_whenTheLastWins() throws {
        var scanner = ArgumentScanner(["--listen", "a:1", "--listen=b:2"], lastWins: true)
        var values: [String] = []
        while case .option(_, let value?) = try scanner.next(Self.table.option) { values.append(value.shown) }
        #expect(values == ["a:1", "b:2"])
    }

    @Test func bytesThatAreNotUTF8_areRefusedButInAPath() throws {
        let bad: [UInt8] = [0x66, 0xFF]
        var path = Array("--file=".utf8)
        path += bad
        #expect(try Self.items([Argument(path)]) == ["--file=f\u{FFFD}"])
        #expect(throws: UsageError("the value of '--listen' is not valid UTF-8", subcommand: "serve", status: .usage)) {
            try Self.items([Argument("--listen".utf8), Argument(bad)])
        }
        #expect(throws: UsageError("the value of '--merchant' is not valid UTF-8", subcommand: "serve", status: .dataError)) {
            try Self.items([Argument("--merchant".utf8), Argument(bad)])
        }
        // A positional's bytes are the caller's to judge.
        #expect(try Self.items([Argument(bad)]) == ["<f\u{FFFD}>"])
    }
}
