#if canImport(Glibc)
import Glibc
#endif
internal import CShims

/// `poll(2)` over a set of descriptors.
public enum Poll {
    public struct Events: OptionSet, Sendable {
        public let rawValue: Int16
        public init(rawValue: Int16) { self.rawValue = rawValue }
        public static let readable = Events(rawValue: Int16(POLLIN))
        public static let writable = Events(rawValue: Int16(POLLOUT))
        public static let error = Events(rawValue: Int16(POLLERR))
        public static let hangUp = Events(rawValue: Int16(POLLHUP))
        public static let invalid = Events(rawValue: Int16(POLLNVAL))
    }

    /// Waits until one of `descriptors` is ready or `timeoutMilliseconds` pass (-1: forever).
    /// - Returns: the ready events, one per descriptor, in the same order.
    public static func wait(_ descriptors: [(FileDescriptor, Events)], timeoutMilliseconds: Int32) throws(SystemCallError) -> [Events] {
        defer { withExtendedLifetime(descriptors) {} }
        return try wait(borrowed: descriptors.map { ($0.0.rawValue, $0.1) }, timeoutMilliseconds: timeoutMilliseconds)
    }

    /// ``wait(_:timeoutMilliseconds:)`` on descriptors a library owns (say
    /// sd-bus's connection, `sd_bus_get_fd(3)`), which the caller keeps open
    /// for the call.
    public static func wait(borrowed descriptors: [(Int32, Events)], timeoutMilliseconds: Int32) throws(SystemCallError) -> [Events] {
        var fds = descriptors.map { pollfd(fd: $0.0, events: $0.1.rawValue, revents: 0) }
        let n = Glibc.poll(&fds, nfds_t(fds.count), timeoutMilliseconds)
        if n < 0 {
            if errno == EINTR { return fds.map { _ in [] } }
            throw SystemCallError(call: "poll", errno: errno)
        }
        return fds.map { Events(rawValue: $0.revents) }
    }
}

/// An `eventfd(2)`: one thread signals, a poll loop wakes up.
public final class EventNotifier: Sendable {
    public let descriptor: FileDescriptor

    public init() throws(SystemCallError) {
        descriptor = FileDescriptor(owning: try retrying("eventfd") { cshims_eventfd() })
    }

    /// Wakes the waiting poll loop. Safe from any thread.
    public func signal() {
        var one: UInt64 = 1
        _ = withUnsafeBytes(of: &one) { Glibc.write(descriptor.rawValue, $0.baseAddress, 8) }
    }

    /// Clears pending signals (after poll said readable).
    public func drain() {
        var value: UInt64 = 0
        _ = withUnsafeMutableBytes(of: &value) { Glibc.read(descriptor.rawValue, $0.baseAddress, 8) }
    }
}
