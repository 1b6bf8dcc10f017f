import Foundation
import Synchronization

/// A deliberately small HTTP/1.1 server on 127.0.0.1 for client tests:
/// it records each request and answers what `respond` says, or hangs, or
/// hangs up. Not the reference server: a fake whose misbehaviour a test picks.
public final class LoopbackHTTPServer: @unchecked Sendable {
    public typealias Request = ReceivedRequest

    public enum Reply: Sendable {
        case respond(status: Int, headers: [String: String], body: [UInt8])
        /// Answer after a pause of `seconds`.
        case respondAfter(seconds: Double, status: Int, headers: [String: String], body: [UInt8])
        /// Read the request, then never answer.
        case hang
        /// Read the request, then close without answering.
        case close
        /// Read the request, then reset the connection (`SO_LINGER` 0).
        case reset
        /// Send these bytes as they are (a whole answer, or not), then close.
        case raw([UInt8])
    }

    public let port: UInt16
    private let listener: Int32
    private let received = Mutex<[Request]>([])
    private let respond: @Sendable (Request) -> Reply
    private let stopped = Atomic<Bool>(false)

    public init(respond: @escaping @Sendable (Request) -> Reply) throws {
        self.respond = respond
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var yes: Int32 = 1
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &yes, socklen_t(MemoryLayout<Int32>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard bound == 0, listen(fd, 64) == 0 else { throw TestFailure("bind/listen: \(errno)") }
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        listener = fd
        port = UInt16(bigEndian: address.sin_port)
        let thread = Thread { [self] in acceptLoop() }
        thread.start()
    }

    deinit { stop() }

    public var baseURL: String { "http://127.0.0.1:\(port)" }

    public var requests: [Request] { received.withLock { $0 } }

    public func stop() {
        if stopped.exchange(true, ordering: .relaxed) { return }
        shutdown(listener, Int32(SHUT_RDWR))
        close(listener)
    }

    private func acceptLoop() {
        while !stopped.load(ordering: .relaxed) {
            let client = accept(listener, nil, nil)
            if client < 0 { if stopped.load(ordering: .relaxed) { return } else { continue } }
            Thread { [self] in serve(client) }.start()
        }
    }

    private func serve(_ fd: Int32) {
        var reader = HTTPRequestReader(descriptor: fd)
        defer { close(fd) }
        while true {
            guard let request = try? reader.next() else { return }
            received.withLock { $0.append(request) }
            var reply = respond(request)
            if case .respondAfter(let seconds, let status, let headers, let body) = reply {
                usleep(UInt32(seconds * 1_000_000))
                reply = .respond(status: status, headers: headers, body: body)
            }
            switch reply {
            case .respondAfter:
                return
            case .hang:
                var byte: UInt8 = 0
                _ = recv(fd, &byte, 1, 0)  // until the client gives up
                return
            case .close:
                return
            case .raw(let bytes):
                FaultProxy.sendAll(fd, bytes)
                return
            case .reset:
                FaultProxy.setLingerZero(fd)
                return
            case .respond(let status, let headers, let body):
                var head = "HTTP/1.1 \(status) Status\r\nContent-Length: \(body.count)\r\n"
                for (name, value) in headers { head += "\(name): \(value)\r\n" }
                head += "\r\n"
                let bytes = Array(head.utf8) + body
                _ = bytes.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            }
        }
    }
}
