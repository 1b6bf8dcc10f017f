#if canImport(Glibc)
import Glibc
#endif
internal import CShims

/// Hears links and routes change (`rtnetlink(7)`): a route netlink socket,
/// close-on-exec and non-blocking, bound to the groups of links and of
/// IPv4 and IPv6 routes, to be waited on with ``Poll``.
public final class RouteMonitor: Sendable {
    public let descriptor: FileDescriptor

    /// What one message says, as far as reaching a server again goes.
    public enum Event: Sendable, Equatable {
        /// A link's state: `running` when it is up and running
        /// (`IFF_UP | IFF_RUNNING`); a link removed is not running.
        case link(index: Int32, running: Bool)
        /// A default route was added to the main table.
        case defaultRoute
        /// Another route was added (a network's, a host's).
        case route
    }

    public init() throws(SystemCallError) {
        descriptor = FileDescriptor(owning: try retrying("socket(AF_NETLINK)") { cshims_route_monitor() })
    }

    /// Every message queued now, in order; empty when there is none; and
    /// whether the socket's buffer overflowed (`ENOBUFS`: messages were
    /// lost), after which reading goes on.
    public func readEvents() throws(SystemCallError) -> (events: [Event], overflowed: Bool) {
        var events: [Event] = []
        var overflowed = false
        var buffer = [UInt8](repeating: 0, count: 32 * 1024)
        while true {
            let read = buffer.withUnsafeMutableBytes { raw in Result { () throws(SystemCallError) -> Int in try descriptor.read(into: raw) } }
            let count: Int
            switch read {
            case .success(let n): count = n
            case .failure(let error) where error.wouldBlock: return (events, overflowed)
            case .failure(let error) where error.errno == ENOBUFS:
                overflowed = true
                continue
            case .failure(let error): throw error
            }
            if count <= 0 { return (events, overflowed) }
            events += Self.parse(Array(buffer.prefix(count)))
        }
    }

    /// The events in `bytes`, as one `recv(2)` returned them (the kernel's
    /// `NLMSG_*` macros walk them); other messages are passed over.
    public static func parse(_ bytes: [UInt8]) -> [Event] {
        var found = [cshims_route_event](repeating: cshims_route_event(), count: 256)
        let count = bytes.withUnsafeBytes { raw in
            found.withUnsafeMutableBufferPointer { cshims_route_events(raw.baseAddress, raw.count, $0.baseAddress, Int32($0.count)) }
        }
        return found.prefix(Int(count)).map { event in
            switch event.kind {
            case 1: .link(index: event.index, running: event.running != 0)
            case 2: .defaultRoute
            default: .route
            }
        }
    }
}
