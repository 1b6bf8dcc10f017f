import Posix

/// A request whose request line and headers have arrived; its body (if any)
/// has not been read yet.
public struct HTTPRequestHead: Sendable {
    /// The method token as sent (`GET`, `POST`, or anything else a client typed).
    public let method: String
    /// The request target exactly as sent, path and query, not percent-decoded.
    public let target: String
    /// `HTTP/1.1` or `HTTP/1.0`.
    public let version: String
    /// Every header in arrival order; names as sent.
    public let headers: [HTTPHeader]

    public init(method: String, target: String, version: String, headers: [HTTPHeader]) {
        self.method = method
        self.target = target
        self.version = version
        self.headers = headers
    }

    /// The values of every header called `name` (case-insensitive).
    public func values(of name: String) -> [String] {
        headers.filter { $0.name.lowercased() == name.lowercased() }.map(\.value)
    }

    /// The first value of the header `name` (case-insensitive), if any.
    public func value(of name: String) -> String? {
        let lower = name.lowercased()
        return headers.first { $0.name.lowercased() == lower }?.value
    }

    /// `Content-Length` as a number, when the header is present and numeric.
    public var contentLength: Int64? {
        value(of: "Content-Length").flatMap { Int64($0.trimmingASCIISpaces()) }
    }

    /// True when a body follows the headers (`Content-Length` above zero, or `Transfer-Encoding`).
    public var hasBody: Bool {
        if value(of: "Transfer-Encoding") != nil { return true }
        return (contentLength ?? 0) > 0
    }
}

/// One header line.
public struct HTTPHeader: Sendable, Equatable {
    public let name: String
    public let value: String
    public init(_ name: String, _ value: String) {
        self.name = name
        self.value = value
    }
}

/// A complete response.
public struct HTTPResponse: Sendable {
    public var status: Int
    /// Extra headers; `Content-Length`, `Date` and `Connection` are the server's.
    public var headers: [HTTPHeader]
    public var body: Body

    public enum Body: Sendable {
        case bytes([UInt8])
        /// The whole of an open regular file of `size` bytes, sent with `sendfile(2)`.
        case file(FileDescriptor, size: Int64)
    }

    public init(status: Int, headers: [HTTPHeader] = [], body: Body = .bytes([])) {
        self.status = status
        self.headers = headers
        self.body = body
    }
}

/// What to do with a request.
public enum HTTPAction: Sendable {
    /// Send this response.
    case respond(HTTPResponse)
    /// Close the connection without answering.
    case close
}

/// Why an exchange ended, from the server's point of view.
public enum HTTPTermination: Sendable, Equatable {
    /// The response was sent completely.
    case completed
    /// The exchange was aborted: the application closed it, or an error occurred.
    case error
    /// The client was idle longer than the connection timeout.
    case timeout
    /// The request head was not complete within the head timeout.
    case headTimeout
    /// The connection was still waiting for its request head when the
    /// connection limit was reached, and had waited longest: it was closed
    /// to make room for a new one.
    case evicted
    /// The connection arrived at the connection limit while no other was
    /// waiting for a head, and was closed.
    case connectionLimit
    /// The server is stopping.
    case shutdown
    /// The client closed the connection or could not be read from.
    case clientGone
}

/// The handling of one request, as its parts arrive. A new one is made for
/// every request, and all its methods run on that connection's own thread,
/// one after another, so it may block (on a database commit, say) and needs
/// no lock of its own.
public protocol HTTPExchange: AnyObject {
    /// The headers are in. Return an action to answer at once, or `nil` to
    /// receive the body. An answer given here to a request that has a body
    /// is sent without reading that body, and the connection closes after it.
    func start() -> HTTPAction?

    /// The next part of the body; the bytes are valid only during the call.
    /// - Returns: false to close the connection at once, unanswered.
    func receive(_ bytes: UnsafeRawBufferPointer) -> Bool

    /// The whole body has arrived (or there was none).
    func finish() -> HTTPAction

    /// The exchange is over. `status` is the status of the response that was
    /// queued, if any.
    func complete(status: Int?, termination: HTTPTermination)
}

/// Makes an exchange for each request.
public protocol HTTPService: Sendable {
    func makeExchange(for head: HTTPRequestHead) -> any HTTPExchange

    /// A request line arrived but the request never reached an exchange:
    /// the HTTP layer rejected its headers, the client went away or was
    /// silent too long before they were complete, or the server closed the
    /// connection because they were late or to make room for another
    /// (``HTTPTermination/headTimeout``, ``HTTPTermination/evicted``).
    func requestAbandoned(target: String, termination: HTTPTermination, durationNanoseconds: UInt64)

    /// A diagnostic from the HTTP library itself, one line.
    func libraryMessage(_ message: String)
}

extension String {
    func trimmingASCIISpaces() -> Substring {
        var s = Substring(self)
        while let c = s.first, c == " " || c == "\t" { s.removeFirst() }
        while let c = s.last, c == " " || c == "\t" { s.removeLast() }
        return s
    }
}
