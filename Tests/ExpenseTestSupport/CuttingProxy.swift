import Foundation
import Synchronization

/// A TCP proxy on 127.0.0.1 in front of a server on another loopback port,
/// as a link that drops: each connection carries at most ``Mode/cut(after:)``
/// bytes from the client, then both its sides are closed. It can also
/// hold a connection's bytes (``Mode/hold(after:)``: a link that stalls
/// mid-request) or refuse every connection (``Mode/down``). It counts every
/// byte a client sent, forwarded or not, so a test can say how much a
/// transfer cost.
public final class CuttingProxy: @unchecked Sendable {
    public enum Mode: Sendable, Equatable {
        /// Forward everything.
        case clean
        /// Close a connection once it carried this many bytes from its client.
        case cut(after: Int)
        /// Forward this many bytes of each connection, then read nothing
        /// more from it (the client's request hangs) until it closes.
        case hold(after: Int)
        /// Close every new connection at once.
        case down
    }

    public let port: UInt16
    private let listener: Int32
    private let state = Mutex(State())
    private let stopped = Atomic<Bool>(false)
    /// Bytes read from clients (forwarded or not).
    private let fromClients = Atomic<Int>(0)
    /// Connections closed by a cut.
    private let cutCount = Atomic<Int>(0)
    /// Connections a hold stopped reading.
    private let heldCount = Atomic<Int>(0)

    private struct State {
        var target: UInt16?
        var mode = Mode.clean
        var stopped = false
        var open: Set<Int32> = []
    }

    public init(mode: Mode = .clean) throws {
        (listener, port) = try FaultProxy.listen()
        state.withLock { $0.mode = mode }
        Thread { [self] in acceptLoop() }.start()
    }

    /// The server's port; connections before it is known are closed.
    public var target: UInt16? {
        get { state.withLock { $0.target } }
        set { state.withLock { $0.target = newValue } }
    }

    /// What happens to connections accepted from now on.
    public var mode: Mode {
        get { state.withLock { $0.mode } }
        set { state.withLock { $0.mode = newValue } }
    }

    public var url: String { "http://127.0.0.1:\(port)" }
    public var bytesFromClients: Int { fromClients.load(ordering: .relaxed) }
    public var cuts: Int { cutCount.load(ordering: .relaxed) }
    public var holds: Int { heldCount.load(ordering: .relaxed) }

    public func stop() {
        if stopped.exchange(true, ordering: .relaxed) { return }
        shutdown(listener, Int32(SHUT_RDWR))
        close(listener)
        state.withLock { state in
            state.stopped = true
            for fd in state.open { shutdown(fd, Int32(SHUT_RDWR)) }
        }
    }

    deinit { stop() }

    private func acceptLoop() {
        while !stopped.load(ordering: .relaxed) {
            let client = accept(listener, nil, nil)
            if client < 0 {
                if stopped.load(ordering: .relaxed) { return } else { continue }
            }
            let (target, mode) = state.withLock { ($0.target, $0.mode) }
            guard let target, mode != .down, let upstream = Self.connect(port: target) else {
                close(client)
                continue
            }
            let registered = state.withLock { state -> Bool in
                if state.stopped { return false }
                state.open.formUnion([client, upstream])
                return true
            }
            guard registered else {
                close(client)
                close(upstream)
                return
            }
            let pumps = Atomic<Int>(2)
            let ended: @Sendable () -> Void = { [self] in
                guard pumps.subtract(1, ordering: .acquiringAndReleasing).newValue == 0 else { return }
                state.withLock { state in
                    state.open.subtract([client, upstream])
                    close(client)
                    close(upstream)
                }
            }
            Thread { [self] in upload(from: client, to: upstream, mode: mode); ended() }.start()
            Thread { Self.pump(from: upstream, to: client); ended() }.start()
        }
    }

    /// Client to server, by `mode`; then ends both directions.
    private func upload(from client: Int32, to upstream: Int32, mode: Mode) {
        var buffer = [UInt8](repeating: 0, count: 64 << 10)
        var carried = 0
        let limit: Int? = switch mode {
        case .cut(let after), .hold(let after): after
        default: nil
        }
        while true {
            let count = buffer.withUnsafeMutableBytes { read(client, $0.baseAddress, $0.count) }
            if count < 0 && errno == EINTR { continue }
            guard count > 0 else { break }
            fromClients.add(count, ordering: .relaxed)
            let forward = limit.map { min(count, $0 - carried) } ?? count
            guard Self.sendAll(buffer, count: forward, to: upstream) else { break }
            carried += forward
            if let limit, carried >= limit {
                if case .hold = mode {
                    heldCount.add(1, ordering: .relaxed)
                    // Read nothing more (the client's sends stall when the
                    // buffers fill); wait for it, or stop, to end the connection.
                    var hangUp = Glibc.pollfd(fd: client, events: 0x2000 /* POLLRDHUP */, revents: 0)
                    while poll(&hangUp, 1, -1) < 0 && errno == EINTR {}
                } else {
                    cutCount.add(1, ordering: .relaxed)
                }
                break
            }
        }
        shutdown(upstream, Int32(SHUT_RDWR))
        shutdown(client, Int32(SHUT_RDWR))
    }

    private static func sendAll(_ buffer: [UInt8], count: Int, to fd: Int32) -> Bool {
        var sent = 0
        while sent < count {
            let written = buffer.withUnsafeBytes { send(fd, $0.baseAddress! + sent, count - sent, Int32(MSG_NOSIGNAL)) }
            if written < 0 && errno == EINTR { continue }
            guard written > 0 else { return false }
            sent += written
        }
        return true
    }

    /// Server to client, until either side ends.
    private static func pump(from source: Int32, to destination: Int32) {
        var buffer = [UInt8](repeating: 0, count: 64 << 10)
        while true {
            let count = buffer.withUnsafeMutableBytes { read(source, $0.baseAddress, $0.count) }
            if count < 0 && errno == EINTR { continue }
            guard count > 0, sendAll(buffer, count: count, to: destination) else { break }
        }
        shutdown(destination, Int32(SHUT_RDWR))
        shutdown(source, Int32(SHUT_RDWR))
    }

    private static func connect(port: UInt16) -> Int32? {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { return nil }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard connected == 0 else {
            close(fd)
            return nil
        }
        return fd
    }
}
