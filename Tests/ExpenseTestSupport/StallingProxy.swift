import Foundation
import Synchronization

/// A TCP listener on 127.0.0.1 in front of a Unix socket (a test's
/// PostgreSQL): it forwards each connection to it until ``goSilent()``;
/// from then on it accepts every new connection and never sends a byte,
/// a database host that is up but whose service hangs. The connections
/// forwarded before keep working. ``stop()`` (which the test must call)
/// closes everything.
public final class StallingProxy: @unchecked Sendable {
    public let port: UInt16
    private let target: String
    private let listener: Int32
    private let state = Mutex(State())
    private let stopped = Atomic<Bool>(false)

    private struct State {
        var silent = false
        var descriptors: [Int32] = []
        var silentConnections = 0
    }

    /// - Parameter target: the Unix socket connections are forwarded to.
    public init(forwardingTo target: String) throws {
        self.target = target
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw TestFailure("socket: \(errno)") }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard bound == 0, listen(fd, 128) == 0 else {
            close(fd)
            throw TestFailure("bind/listen on 127.0.0.1: \(errno)")
        }
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        listener = fd
        port = UInt16(bigEndian: address.sin_port)
        Thread { [self] in acceptLoop() }.start()
    }

    /// New connections are accepted and never answered from now on.
    public func goSilent() { state.withLock { $0.silent = true } }

    /// Connections accepted since ``goSilent()``.
    public var silentConnectionCount: Int { state.withLock { $0.silentConnections } }

    public func stop() {
        if stopped.exchange(true, ordering: .relaxed) { return }
        shutdown(listener, Int32(SHUT_RDWR))
        close(listener)
        state.withLock { state in
            for fd in state.descriptors { shutdown(fd, Int32(SHUT_RDWR)) }
        }
    }

    private func acceptLoop() {
        while !stopped.load(ordering: .relaxed) {
            let client = accept(listener, nil, nil)
            if client < 0 {
                if stopped.load(ordering: .relaxed) { return } else { continue }
            }
            let silent = state.withLock { state -> Bool in
                state.descriptors.append(client)
                if state.silent { state.silentConnections += 1 }
                return state.silent
            }
            if silent { continue }
            guard let upstream = connectTarget() else {
                shutdown(client, Int32(SHUT_RDWR))
                continue
            }
            state.withLock { $0.descriptors.append(upstream) }
            Thread { Self.pump(from: client, to: upstream) }.start()
            Thread { Self.pump(from: upstream, to: client) }.start()
        }
    }

    private func connectTarget() -> Int32? {
        let fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { return nil }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { path in
            for (index, byte) in target.utf8.prefix(path.count - 1).enumerated() { path[index] = byte }
        }
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        guard connected == 0 else {
            close(fd)
            return nil
        }
        return fd
    }

    /// Copies bytes one way until either side ends; then ends both.
    private static func pump(from source: Int32, to destination: Int32) {
        var buffer = [UInt8](repeating: 0, count: 64 << 10)
        while true {
            let count = buffer.withUnsafeMutableBytes { read(source, $0.baseAddress, $0.count) }
            if count < 0 && errno == EINTR { continue }
            guard count > 0 else { break }
            var sent = 0
            while sent < count {
                let written = buffer.withUnsafeBytes { send(destination, $0.baseAddress! + sent, count - sent, Int32(MSG_NOSIGNAL)) }
                if written < 0 && errno == EINTR { continue }
                guard written > 0 else { shutdown(source, Int32(SHUT_RDWR)); return }
                sent += written
            }
        }
        shutdown(destination, Int32(SHUT_RDWR))
    }
}
