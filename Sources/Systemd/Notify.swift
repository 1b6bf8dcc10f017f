internal import CSystemd
import Posix

/// The service manager's notification protocol (`sd_notify(3)`).
/// Every call is a no-op when `NOTIFY_SOCKET` is unset.
public enum ServiceManager {
    /// Sends raw `KEY=value` lines. Wraps `sd_notify`.
    public static func notify(_ state: String) {
        _ = sd_notify(0, state)
    }

    public static func ready(status: String? = nil) {
        notify("READY=1" + (status.map { "\nSTATUS=\($0)" } ?? ""))
    }

    public static func status(_ text: String) {
        // STATUS= is one line; a newline would start another assignment.
        notify("STATUS=" + text.replacingNewlines())
    }

    public static func stopping() { notify("STOPPING=1") }

    public static func watchdog() { notify("WATCHDOG=1") }

    /// The watchdog interval the manager expects pings within, in
    /// microseconds, or `nil` when none is set for this process.
    /// Wraps `sd_watchdog_enabled`.
    public static func watchdogMicroseconds() -> UInt64? {
        var usec: UInt64 = 0
        return sd_watchdog_enabled(0, &usec) > 0 ? usec : nil
    }

    /// Sockets passed by socket activation (`sd_listen_fds(3)`), from fd 3.
    public static func listenDescriptors() -> [FileDescriptor] {
        let n = sd_listen_fds(1)
        guard n > 0 else { return [] }
        return (0..<n).map { FileDescriptor(owning: SD_LISTEN_FDS_START + $0) }
    }
}

extension String {
    func replacingNewlines() -> String {
        String(map { $0 == "\n" || $0 == "\r" ? " " : $0 })
    }
}
