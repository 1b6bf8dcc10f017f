import ExpenseCore
import Testing

/// The one option table and help layout the three executables share.
@Suite struct OptionTableTests {
    let table = OptionTable([
        CommandOption("--listen", valueName: "HOST:PORT", help: "where\nand more"),
        CommandOption("-h, --help", valueName: nil, help: "show help"),
        CommandOption("--fault-drop-response", valueName: "P", help: "long"),
    ])

    @Test func lookup_matchesEverySpelling_andNothingElse() {
        #expect(table.option("-h")?.name == "-h, --help")
        #expect(table.option("--help")?.kind == OptionValueKind.none)
        #expect(table.option("--listen")?.kind == .text)
        #expect(table.option("--listen=1") == nil)
        #expect(table.option("--lis") == nil)
        #expect(table.spellings == ["--listen", "-h", "--help", "--fault-drop-response"])
    }

    @Test(arguments: [
        // Column 26, three spaces at least: a left column of 22 goes on its own line.
        (HelpLayout.standard, "  --listen HOST:PORT      where\n                          and more\n  -h, --help              show help\n  --fault-drop-response P\n                          long\n"),
        // Column 26, one space at least: 23 characters still fit (expense-server's).
        (HelpLayout(column: 26, minimumGap: 1), "  --listen HOST:PORT      where\n                          and more\n  -h, --help              show help\n  --fault-drop-response P long\n"),
        // Two spaces past the widest.
        (HelpLayout(column: nil, minimumGap: 2), "  --listen HOST:PORT       where\n                           and more\n  -h, --help               show help\n  --fault-drop-response P  long\n"),
    ] as [(HelpLayout, String)])
    func rows_areLaidOutInTheirColumns(layout: HelpLayout, expected: String) {
        #expect(table.rendered(layout) == expected)
    }

    @Test func usageError_carriesItsStatusAndSubcommand() {
        let error = UsageError("unknown option '--x' for 'list'", subcommand: "list")
        #expect(error.status == .usage && error.subcommand == "list")
        #expect("\(error)" == "unknown option '--x' for 'list'")
        #expect(UsageError("bad bytes", status: .dataError).status.rawValue == 65)
    }
}
