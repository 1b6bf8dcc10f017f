#if canImport(Glibc)
import Glibc
#endif

/// The process's locale for dates, as the C library has it from `LC_ALL`,
/// `LC_TIME` or `LANG` (locale(7)), looked up without changing the
/// process's own locale: `newlocale(3)` and `nl_langinfo_l(3)`.
public enum LocaleFormat {
    /// The name the environment gives the time locale (`LC_ALL`, else
    /// `LC_TIME`, else `LANG`; `C` when none is set).
    public static var timeLocaleName: String {
        for name in ["LC_ALL", "LC_TIME", "LANG"] {
            if let value = Environment[name], !value.isEmpty { return value }
        }
        return "C"
    }

    /// Whether the C library has the locale the environment names (it may
    /// name one that `locale -a` does not list: then the C locale is used).
    public static var isTimeLocaleInstalled: Bool {
        guard let locale = newlocale(LC_TIME_MASK, "", nil) else { return false }
        freelocale(locale)
        return true
    }

    /// The locale's date format (`D_FMT`: `%d/%m/%Y` for en_GB, `%m/%d/%y`
    /// for en_US), or nil when the locale the environment names is not
    /// installed (`locale -a`) or is C or POSIX, whose format stands for
    /// no country's habit. Wraps `newlocale` and `nl_langinfo_l`.
    public static func dateFormat() -> String? {
        let name = timeLocaleName
        let base = name.split(separator: ".").first.map(String.init) ?? name
        if base == "C" || base == "POSIX" { return nil }
        guard let locale = newlocale(LC_TIME_MASK, "", nil) else { return nil }
        defer { freelocale(locale) }
        guard let format = nl_langinfo_l(nl_item(D_FMT), locale) else { return nil }
        return String(cString: format)
    }
}
