/// Which number comes first in a date written with slashes or dashes,
/// `03/04/2026`: the day (most of the world) or the month (the United
/// States and a few others). Only a setting, the locale or the receipt
/// itself decides it; the parser never guesses.
public enum DateOrder: String, Sendable, Equatable, CaseIterable {
    case dayFirst = "day-first"
    case monthFirst = "month-first"

    /// The order of a C library date format (`nl_langinfo(D_FMT)` of the
    /// locale, `%d/%m/%Y` or `%m/%d/%y`), or nil when it writes the year
    /// first or has no day and month (then every reading of a date like
    /// `03/04/2026` is as likely).
    public init?(dateFormat: String) {
        let scalars = Array(dateFormat.unicodeScalars)
        var day: Int?, month: Int?, year: Int?
        for index in scalars.indices.dropLast() where scalars[index] == "%" {
            var next = index + 1
            // Flags and widths glibc allows between % and the conversion (%-d, %Ey).
            while next < scalars.count, "-_0^#EO".unicodeScalars.contains(scalars[next]) { next += 1 }
            guard next < scalars.count else { break }
            switch scalars[next] {
            case "d", "e": day = day ?? index
            case "m", "b", "B", "h": month = month ?? index
            case "y", "Y", "C", "G": year = year ?? index
            case "D": (month, day, year) = (index, index + 1, index + 2)  // %D is %m/%d/%y
            case "F": (year, month, day) = (index, index + 1, index + 2)  // %F is %Y-%m-%d
            default: break
            }
        }
        guard let day, let month else { return nil }
        if let year, year < day && year < month { return nil }
        self = day < month ? .dayFirst : .monthFirst
    }
}

/// What the parser is told besides the text (docs/receipts.md, "Reading").
public struct ReadingSettings: Sendable, Equatable {
    /// How `03/04/2026` is read when the receipt itself does not show it;
    /// nil: such a date is not suggested, only offered as ambiguous.
    public var dateOrder: DateOrder?
    /// The currency of a receipt that names none, and which dollar (or
    /// crown, or yen) a bare `$` (`kr`, `¥`) is: an ISO 4217 code, or nil.
    public var defaultCurrency: String?
    /// The merchants this account already has, as they are spelled there:
    /// a receipt whose text contains one is that merchant.
    public var knownMerchants: [String]
    /// The latest date a receipt can have (`YYYY-MM-DD`, the day it was
    /// received, a day ahead for time zones): a later date on it is a
    /// "valid until" or a misreading. nil: no bound.
    public var latestDate: String?

    public init(dateOrder: DateOrder? = nil, defaultCurrency: String? = nil, knownMerchants: [String] = [], latestDate: String? = nil) {
        self.dateOrder = dateOrder
        self.defaultCurrency = defaultCurrency
        self.knownMerchants = knownMerchants
        self.latestDate = latestDate
    }
}
