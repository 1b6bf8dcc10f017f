#if canImport(Glibc)
import Glibc
#endif

/// Time as the daemon measures it.
public enum Clock {
    /// `CLOCK_MONOTONIC` in nanoseconds: for durations and timeouts.
    public static var monotonicNanoseconds: UInt64 {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return UInt64(ts.tv_sec) * 1_000_000_000 + UInt64(ts.tv_nsec)
    }

    /// Today's date in the local time zone, `YYYY-MM-DD` (`localtime_r(3)`
    /// after `tzset(3)`, so `TZ` and `/etc/localtime` decide).
    public static var localDate: String {
        tzset()
        var seconds = time(nil)
        var parts = tm()
        guard localtime_r(&seconds, &parts) != nil else { return "1970-01-01" }
        func padded(_ n: Int32, _ width: Int) -> String {
            let digits = String(n)
            return String(repeating: "0", count: max(0, width - digits.count)) + digits
        }
        return "\(padded(parts.tm_year + 1900, 4))-\(padded(parts.tm_mon + 1, 2))-\(padded(parts.tm_mday, 2))"
    }

    /// `CLOCK_REALTIME` in milliseconds since the epoch: for stored timestamps.
    public static var wallMilliseconds: Int64 {
        var ts = timespec()
        clock_gettime(CLOCK_REALTIME, &ts)
        return Int64(ts.tv_sec) * 1000 + Int64(ts.tv_nsec) / 1_000_000
    }
}
