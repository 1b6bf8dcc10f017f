import Foundation

/// How large the slowest tests run. By default (`scripts/test`, CI) they
/// run a quick size that still proves what they claim (a kill in the
/// middle of a drain, lost answers and 503s on every kind of request);
/// `EXPENSED_TEST_SCALE=large` runs each at the size it was first written
/// for, for a longer look before a release (docs/testing.md). A suite's own
/// variable (`EXPENSE_TEST_DRAIN_COUNT`, `EXPENSED_TORTURE_KILLS`, …)
/// still wins over both.
public enum TestScale {
    /// Whether `EXPENSED_TEST_SCALE=large`; any value but `quick` (or none)
    /// and `large` stops the run with the reason, rather than run a size
    /// nobody asked for.
    public static let isLarge: Bool = {
        switch ProcessInfo.processInfo.environment["EXPENSED_TEST_SCALE"] {
        case nil, "", "quick": return false
        case "large": return true
        case let other?: fatalError("EXPENSED_TEST_SCALE must be quick or large, not '\(other)'")
        }
    }()

    /// `quick` or `large` as the scale says, unless `variable` is set to a
    /// whole number, which is then the count.
    public static func count(quick: Int, large: Int, variable: String? = nil) -> Int {
        if let variable, let text = ProcessInfo.processInfo.environment[variable] {
            guard let given = Int(text), given > 0 else { fatalError("\(variable) must be a whole number above 0, not '\(text)'") }
            return given
        }
        return isLarge ? large : quick
    }
}
