/// A list of options as `--help` shows them, and as a parser looks them
/// up: `expensed`, `expensectl` and `expense-server` each keep theirs in
/// one of these, so an option is written once, for both.
public struct OptionTable: Sendable {
    public var options: [CommandOption]

    public init(_ options: [CommandOption]) {
        self.options = options
    }

    /// The option `spelling` names, if any.
    public func option(_ spelling: String) -> CommandOption? {
        options.first { $0.matches(spelling) }
    }

    /// Every spelling in the table.
    public var spellings: Set<String> { Set(options.flatMap(\.spellings)) }

    /// The table's rows for `--help`, in ``HelpLayout``'s columns.
    public func rendered(_ layout: HelpLayout) -> String {
        layout.rows(options.map { ($0.synopsis, $0.help) })
    }
}

/// How the rows of a `--help` are laid out: two spaces, the left column,
/// then the help from a fixed column (argument-parser's layout), or from
/// just past the widest left column.
public struct HelpLayout: Sendable {
    /// Where help text starts, counting the two-space indent; nil: two
    /// spaces past the widest left column of the rows at hand.
    public var column: Int?
    /// The fewest spaces between a left column and its help on one line;
    /// a longer left column puts its help on the next line.
    public var minimumGap: Int

    public init(column: Int?, minimumGap: Int) {
        self.column = column
        self.minimumGap = minimumGap
    }

    /// `expensectl`'s and argument-parser's: help at column 26.
    public static let standard = HelpLayout(column: 26, minimumGap: 3)

    public func row(_ left: String, _ help: String) -> String {
        rows([(left, help)])
    }

    public func rows(_ rows: [(String, String)]) -> String {
        let start = column ?? (2 + (rows.map(\.0.count).max() ?? 0) + minimumGap)
        let indent = String(repeating: " ", count: start)
        var text = ""
        for (left, help) in rows {
            let lines = help.split(separator: "\n", omittingEmptySubsequences: false)
            if 2 + left.count + minimumGap > start {
                text += "  \(left)\n" + indent + (lines.first ?? "") + "\n"
            } else {
                text += "  " + left + String(repeating: " ", count: start - 2 - left.count) + (lines.first ?? "") + "\n"
            }
            for line in lines.dropFirst() { text += indent + line + "\n" }
        }
        return text
    }
}
