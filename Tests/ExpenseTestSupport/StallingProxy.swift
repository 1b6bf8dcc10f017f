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
        var stopped = false
        /// Sockets of forwarded connections, closed by the last of their
        /// two pumps to end (never while a pump may still read one).
        var forwarded: Set<Int32> = []
        /// Sockets of connections accepted while silent: no thread uses
        /// them, ``stop()`` closes them.
        var silentDescriptors: [Int32] = []
        var silentConnections = 0
    }

    /// - Parameter target: the Unix socket connections are forwarded to.
    public init(forwardingTo target: String) throws {
        self.target = target
        (listener, port) = try FaultProxy.listen()
        Thread { [self] in acceptLoop() }.start()
    }

    /// New connections are accepted and never answered from now on.
    public func goSilent() { state.withLock { $0.silent = true } }

    /// Connections accepted since ``goSilent()``.
    public var silentConnectionCount: Int { state.withLock { $0.silentConnections } }

    /// Closes the connections accepted while silent (they stay silent):
    /// what waited on them learns at once that the host hung up.
    public func hangUpSilentConnections() {
        state.withLock { state in
            for fd in state.silentDescriptors { close(fd) }
            state.silentDescriptors = []
        }
    }

    public func stop() {
        if stopped.exchange(true, ordering: .relaxed) { return }
        shutdown(listener, Int32(SHUT_RDWR))
        close(listener)
        state.withLock { state in
            state.stopped = true
            // The pumps see the end and close their sockets.
            for fd in state.forwarded { shutdown(fd, Int32(SHUT_RDWR)) }
            for fd in state.silentDescriptors { close(fd) }
            state.silentDescriptors = []
        }
    }

    private func acceptLoop() {
        while !stopped.load(ordering: .relaxed) {
            let client = accept(listener, nil, nil)
            if client < 0 {
                if stopped.load(ordering: .relaxed) { return } else { continue }
            }
            let silent = state.withLock { state -> Bool? in
                if state.stopped { return nil }
                if state.silent {
                    state.silentDescriptors.append(client)
                    state.silentConnections += 1
                }
                return state.silent
            }
            guard let silent else {
                close(client)
                return
            }
            if silent { continue }
            guard let upstream = connectTarget() else {
                close(client)
                continue
            }
            let forwarding = state.withLock { state -> Bool in
                if state.stopped { return false }
                state.forwarded.formUnion([client, upstream])
                return true
            }
            guard forwarding else {
                close(client)
                close(upstream)
                return
            }
            let pumps = PumpCount()
            let ended: @Sendable () -> Void = { [self] in
                guard pumps.running.subtract(1, ordering: .acquiringAndReleasing).newValue == 0 else { return }
                state.withLock { state in
                    state.forwarded.subtract([client, upstream])
                    close(client)
                    close(upstream)
                }
            }
            Thread { Self.pump(from: client, to: upstream); ended() }.start()
            Thread { Self.pump(from: upstream, to: client); ended() }.start()
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

/// The pumps of one forwarded connection still running.
private final class PumpCount: Sendable {
    let running = Atomic<Int>(2)
}
