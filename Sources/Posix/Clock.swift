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

    /// `CLOCK_REALTIME` in milliseconds since the epoch: for stored timestamps.
    public static var wallMilliseconds: Int64 {
        var ts = timespec()
        clock_gettime(CLOCK_REALTIME, &ts)
        return Int64(ts.tv_sec) * 1000 + Int64(ts.tv_nsec) / 1_000_000
    }
}
