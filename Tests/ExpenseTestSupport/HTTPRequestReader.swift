import Foundation

/// One HTTP/1.1 request as read off a connection by a test server.
public struct ReceivedRequest: Sendable {
    public let method: String
    /// The request target as sent (path and query).
    public let path: String
    /// `HTTP/1.1` or `HTTP/1.0`.
    public let version: String
    /// Header names lowercased; a repeated header keeps its last value.
    public let headers: [String: String]
    /// Header lines in order, names as sent: what a proxy forwards.
    public let headerLines: [(name: String, value: String)]
    /// The body, de-chunked when it came chunked.
    public let body: [UInt8]

    /// Whether the client asked to close the connection after this request.
    public var wantsClose: Bool {
        let connection = headers["connection"]?.lowercased() ?? ""
        return version == "HTTP/1.0" ? !connection.contains("keep-alive") : connection.contains("close")
    }
}

/// Reads requests one after another from a connected socket: a head up to
/// 1 MiB, then a body framed by `Content-Length` or chunked encoding. A
/// client that sends `Expect: 100-continue` is told to go on. Blocking; one
/// thread per connection.
public struct HTTPRequestReader {
    /// Why no request could be read.
    public enum Failure: Error, Equatable {
        /// The peer closed (or reset) the connection between requests or mid-request.
        case closed
        /// The bytes are not an HTTP/1.1 request: the text says what.
        case malformed(String)
    }

    private let descriptor: Int32
    private var buffer: [UInt8] = []
    private static let headLimit = 1 << 20

    public init(descriptor: Int32) { self.descriptor = descriptor }

    /// The next request on the connection.
    public mutating func next() throws(Failure) -> ReceivedRequest {
        let end = try readHead()
        let head = String(decoding: buffer[..<end], as: UTF8.self)
        buffer.removeFirst(end + 4)
        var lines = head.components(separatedBy: "\r\n")
        let requestLine = lines.removeFirst().split(separator: " ", omittingEmptySubsequences: false)
        guard requestLine.count == 3, !requestLine[0].isEmpty, requestLine[2].hasPrefix("HTTP/1.") else {
            throw .malformed("request line")
        }
        var headers: [String: String] = [:]
        var headerLines: [(name: String, value: String)] = []
        for line in lines {
            guard let colon = line.firstIndex(of: ":"), colon != line.startIndex else { throw .malformed("header line") }
            let name = String(line[..<colon])
            let value = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
            headers[name.lowercased()] = value
            headerLines.append((name, value))
        }
        if headers["expect"]?.lowercased() == "100-continue" {
            send(Array("HTTP/1.1 100 Continue\r\n\r\n".utf8))
        }
        let body: [UInt8]
        if headers["transfer-encoding"]?.lowercased().contains("chunked") == true {
            body = try readChunkedBody()
        } else if let text = headers["content-length"] {
            guard let length = Int(text), length >= 0 else { throw .malformed("Content-Length") }
            while buffer.count < length { try fill() }
            body = Array(buffer[..<length])
            buffer.removeFirst(length)
        } else {
            body = []
        }
        return ReceivedRequest(method: String(requestLine[0]), path: String(requestLine[1]), version: String(requestLine[2]),
                               headers: headers, headerLines: headerLines, body: body)
    }

    /// Where the blank line ending the head starts, reading until it came.
    private mutating func readHead() throws(Failure) -> Int {
        var searched = 0
        while true {
            if let end = Self.find([13, 10, 13, 10], in: buffer, from: max(0, searched - 3)) { return end }
            searched = buffer.count
            if buffer.count > Self.headLimit { throw .malformed("head over 1 MiB") }
            try fill()
        }
    }

    private mutating func readChunkedBody() throws(Failure) -> [UInt8] {
        var body: [UInt8] = []
        while true {
            let line = try readLine()
            guard let size = Int(line.split(separator: ";").first.map(String.init)?.trimmingCharacters(in: .whitespaces) ?? "", radix: 16),
                  size >= 0 else { throw .malformed("chunk size") }
            if size == 0 {
                while try !readLine().isEmpty {}  // trailers
                return body
            }
            while buffer.count < size + 2 { try fill() }
            body += buffer[..<size]
            buffer.removeFirst(size + 2)
        }
    }

    private mutating func readLine() throws(Failure) -> String {
        while true {
            if let end = Self.find([13, 10], in: buffer, from: 0) {
                let line = String(decoding: buffer[..<end], as: UTF8.self)
                buffer.removeFirst(end + 2)
                return line
            }
            if buffer.count > Self.headLimit { throw .malformed("line over 1 MiB") }
            try fill()
        }
    }

    private mutating func fill() throws(Failure) {
        var chunk = [UInt8](repeating: 0, count: 65536)
        while true {
            let n = chunk.withUnsafeMutableBytes { recv(descriptor, $0.baseAddress, $0.count, 0) }
            if n > 0 {
                buffer.append(contentsOf: chunk[0..<n])
                return
            }
            if n < 0 && errno == EINTR { continue }
            throw .closed
        }
    }

    private func send(_ bytes: [UInt8]) {
        _ = bytes.withUnsafeBytes { Glibc.send(descriptor, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
    }

    private static func find(_ needle: [UInt8], in haystack: [UInt8], from start: Int) -> Int? {
        guard haystack.count >= needle.count, start <= haystack.count - needle.count else { return nil }
        return haystack[start...].firstRange(of: needle)?.lowerBound
    }
}
