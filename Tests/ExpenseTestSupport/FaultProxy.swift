import Foundation
import Synchronization

/// An HTTP proxy on 127.0.0.1 between a client and a backend that makes
/// the failures exactly-once delivery must survive, chosen per request by
/// seeded odds:
///
/// - **drop after commit**: forward the request, read the backend's whole
///   answer (so the backend has committed), then close the client's
///   connection without a byte of it;
/// - **reset after commit**: the same, but reset the connection
///   (`SO_LINGER` 0, the client sees `ECONNRESET`);
/// - **unavailable**: answer `503` without forwarding (the backend never
///   sees the request);
/// - otherwise forward it and pass the answer on.
///
/// Each request goes to the backend on a connection of its own
/// (`Connection: close`); the client's connection is kept alive between
/// requests whatever the backend does, as a reverse proxy in front of a
/// backend does, so that a client reuses it (and libcurl's resend on a
/// reused connection can be seen). Answers are passed on whole, framed
/// with `Content-Length`. What was done to each request is kept in
/// ``log``, so that tests can count.
public final class FaultProxy: @unchecked Sendable {
    /// The probability of each fault; the rest is forwarded.
    public struct Odds: Sendable, Equatable {
        public var dropAfterCommit: Double
        public var resetAfterCommit: Double
        public var unavailable: Double

        public init(dropAfterCommit: Double = 0, resetAfterCommit: Double = 0, unavailable: Double = 0) {
            precondition([dropAfterCommit, resetAfterCommit, unavailable].allSatisfy { $0 >= 0 }
                         && dropAfterCommit + resetAfterCommit + unavailable <= 1, "odds must be probabilities that add up to at most 1")
            self.dropAfterCommit = dropAfterCommit
            self.resetAfterCommit = resetAfterCommit
            self.unavailable = unavailable
        }

        /// Forward everything.
        public static let none = Odds()

        /// The action for a uniform draw in `0..<1`.
        func action(for draw: Double) -> Action {
            if draw < dropAfterCommit { return .droppedAfterCommit }
            if draw < dropAfterCommit + resetAfterCommit { return .resetAfterCommit }
            if draw < dropAfterCommit + resetAfterCommit + unavailable { return .unavailable }
            return .forwarded
        }
    }

    /// What the proxy did with one request.
    public enum Action: String, Sendable, CaseIterable {
        /// Forwarded, and the backend's answer passed on.
        case forwarded
        /// Forwarded, answered by the backend, answer withheld: connection closed.
        case droppedAfterCommit
        /// Forwarded, answered by the backend, answer withheld: connection reset.
        case resetAfterCommit
        /// Answered 503 here; the backend never saw it.
        case unavailable
        /// Chosen to be forwarded, but the backend could not be reached or
        /// did not answer whole: answered 502 here.
        case backendFailed
        /// Not an HTTP request: answered 400 here and the connection closed.
        case malformed
    }

    /// One request and its fate, in the order the fates were settled.
    public struct Entry: Sendable, CustomStringConvertible {
        /// 1 for the first request the proxy read, 2 for the next, …
        public let sequence: Int
        /// Which client connection it came on (1, 2, …), and its place there.
        public let connection: Int
        public let requestOnConnection: Int
        public let method: String
        public let path: String
        public let action: Action
        /// The backend's status, when it answered.
        public let backendStatus: Int?

        public var description: String {
            "#\(sequence) conn \(connection).\(requestOnConnection) \(method) \(path) → \(action.rawValue)" + (backendStatus.map { " (backend \($0))" } ?? "")
        }
    }

    public let port: UInt16
    public let backendPort: UInt16
    private let listener: Int32
    private let state: Mutex<State>
    /// Requests for which faults may be chosen; the others are always forwarded.
    private let isFaultable: @Sendable (ReceivedRequest) -> Bool
    private let backendTimeout: Double
    /// Guards `holdingWrites` and `heldWriteCount` (``holdWrites()``).
    private let writeGate = NSCondition()
    private var holdingWrites = false
    private var heldWriteCount = 0

    private struct State {
        let seed: UInt64
        /// One stream of draws per method: the fates of a method's requests
        /// follow from their order alone, however other methods' requests
        /// (a lookup after a lost answer) come between them, so that what
        /// a test counts of one method (faults among its creates) is the
        /// same in every run that makes as many.
        var draws: [String: SeededRandom] = [:]
        var odds: Odds
        var log: [Entry] = []
        var connections = 0
        var open: Set<Int32> = []
        var readMethods: [String] = []
        var stopped = false
    }

    /// Listens on a free port of 127.0.0.1 and forwards to `127.0.0.1:backendPort`.
    /// - Parameters:
    ///   - odds: the faults' probabilities (``setOdds(_:)`` changes them later).
    ///   - seed: the seed of the draws: the same seed and the same number
    ///     of requests of a method give that method's requests the same fates.
    ///   - backendTimeout: how long to wait for the backend's answer.
    ///   - faultable: which requests may get a fault (default: all).
    public init(backendPort: UInt16, odds: Odds = .none, seed: UInt64 = 1, backendTimeout: Double = 120,
                faultable: @escaping @Sendable (ReceivedRequest) -> Bool = { _ in true }) throws {
        self.backendPort = backendPort
        self.backendTimeout = backendTimeout
        isFaultable = faultable
        state = Mutex(State(seed: seed, odds: odds))
        (listener, port) = try Self.listen()
        Thread { [self] in acceptLoop() }.start()
    }

    deinit { stop() }

    /// `http://127.0.0.1:PORT`: where the client goes instead of the backend.
    public var baseURL: String { "http://127.0.0.1:\(port)" }

    /// Every request so far, in the order their fates were settled (an
    /// entry is in the log before the client sees anything of its answer).
    public var log: [Entry] { state.withLock { $0.log } }

    /// How many requests got `action`.
    /// Requests with `method` read whole from clients, forwarded or not yet.
    public func requestsRead(_ method: String) -> Int { state.withLock { $0.readMethods.count { $0 == method } } }

    /// Client connections still open.
    public var openConnections: Int { state.withLock { $0.open.count } }

    public func count(_ action: Action) -> Int { state.withLock { $0.log.count { $0.action == action } } }

    /// Changes the odds for the requests read from now on (say, to none,
    /// so that a queue can drain to the end).
    public func setOdds(_ odds: Odds) { state.withLock { $0.odds = odds } }

    /// From now on each `POST` is read whole and then held, not forwarded,
    /// until ``releaseWrites()``: a request in flight for as long as a test
    /// needs (the client may go away meanwhile; the request still goes on).
    public func holdWrites() {
        writeGate.lock()
        holdingWrites = true
        writeGate.unlock()
    }

    /// Forwards the `POST`s held, and those to come.
    public func releaseWrites() {
        writeGate.lock()
        holdingWrites = false
        writeGate.broadcast()
        writeGate.unlock()
    }

    /// How many `POST`s are held now.
    public var heldWrites: Int {
        writeGate.lock()
        defer { writeGate.unlock() }
        return heldWriteCount
    }

    private func passWriteGate(_ request: ReceivedRequest) {
        guard request.method == "POST" else { return }
        writeGate.lock()
        heldWriteCount += 1
        while holdingWrites { writeGate.wait() }
        heldWriteCount -= 1
        writeGate.unlock()
    }

    /// Stops listening and closes every client connection.
    public func stop() {
        let open = state.withLock { state -> Set<Int32>? in
            if state.stopped { return nil }
            state.stopped = true
            return state.open
        }
        guard let open else { return }
        shutdown(listener, Int32(SHUT_RDWR))
        close(listener)
        // The threads serving them see the end and close them.
        for fd in open { shutdown(fd, Int32(SHUT_RDWR)) }
    }

    private func acceptLoop() {
        while true {
            let client = accept(listener, nil, nil)
            if client < 0 {
                if state.withLock({ $0.stopped }) { return }
                continue
            }
            let number = state.withLock { state -> Int? in
                guard !state.stopped else { return nil }
                state.connections += 1
                state.open.insert(client)
                return state.connections
            }
            guard let number else {
                close(client)
                return
            }
            Thread { [self] in serve(client, number: number) }.start()
        }
    }

    private func serve(_ client: Int32, number: Int) {
        var linger = false
        defer {
            state.withLock { _ = $0.open.remove(client) }
            if linger { Self.setLingerZero(client) }
            close(client)
        }
        var reader = HTTPRequestReader(descriptor: client)
        var onConnection = 0
        while true {
            let request: ReceivedRequest
            do {
                request = try reader.next()
            } catch .malformed {
                record(connection: number, onConnection + 1, method: "-", path: "-", .malformed, nil)
                Self.sendAll(client, Self.encode(status: 400, reason: "Bad Request", headers: [], body: Array("malformed request\n".utf8), close: true))
                return
            } catch {
                return
            }
            onConnection += 1
            state.withLock { $0.readMethods.append(request.method) }
            passWriteGate(request)
            let action = decide(request)
            var backendStatus: Int?
            var answer: [UInt8]?
            if action != .unavailable {
                if let response = forward(request) {
                    backendStatus = response.status
                    answer = Self.encode(status: response.status, reason: response.reason, headers: response.headers,
                                         body: response.body, close: request.wantsClose, head: request.method == "HEAD")
                }
            }
            let done: Action = action == .unavailable ? .unavailable : (answer == nil ? .backendFailed : action)
            record(connection: number, onConnection, method: request.method, path: request.path, done, backendStatus)
            switch done {
            case .forwarded:
                Self.sendAll(client, answer!)
                if request.wantsClose { return }
            case .droppedAfterCommit:
                return
            case .resetAfterCommit:
                linger = true
                return
            case .unavailable:
                Self.sendAll(client, Self.encode(status: 503, reason: "Service Unavailable", headers: [("Content-Type", "application/json")],
                                                 body: Array(#"{"error":{"code":"unavailable","message":"fault proxy: 503 without forwarding"}}"#.utf8),
                                                 close: request.wantsClose))
                if request.wantsClose { return }
            case .backendFailed:
                Self.sendAll(client, Self.encode(status: 502, reason: "Bad Gateway", headers: [], body: Array("fault proxy: no answer from the backend\n".utf8), close: true))
                return
            case .malformed:
                return
            }
        }
    }

    private func decide(_ request: ReceivedRequest) -> Action {
        guard isFaultable(request) else { return .forwarded }
        return state.withLock { state in
            var draws = state.draws[request.method] ?? SeededRandom(seed: state.seed ^ Self.stream(of: request.method))
            let draw = Double.random(in: 0..<1, using: &draws)
            state.draws[request.method] = draws
            return state.odds.action(for: draw)
        }
    }

    /// A method's stream of draws (FNV-1a of its name: the same in every process).
    private static func stream(of method: String) -> UInt64 {
        method.utf8.reduce(0xCBF2_9CE4_8422_2325 as UInt64) { ($0 ^ UInt64($1)) &* 0x0000_0100_0000_01B3 }
    }

    private func record(connection: Int, _ onConnection: Int, method: String, path: String, _ action: Action, _ status: Int?) {
        state.withLock { state in
            state.log.append(Entry(sequence: state.log.count + 1, connection: connection, requestOnConnection: onConnection,
                                   method: method, path: path, action: action, backendStatus: status))
        }
    }

    /// Sends `request` to the backend on a new connection and reads the whole answer.
    private func forward(_ request: ReceivedRequest) -> HTTPMessage? {
        let hopByHop: Set<String> = ["connection", "keep-alive", "transfer-encoding", "content-length", "expect", "host",
                                     "proxy-connection", "te", "trailer", "upgrade"]
        let headers = request.headerLines.filter { !hopByHop.contains($0.name.lowercased()) }.map { ($0.name, $0.value) }
            + [("Connection", "close")]
        let hasBody = !request.body.isEmpty || request.headers["content-length"] != nil || request.headers["transfer-encoding"] != nil
        guard let backend = try? HTTPConnection(port: backendPort, timeout: backendTimeout) else { return nil }
        return try? backend.request(request.method, request.path, headers: headers, body: hasBody ? request.body : nil)
    }

    /// A whole answer, framed with `Content-Length` (a `HEAD` answer keeps the backend's).
    static func encode(status: Int, reason: String, headers: [(name: String, value: String)], body: [UInt8], close: Bool, head: Bool = false) -> [UInt8] {
        let framing: Set<String> = head ? ["connection", "keep-alive", "transfer-encoding"] : ["connection", "keep-alive", "transfer-encoding", "content-length"]
        var text = "HTTP/1.1 \(status) \(reason.isEmpty ? "Status" : reason)\r\n"
        for (name, value) in headers where !framing.contains(name.lowercased()) { text += "\(name): \(value)\r\n" }
        if !head { text += "Content-Length: \(body.count)\r\n" }
        if close { text += "Connection: close\r\n" }
        text += "\r\n"
        return Array(text.utf8) + (head ? [] : body)
    }

    public static func sendAll(_ fd: Int32, _ bytes: [UInt8]) {
        var offset = 0
        while offset < bytes.count {
            let n = bytes.withUnsafeBytes { send(fd, $0.baseAddress! + offset, $0.count - offset, Int32(MSG_NOSIGNAL)) }
            if n < 0 && errno == EINTR { continue }
            if n <= 0 { return }
            offset += n
        }
    }

    /// Makes the next `close` send a TCP reset instead of a FIN.
    static func setLingerZero(_ fd: Int32) {
        var value = linger(l_onoff: 1, l_linger: 0)
        setsockopt(fd, SOL_SOCKET, SO_LINGER, &value, socklen_t(MemoryLayout<linger>.size))
    }

    /// A listening TCP socket on 127.0.0.1 and its port (the kernel's choice).
    static func listen() throws -> (Int32, UInt16) {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw TestFailure("socket: \(errno)") }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard bound == 0, Glibc.listen(fd, 128) == 0 else {
            close(fd)
            throw TestFailure("bind/listen on 127.0.0.1: \(errno)")
        }
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        return (fd, UInt16(bigEndian: address.sin_port))
    }
}
