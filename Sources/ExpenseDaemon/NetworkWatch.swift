import DaemonSupport
#if canImport(Glibc)
import Glibc
#endif
import Posix

/// Wakes the drain when the network may be back (docs/sync.md, "When the
/// network comes back"): a link coming up and running, or a default route
/// appearing, heard on a route netlink socket. A burst of messages (a link
/// brings its routes, IPv4 and IPv6) is one wake: after the first, the
/// watch reads on until the socket has been quiet for a moment. On its own
/// thread; nothing is sent from it.
final class NetworkWatch: Sendable {
    private let monitor: RouteMonitor
    private let stopping: EventNotifier
    private let logger: Logger
    private let regained: @Sendable (String) -> Void

    /// How long the socket must stay quiet before a burst is over.
    static let quietMilliseconds: Int32 = 200

    /// - Parameter regained: called with what happened, once per burst.
    /// - Throws: when the socket cannot be opened (a sandbox without
    ///   `AF_NETLINK`): the drain then relies on its timer.
    init(logger: Logger, regained: @escaping @Sendable (String) -> Void) throws(SystemCallError) {
        monitor = try RouteMonitor()
        stopping = try EventNotifier()
        self.logger = logger
        self.regained = regained
    }

    func start() {
        Threads.spawn(name: "network") { [self] in loop() }
    }

    func stop() { stopping.signal() }

    private func loop() {
        var running: Set<Int32> = []
        var reason: String?
        while true {
            let ready: [Poll.Events]
            do {
                ready = try Poll.wait([(monitor.descriptor, .readable), (stopping.descriptor, .readable)],
                                     timeoutMilliseconds: reason == nil ? -1 : Self.quietMilliseconds)
            } catch {
                logger.error("Failed to wait for network changes: \(error.reason); the drain relies on its timer")
                return
            }
            if !ready[1].isEmpty { return }
            if ready[0].isEmpty {
                // Quiet since the burst began: one wake for all of it.
                if let said = reason { regained(said) }
                reason = nil
                continue
            }
            do {
                let (events, overflowed) = try monitor.readEvents()
                if let found = Self.regain(in: events, running: &running, name: Self.linkName) ?? (overflowed ? "route messages were lost" : nil) {
                    reason = reason ?? found
                }
            } catch {
                logger.error("Failed to read network changes: \(error.reason); the drain relies on its timer")
                return
            }
        }
    }

    /// Whether `events` may bring the server back, and why: a link that
    /// was not known running is, or a default route appeared. `running`
    /// is the links known up and running, kept from call to call.
    static func regain(in events: [RouteMonitor.Event], running: inout Set<Int32>, name: (Int32) -> String) -> String? {
        var reason: String?
        for event in events {
            switch event {
            case .link(let index, true):
                if running.insert(index).inserted { reason = reason ?? "link \(name(index)) is up" }
            case .link(let index, false):
                running.remove(index)
            case .defaultRoute:
                reason = reason ?? "a default route appeared"
            case .route:
                break
            }
        }
        return reason
    }

    /// The interface's name (`if_indextoname(3)`), or its index.
    static func linkName(_ index: Int32) -> String {
        var buffer = [CChar](repeating: 0, count: Int(IF_NAMESIZE) + 1)
        guard if_indextoname(UInt32(bitPattern: index), &buffer) != nil else { return "#\(index)" }
        return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}
