import Posix

/// One HTTP request for ``HTTPClient``.
public struct HTTPRequest: Sendable {
    public enum Body: Sendable {
        case none
        case bytes([UInt8])
        /// Streamed from a file the caller opened, read from offset 0 with
        /// `pread` (its position is neither used nor moved), never whole
        /// into memory. The caller opens it, so a file that cannot be read
        /// is the caller's to say before any request is made.
        case file(FileDescriptor, size: Int64)
        /// The rest of a file from `offset` on, `size` bytes to its end,
        /// read as `.file`'s are (what a resumable upload still has to send).
        case filePart(FileDescriptor, offset: Int64, size: Int64)
    }

    public var method: String
    public var url: String
    /// Header name and value pairs. An `Authorization` header is sent but
    /// never appears in any error this module produces.
    public var headers: [(String, String)]
    public var body: Body
    public var connectTimeoutMilliseconds: Int64
    public var totalTimeoutMilliseconds: Int64
    /// Abort when fewer than this many bytes per second move for `lowSpeedSeconds`.
    public var lowSpeedBytesPerSecond: Int = 100
    public var lowSpeedSeconds: Int = 30
    /// PEM file of the certificate authorities to trust for `https://`,
    /// instead of the system's (`CURLOPT_CAINFO`); `nil` for the system's.
    public var caFile: String?
    /// False for a request that must reach the server at most once per
    /// call, such as a create against a backend without idempotency keys.
    /// libcurl (7.88.1 measured) sends a request again by itself, on another
    /// connection, when a reused connection closes or resets without
    /// answering, and reports the last answer: one call, two creates. Such a
    /// request goes on a new connection (`CURLOPT_FRESH_CONNECT`), where
    /// libcurl does not resend; `CURLOPT_FORBID_REUSE` alone does not stop
    /// it (docs/backends.md).
    public var isReplaySafe = true
    /// Over this, the response body is cut and the request fails (a
    /// hostile server cannot fill memory); a receipt's download raises it
    /// to `receipt_max_bytes`.
    public var maxResponseBytes = 16 << 20
    /// Send `Expect: 100-continue` and hold the body until the server says
    /// go (or a second passed): a request the server may refuse from its
    /// head alone (an append at an offset it does not hold) then costs no
    /// body. Off otherwise: one round trip less.
    public var expectsContinue = false

    public init(method: String, url: String, headers: [(String, String)] = [], body: Body = .none,
                connectTimeoutMilliseconds: Int64 = 10_000, totalTimeoutMilliseconds: Int64 = 60_000) {
        self.method = method
        self.url = url
        self.headers = headers
        self.body = body
        self.connectTimeoutMilliseconds = connectTimeoutMilliseconds
        self.totalTimeoutMilliseconds = totalTimeoutMilliseconds
    }
}

/// What came back: the status, the headers (names lowercased), the body.
public struct HTTPResponse: Sendable, Equatable {
    public let status: Int
    public let headers: [(name: String, value: String)]
    public let body: [UInt8]

    public init(status: Int, headers: [(name: String, value: String)], body: [UInt8]) {
        self.status = status
        self.headers = headers
        self.body = body
    }

    /// The first value of a header, by case-insensitive name.
    public func header(_ name: String) -> String? {
        let lowered = name.lowercased()
        return headers.first { $0.name == lowered }?.value
    }

    public static func == (a: HTTPResponse, b: HTTPResponse) -> Bool {
        a.status == b.status && a.body == b.body && a.headers.map(\.name) == b.headers.map(\.name) && a.headers.map(\.value) == b.headers.map(\.value)
    }
}

/// No HTTP response at all: refused, reset, timed out, TLS failed, or the
/// client was shut down. The message is libcurl's, with no request data.
public struct TransportError: Error, Sendable, Equatable, CustomStringConvertible {
    /// libcurl's `CURLcode`, or -1 when the client was shut down.
    public let code: Int32
    public let message: String
    /// False when not one byte of the request left this machine (refused,
    /// unresolvable, connect timeout): the server cannot have it.
    public let requestSent: Bool

    public init(code: Int32, message: String, requestSent: Bool = true) {
        self.code = code
        self.message = message
        self.requestSent = requestSent
    }

    public var description: String { message }

    /// The request did not finish within its timeout.
    public var isTimeout: Bool { code == 28 }

    /// The response body passed ``HTTPRequest/maxResponseBytes`` and was
    /// cut (`CURLE_WRITE_ERROR`: the write callback refuses past the limit,
    /// and refuses nothing else).
    public var isResponseTooLarge: Bool { code == 23 }
}
