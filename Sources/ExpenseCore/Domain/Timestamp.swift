/// RFC 3339 UTC timestamps with milliseconds (`2026-11-30T09:15:02.123Z`),
/// computed without calendars or locales.
public enum Timestamp {
    /// Formats milliseconds since the Unix epoch.
    public static func format(milliseconds: Int64) -> String {
        let (days, msOfDay) = floorDivide(milliseconds, 86_400_000)
        let (y, m, d) = civilFromDays(days)
        let h = msOfDay / 3_600_000, mi = msOfDay / 60_000 % 60, s = msOfDay / 1000 % 60, ms = msOfDay % 1000
        return "\(pad(y, 4))-\(pad(m, 2))-\(pad(d, 2))T\(pad(h, 2)):\(pad(mi, 2)):\(pad(s, 2)).\(pad(ms, 3))Z"
    }

    /// Parses `YYYY-MM-DDTHH:MM:SS[.fff]Z` back into milliseconds; `nil` otherwise.
    public static func parse(_ text: String) -> Int64? {
        let b = Array(text.utf8)
        guard b.count >= 20, b.last == UInt8(ascii: "Z"), b[4] == 0x2D, b[7] == 0x2D, b[10] == UInt8(ascii: "T"),
              b[13] == 0x3A, b[16] == 0x3A else { return nil }
        func num(_ r: Range<Int>) -> Int64? {
            var v: Int64 = 0
            for i in r { guard b[i] >= 0x30 && b[i] <= 0x39 else { return nil }; v = v * 10 + Int64(b[i] - 0x30) }
            return v
        }
        guard let y = num(0..<4), let mo = num(5..<7), let d = num(8..<10), let h = num(11..<13),
              let mi = num(14..<16), let s = num(17..<19) else { return nil }
        var ms: Int64 = 0
        if b[19] == UInt8(ascii: ".") {
            let digits = b.count - 21
            guard digits >= 1, let f = num(20..<(b.count - 1)) else { return nil }
            ms = digits >= 3 ? f / pow10(digits - 3) : f * pow10(3 - digits)
        } else if b.count != 20 { return nil }
        let days = daysFromCivil(y, mo, d)
        return ((days * 24 + h) * 60 + mi) * 60_000 + s * 1000 + ms
    }

    private static func pow10(_ n: Int) -> Int64 { (0..<n).reduce(1) { acc, _ in acc * 10 } }

    private static func floorDivide(_ a: Int64, _ b: Int64) -> (Int64, Int64) {
        let q = a >= 0 ? a / b : (a - b + 1) / b
        return (q, a - q * b)
    }

    // Howard Hinnant's days_from_civil / civil_from_days algorithms.
    static func civilFromDays(_ z0: Int64) -> (Int64, Int64, Int64) {
        let z = z0 + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let doe = z - era * 146_097
        let yoe = (doe - doe / 1460 + doe / 36524 - doe / 146_096) / 365
        let y = yoe + era * 400
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100)
        let mp = (5 * doy + 2) / 153
        let d = doy - (153 * mp + 2) / 5 + 1
        let m = mp < 10 ? mp + 3 : mp - 9
        return (m <= 2 ? y + 1 : y, m, d)
    }

    static func daysFromCivil(_ y0: Int64, _ m: Int64, _ d: Int64) -> Int64 {
        let y = m <= 2 ? y0 - 1 : y0
        let era = (y >= 0 ? y : y - 399) / 400
        let yoe = y - era * 400
        let doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1
        let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy
        return era * 146_097 + doe - 719_468
    }

    private static func pad(_ v: Int64, _ width: Int) -> String {
        let s = String(v)
        return String(repeating: "0", count: max(0, width - s.count)) + s
    }
}
