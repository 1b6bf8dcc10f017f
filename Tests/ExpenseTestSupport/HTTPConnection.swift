import Foundation

/// A response as read off the wire.
public struct HTTPMessage: Sendable {
    public let status: Int
    public let reason: String
    /// Header lines in order, names as sent.
    public let headers: [(name: String, value: String)]
    public let body: [UInt8]

    /// The first value of header `name` (case-insensitive).
    public func header(_ name: String) -> String? {
        headers.first { $0.name.lowercased() == name.lowercased() }?.value
    }

    public var text: String { String(decoding: body, as: UTF8.self) }

    /// The body parsed as JSON, or `nil`.
    public var json: [String: Any]? {
        (try? JSONSerialization.jsonObject(with: Data(body))) as? [String: Any]
    }

    /// `error.code` of a contract error body.
    public var errorCode: String? {
        (json?["error"] as? [String: Any])?["code"] as? String
    }
}

/// Why a request over an ``HTTPConnection`` failed.
public enum HTTPConnectionError: Error, CustomStringConvertible {
    case system(String, Int32)
    /// The peer closed the connection (before or during a response).
    case closed
    case timedOut
    case malformed(String)

    public var description: String {
        switch self {
        case .system(let call, let code): "\(call): \(String(cString: strerror(code)))"
        case .closed: "connection closed by the server"
        case .timedOut: "timed out"
        case .malformed(let what): "malformed response: \(what)"
        }
    }
}

/// One TCP connection to 127.0.0.1 speaking HTTP/1.1 by hand: keep-alive
/// requests, raw bytes for hostile input, and a way to see the server
/// close the connection. Blocking, with timeouts; one thread at a time.
public final class HTTPConnection {
    public let descriptor: Int32
    private var buffer: [UInt8] = []
    private var chunk = [UInt8](repeating: 0, count: 65536)

    /// Connects to `127.0.0.1:port`; reads and writes time out after `timeout` seconds.
    public init(port: UInt16, timeout: Double = 20) throws {
        descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard descriptor >= 0 else { throw HTTPConnectionError.system("socket", errno) }
        var tv = timeval(tv_sec: Int(timeout), tv_usec: Int((timeout - Double(Int(timeout))) * 1_000_000))
        setsockopt(descriptor, SOL_SOCKET, SO_RCVTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
        setsockopt(descriptor, SOL_SOCKET, SO_SNDTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
        var one: Int32 = 1
        setsockopt(descriptor, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let rc = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        if rc != 0 {
            // deinit closes the descriptor: the object is fully initialized
            // here, so it runs even though init throws. Closing it here as
            // well would close whatever took the number in between.
            throw HTTPConnectionError.system("connect", errno)
        }
    }

    deinit { Glibc.close(descriptor) }

    /// Sends raw bytes.
    public func send(_ bytes: [UInt8]) throws {
        var offset = 0
        while offset < bytes.count {
            let n = bytes.withUnsafeBytes { Glibc.send(descriptor, $0.baseAddress! + offset, $0.count - offset, Int32(MSG_NOSIGNAL)) }
            if n < 0 {
                if errno == EINTR { continue }
                if errno == EAGAIN || errno == EWOULDBLOCK { throw HTTPConnectionError.timedOut }
                if errno == EPIPE || errno == ECONNRESET { throw HTTPConnectionError.closed }
                throw HTTPConnectionError.system("send", errno)
            }
            offset += n
        }
    }

    public func send(_ text: String) throws { try send(Array(text.utf8)) }

    /// Sends a request and reads its response.
    /// - Parameter headers: sent as given, after `Host`; `Content-Length`
    ///   is added for a body unless `headers` has one or `Transfer-Encoding`.
    public func request(_ method: String, _ path: String, headers: [(String, String)] = [], body: [UInt8]? = nil) throws -> HTTPMessage {
        try send(Self.encode(method, path, headers: headers, body: body))
        return try readResponse(method: method)
    }

    /// The bytes of a request, as ``request(_:_:headers:body:)`` sends them.
    public static func encode(_ method: String, _ path: String, headers: [(String, String)] = [], body: [UInt8]? = nil) -> [UInt8] {
        var head = "\(method) \(path) HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        for (name, value) in headers { head += "\(name): \(value)\r\n" }
        let names = Set(headers.map { $0.0.lowercased() })
        if let body, !names.contains("content-length"), !names.contains("transfer-encoding") {
            head += "Content-Length: \(body.count)\r\n"
        }
        head += "\r\n"
        return Array(head.utf8) + (body ?? [])
    }

    /// Reads one response. `method` tells whether a body follows (`HEAD`).
    public func readResponse(method: String = "GET") throws -> HTTPMessage {
        var headEnd: Int?
        while true {
            if let range = find([13, 10, 13, 10], in: buffer) { headEnd = range; break }
            if buffer.count > 1 << 20 { throw HTTPConnectionError.malformed("header section too long") }
            guard try fill() else { throw HTTPConnectionError.closed }
        }
        let headBytes = Array(buffer[..<headEnd!])
        buffer.removeFirst(headEnd! + 4)
        let lines = String(decoding: headBytes, as: UTF8.self).components(separatedBy: "\r\n")
        let statusParts = lines[0].split(separator: " ", maxSplits: 2, omittingEmptySubsequences: false)
        guard statusParts.count >= 2, statusParts[0].hasPrefix("HTTP/"), let status = Int(statusParts[1]) else {
            throw HTTPConnectionError.malformed("status line '\(lines[0])'")
        }
        var headers: [(name: String, value: String)] = []
        for line in lines.dropFirst() {
            guard let colon = line.firstIndex(of: ":") else { continue }
            headers.append((String(line[..<colon]), line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)))
        }
        func value(_ name: String) -> String? { headers.first { $0.name.lowercased() == name }?.value }
        var body: [UInt8] = []
        if method == "HEAD" || status == 204 || status == 304 || (100..<200).contains(status) {
            // No body.
        } else if let length = value("content-length").flatMap(Int.init) {
            while buffer.count < length { guard try fill() else { throw HTTPConnectionError.closed } }
            body = Array(buffer[..<length])
            buffer.removeFirst(length)
        } else if value("transfer-encoding")?.lowercased().contains("chunked") == true {
            body = try readChunked()
        } else {
            while try fill() {}
            body = buffer
            buffer = []
        }
        return HTTPMessage(status: status, reason: statusParts.count > 2 ? String(statusParts[2]) : "", headers: headers, body: body)
    }

    /// True when the server closes the connection (end of stream or a
    /// reset) within `timeout` seconds times ``TestPatience/factor``, as
    /// every wait; anything it sends first is dropped.
    public func waitForClose(timeout: Double) -> Bool {
        let deadline = Date().addingTimeInterval(timeout * TestPatience.factor)
        while Date() < deadline {
            var fds = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
            let remaining = Int32(max(1, deadline.timeIntervalSinceNow * 1000))
            let n = poll(&fds, 1, remaining)
            if n <= 0 { continue }
            var chunk = [UInt8](repeating: 0, count: 65536)
            let got = recv(descriptor, &chunk, chunk.count, 0)
            if got == 0 { return true }
            if got < 0 && errno != EINTR && errno != EAGAIN { return true }
        }
        return false
    }

    /// Whether the server has sent something, or closed, that is not read
    /// yet: a look that does not wait.
    public var hasAnswered: Bool {
        var fds = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
        return !buffer.isEmpty || poll(&fds, 1, 0) > 0
    }

    /// Half-closes the sending side: the server sees the end of the request stream.
    public func shutdownWrite() { Glibc.shutdown(descriptor, Int32(SHUT_WR)) }

    private func readChunked() throws -> [UInt8] {
        var body: [UInt8] = []
        while true {
            let line = try readLine()
            guard let size = Int(line.split(separator: ";")[0].trimmingCharacters(in: .whitespaces), radix: 16) else {
                throw HTTPConnectionError.malformed("chunk size '\(line)'")
            }
            if size == 0 {
                while try !readLine().isEmpty {}
                return body
            }
            while buffer.count < size + 2 { guard try fill() else { throw HTTPConnectionError.closed } }
            body += buffer[..<size]
            buffer.removeFirst(size + 2)
        }
    }

    private func readLine() throws -> String {
        while true {
            if let end = find([13, 10], in: buffer) {
                let line = String(decoding: buffer[..<end], as: UTF8.self)
                buffer.removeFirst(end + 2)
                return line
            }
            guard try fill() else { throw HTTPConnectionError.closed }
        }
    }

    /// Reads more into the buffer; false at end of stream.
    private func fill() throws -> Bool {
        while true {
            let n = chunk.withUnsafeMutableBytes { recv(descriptor, $0.baseAddress, $0.count, 0) }
            if n > 0 {
                buffer += chunk[..<n]
                return true
            }
            if n == 0 { return false }
            if errno == EINTR { continue }
            if errno == EAGAIN || errno == EWOULDBLOCK { throw HTTPConnectionError.timedOut }
            if errno == ECONNRESET { return false }
            throw HTTPConnectionError.system("recv", errno)
        }
    }

    private func find(_ needle: [UInt8], in haystack: [UInt8]) -> Int? {
        guard haystack.count >= needle.count else { return nil }
        var i = 0
        while i <= haystack.count - needle.count {
            var j = 0
            while j < needle.count && haystack[i + j] == needle[j] { j += 1 }
            if j == needle.count { return i }
            i += 1
        }
        return nil
    }
}
