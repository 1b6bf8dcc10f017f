/// The one syntax for a duration on every interface: expensed's flags and
/// configuration keys, expensectl's `--timeout` and
/// `EXPENSECTL_ANSWER_TIMEOUT`. A decimal number (digits, optionally a
/// point and more digits; no sign, no exponent, no `inf` or `nan`) with an
/// optional unit, `ms`, `s`, `m`, `h` or `d`; a number alone counts in the
/// interface's own unit (seconds everywhere today). It is read in integers:
/// no value can overflow, round to something else, or be infinite.
public enum DurationText {
    /// The longest duration any interface takes: 365 days. Each interface
    /// has its own, usually smaller, range on top.
    public static let maximumMilliseconds: Int64 = 365 * 86_400_000

    /// How the syntax is described in error messages.
    public static let syntax = "a number of seconds like 30 or 0.5, or with a unit: 250ms, 5s, 15m, 1h, 2d"

    private static let units: [(suffix: String, milliseconds: Int64)] = [("ms", 1), ("s", 1000), ("m", 60_000), ("h", 3_600_000), ("d", 86_400_000)]

    /// `text` in milliseconds (a fraction of a millisecond is dropped).
    /// - Parameter unitMilliseconds: what a number without a unit counts in.
    /// - Returns: nil unless `text` has the syntax above and is at most
    ///   ``maximumMilliseconds``.
    public static func milliseconds(_ text: String, unitMilliseconds: Int64 = 1000) -> Int64? {
        var number = Substring(text)
        var factor = unitMilliseconds
        // "ms" before "s" and "m": it ends with both.
        if let unit = units.first(where: { text.hasSuffix($0.suffix) }) {
            number = number.dropLast(unit.suffix.count)
            factor = unit.milliseconds
        }
        let parts = number.split(separator: ".", maxSplits: 1, omittingEmptySubsequences: false)
        let whole = parts[0], fraction = parts.count == 2 ? parts[1] : ""
        guard !whole.isEmpty, whole.count <= 12, whole.allSatisfy(isDigit) else { return nil }
        if parts.count == 2 { guard !fraction.isEmpty, fraction.count <= 9, fraction.allSatisfy(isDigit) else { return nil } }
        guard let wholeValue = Int64(whole) else { return nil }
        let (product, overflow) = wholeValue.multipliedReportingOverflow(by: factor)
        guard !overflow else { return nil }
        var total = product
        if let fractionValue = Int64(fraction) {
            // At most 10^9 · 3.6·10^6: within Int64.
            var scale: Int64 = 1
            for _ in 0..<fraction.count { scale *= 10 }
            total += fractionValue * factor / scale
        }
        return total <= maximumMilliseconds ? total : nil
    }

    /// A short form of `milliseconds` for messages: `250ms`, `30s`, `5m`, `2h`, `3d`.
    public static func describe(milliseconds: Int64) -> String {
        for (suffix, unit) in [("d", Int64(86_400_000)), ("h", 3_600_000), ("m", 60_000), ("s", 1000)] where milliseconds >= unit && milliseconds % unit == 0 {
            return "\(milliseconds / unit)\(suffix)"
        }
        return "\(milliseconds)ms"
    }

    private static func isDigit(_ c: Character) -> Bool { c >= "0" && c <= "9" }
}
