import Foundation
import Synchronization

/// A slowloris client on a thread of its own: it connects, sends a
/// request line, then one header line every `interval` seconds and
/// never the blank line that ends the head. When the server closes the
/// connection it connects again after `reconnectAfter` seconds (or
/// stops, when that is nil), until ``stop()``.
public final class Trickler: @unchecked Sendable {
    /// One connection's life.
    public struct Visit: Sendable {
        /// From before `connect` to the moment the close was seen.
        public let seconds: Double
        /// The server sent something (it must not: the head never ends).
        public let answered: Bool
        /// The server closed it (otherwise the test stopped it).
        public let closedByServer: Bool
    }

    private let port: UInt16
    private let interval: Double
    private let reconnectAfter: Double?
    private let state = Mutex<(visits: [Visit], connections: Int, stopping: Bool)>(([], 0, false))
    private let done = DispatchGroup()

    public init(port: UInt16, interval: Double = 0.25, reconnectAfter: Double? = nil) {
        self.port = port
        self.interval = interval
        self.reconnectAfter = reconnectAfter
    }

    public var visits: [Visit] { state.withLock { $0.visits } }
    /// Connections made whose request line went out.
    public var connections: Int { state.withLock { $0.connections } }
    private var isStopping: Bool { state.withLock { $0.stopping } }

    public func start() {
        done.enter()
        Thread { [self] in
            defer { done.leave() }
            while !isStopping {
                let visit = visitOnce()
                state.withLock { $0.visits.append(visit) }
                guard let pause = reconnectAfter else { return }
                let resume = Date().addingTimeInterval(pause)
                while !isStopping && Date() < resume { Thread.sleep(forTimeInterval: 0.02) }
            }
        }.start()
    }

    /// Ends the trickle and waits (up to 30 s) for the thread.
    /// - Returns: false when the thread did not end in time.
    @discardableResult
    public func stop() -> Bool {
        state.withLock { $0.stopping = true }
        return done.wait(timeout: .now() + 30) == .success
    }

    private func visitOnce() -> Visit {
        let started = Date()
        func visit(answered: Bool, closedByServer: Bool) -> Visit {
            Visit(seconds: Date().timeIntervalSince(started), answered: answered, closedByServer: closedByServer)
        }
        guard let connection = try? HTTPConnection(port: port, timeout: 5) else { return visit(answered: false, closedByServer: true) }
        do {
            try connection.send("GET /healthz HTTP/1.1\r\n")
        } catch {
            return visit(answered: false, closedByServer: true)
        }
        state.withLock { $0.connections += 1 }
        var answered = false
        var line = 0
        while !isStopping {
            // Until the next line is due, watch for the server's answer or close.
            var fds = pollfd(fd: connection.descriptor, events: Int16(POLLIN), revents: 0)
            if poll(&fds, 1, Int32(interval * 1000)) > 0 {
                var buffer = [UInt8](repeating: 0, count: 4096)
                let got = recv(connection.descriptor, &buffer, buffer.count, 0)
                if got > 0 { answered = true; continue }
                if got == 0 || (errno != EINTR && errno != EAGAIN) { return visit(answered: answered, closedByServer: true) }
                continue
            }
            line += 1
            do {
                try connection.send("X-Slow-\(line): \(String(repeating: "x", count: 20))\r\n")
            } catch {
                return visit(answered: answered, closedByServer: true)
            }
        }
        return visit(answered: answered, closedByServer: false)
    }
}
