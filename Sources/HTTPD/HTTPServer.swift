#if canImport(Glibc)
import Glibc
#endif
internal import CMicroHTTPD
import Posix

/// An HTTP/1.1 server on libmicrohttpd, one thread per connection: an
/// exchange may block its thread (on a durable commit) without holding up
/// other connections, and never touches Swift's cooperative pool.
public final class HTTPServer: Sendable {
    /// Limits that protect the server from its clients.
    public struct Options: Sendable {
        /// Connections served at once. At the limit, a new connection takes
        /// the place of the one that has waited longest for a request head
        /// (``HeadDeadlines``); when none is waiting, the new one is closed.
        public var connectionLimit: Int = 256
        /// Connections from one IP address at once; 0 for no limit.
        public var perAddressConnectionLimit: Int = 0
        /// Seconds a connection may stay silent (while sending its headers,
        /// its body, or between keep-alive requests) before it is closed.
        public var idleTimeoutSeconds: Int = 30
        /// Seconds a whole request head (request line and headers) may take
        /// to arrive, from the connection's opening or the end of its
        /// previous exchange; a late connection is closed.
        public var headTimeoutSeconds: Int = 10
        /// Bytes of buffer per connection; the request line and headers must fit.
        public var connectionMemoryLimit: Int = 32 * 1024
        /// Stack of each connection thread; 0 for the system's default.
        public var threadStackSize: Int = 0
        /// The listening socket is IPv6.
        public var isIPv6 = false
        /// Speak TLS (libmicrohttpd with GnuTLS) with this key and certificate.
        public var tls: TLSCredentials?

        public init() {}
    }

    /// A PEM certificate (chain) and its unencrypted PEM private key.
    public struct TLSCredentials: Sendable, Equatable {
        public var certificatePEM: String
        public var keyPEM: String

        public init(certificatePEM: String, keyPEM: String) {
            self.certificatePEM = certificatePEM
            self.keyPEM = keyPEM
        }
    }

    /// True when this libmicrohttpd was built with TLS (Debian's is, with
    /// GnuTLS). Wraps `MHD_is_feature_supported(MHD_FEATURE_TLS)`.
    public static var isTLSSupported: Bool { MHD_is_feature_supported(.FEATURE_TLS) == MHD_Result.YES }

    private let daemon: Handle
    private let context: Unmanaged<ServerContext>  // released in stop()
    /// The key and certificate as C strings, kept for the daemon's life.
    private let tlsStrings: TLSStrings?

    /// Starts serving on an already listening socket (`TCPSocket.listen`, or
    /// one handed over by the service manager). Wraps `MHD_start_daemon`.
    /// - Throws: ``HTTPServerError`` when the library refuses to start.
    public init(listening socket: FileDescriptor, options: Options, service: any HTTPService) throws(HTTPServerError) {
        // libmicrohttpd closes the socket it is given on stop; give it its own.
        let listenCopy = Glibc.fcntl(socket.rawValue, F_DUPFD_CLOEXEC, 0)
        guard listenCopy >= 0 else { throw HTTPServerError("Failed to duplicate the listening socket: errno \(errno)") }
        let connections: ConnectionGuard
        do {
            connections = try ConnectionGuard(limit: options.connectionLimit, headTimeoutSeconds: options.headTimeoutSeconds)
        } catch {
            Glibc.close(listenCopy)
            throw HTTPServerError("Failed to start the connection timer: \(error)")
        }
        if options.tls != nil && !Self.isTLSSupported {
            Glibc.close(listenCopy)
            connections.stop()
            throw HTTPServerError("this libmicrohttpd was built without TLS")
        }
        let context = Unmanaged.passRetained(ServerContext(service: service, connections: connections))
        // ITC: quiesce() needs it to stop the listening thread.
        var flags = MHD_USE_THREAD_PER_CONNECTION.rawValue | MHD_USE_INTERNAL_POLLING_THREAD.rawValue
            | MHD_USE_POLL.rawValue | MHD_USE_ERROR_LOG.rawValue | MHD_USE_ITC.rawValue
        if options.isIPv6 { flags |= MHD_USE_IPv6.rawValue }
        let tls = options.tls.map(TLSStrings.init)
        if tls != nil { flags |= MHD_USE_TLS.rawValue }
        var extra = tls?.options ?? []
        extra.append(MHD_OptionItem(option: .END, value: 0, ptr_value: nil))
        let daemon = cmicrohttpd_start_daemon(
            flags, listenCopy,
            accessHandler, completedHandler, requestLineHandler, connectionHandler, libraryLogger,
            context.toOpaque(),
            UInt32(clamping: socketLimit(served: options.connectionLimit)),
            UInt32(clamping: options.perAddressConnectionLimit),
            UInt32(clamping: options.idleTimeoutSeconds),
            options.connectionMemoryLimit,
            options.threadStackSize,
            extra)
        guard let daemon else {
            Glibc.close(listenCopy)
            connections.stop()
            context.release()
            throw HTTPServerError("libmicrohttpd refused to start (see its message above)")
        }
        self.daemon = Handle(daemon)
        self.context = context
        tlsStrings = tls
    }

    /// Stops accepting new connections; the open ones are served on until
    /// ``stop()``. For handing the listening socket to a successor (a new
    /// certificate). Wraps `MHD_quiesce_daemon`.
    public func quiesce() {
        let socket = MHD_quiesce_daemon(daemon.pointer)
        // What it returns is our copy of the listening socket, now ours to close.
        if socket >= 0 { Glibc.close(socket) }
    }

    /// Stops accepting, closes every connection once its current exchange
    /// returned, and waits for their threads. Call once. Wraps `MHD_stop_daemon`.
    public func stop() {
        MHD_stop_daemon(daemon.pointer)
        context.takeUnretainedValue().connections.stop()
        context.release()
        tlsStrings?.free()
    }

    /// Connections open right now. Wraps `MHD_get_daemon_info`.
    public var connectionCount: Int {
        guard let info = cmicrohttpd_daemon_info(daemon.pointer, .DAEMON_INFO_CURRENT_CONNECTIONS) else { return 0 }
        return Int(info.pointee.num_connections)
    }
}

/// libmicrohttpd's own connection limit. The guard enforces the limit on
/// connections served; libmicrohttpd's counts every socket it holds, the
/// connections the guard is closing too, and it closes a new connection on
/// arrival when that count is reached, before the guard sees it. A closed
/// connection holds its socket until its thread has run and seen the end
/// of the stream, which on a starved CPU can take longer than slow clients
/// take to come back: with room for only as many again as are served,
/// clients evicted and reconnecting filled it, and a normal request was
/// refused. So the bound is what the process can hold: its descriptor
/// limit, less one per served connection (a receipt file it may open) and
/// a reserve for the server's own (database, log, listening socket).
func socketLimit(served: Int) -> Int {
    let reserve = 64
    var limit = rlimit()
    guard getrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &limit) == 0 else { return served * 2 }
    let descriptors = Int(clamping: min(limit.rlim_cur, rlim_t(UInt32.max)))
    return max(served * 2, descriptors - served - reserve)
}

/// Why the server could not start.
public struct HTTPServerError: Error, Sendable, CustomStringConvertible {
    public let description: String
    init(_ description: String) { self.description = description }
}

/// The key and certificate copied as C strings, which libmicrohttpd reads
/// from `MHD_OPTION_HTTPS_MEM_KEY` and `MHD_OPTION_HTTPS_MEM_CERT`; freed
/// after the daemon stops.
private final class TLSStrings: @unchecked Sendable {
    let key: UnsafeMutablePointer<CChar>
    let certificate: UnsafeMutablePointer<CChar>

    init(_ credentials: HTTPServer.TLSCredentials) {
        key = strdup(credentials.keyPEM)
        certificate = strdup(credentials.certificatePEM)
    }

    var options: [MHD_OptionItem] {
        [MHD_OptionItem(option: .HTTPS_MEM_KEY, value: 0, ptr_value: UnsafeMutableRawPointer(key)),
         MHD_OptionItem(option: .HTTPS_MEM_CERT, value: 0, ptr_value: UnsafeMutableRawPointer(certificate))]
    }

    func free() {
        // The key is secret: overwritten before it goes back to the allocator.
        memset(key, 0, strlen(key))
        Glibc.free(key)
        Glibc.free(certificate)
    }
}

/// The daemon pointer. libmicrohttpd's calls on a daemon are thread-safe.
private final class Handle: @unchecked Sendable {
    let pointer: OpaquePointer
    init(_ pointer: OpaquePointer) { self.pointer = pointer }
}

/// What every callback reaches through its `cls` pointer.
private final class ServerContext: Sendable {
    let service: any HTTPService
    let connections: ConnectionGuard
    init(service: any HTTPService, connections: ConnectionGuard) {
        self.service = service
        self.connections = connections
    }
}

/// One request's state, from its request line to its completion. Lives in
/// libmicrohttpd's per-request pointer; touched only by the connection's thread.
private final class RequestContext {
    let target: String
    let startNanoseconds = Clock.monotonicNanoseconds
    var exchange: (any HTTPExchange)?
    /// An answer decided before the (absent) body, sent on the next call so
    /// the connection can stay open: libmicrohttpd closes connections whose
    /// response was queued in the first call.
    var deferred: HTTPAction?
    var status: Int?

    init(target: String) { self.target = target }
}

// MARK: - Callbacks (libmicrohttpd calls these on the connection's thread)

/// `MHD_OPTION_URI_LOG_CALLBACK`: the request line is in. Its return value
/// becomes the per-request pointer; the completed callback releases it.
private let requestLineHandler: cmicrohttpd_uri_callback = { _, uri, _ in
    let target = uri.map { String(decoding: UnsafeRawBufferPointer(start: $0, count: strlen($0)), as: UTF8.self) } ?? ""
    return Unmanaged.passRetained(RequestContext(target: target)).toOpaque()
}

private let accessHandler: MHD_AccessHandlerCallback = { cls, connection, _, method, version, uploadData, uploadDataSize, perRequest in
    guard let cls, let connection, let perRequest, let raw = perRequest.pointee, let uploadDataSize else { return MHD_Result.NO }
    let server = Unmanaged<ServerContext>.fromOpaque(cls).takeUnretainedValue()
    let request = Unmanaged<RequestContext>.fromOpaque(raw).takeUnretainedValue()

    guard let exchange = request.exchange else {
        // The first call: the head is complete, unless it came too late.
        guard server.connections.headArrived(connectionID(connection)) else { return MHD_Result.NO }
        let head = HTTPRequestHead(
            method: method.map { String(cString: $0) } ?? "",
            target: request.target,
            version: version.map { String(cString: $0) } ?? "",
            headers: collectHeaders(connection))
        let exchange = server.service.makeExchange(for: head)
        request.exchange = exchange
        guard let action = exchange.start() else { return MHD_Result.YES }
        if head.hasBody { return perform(action, on: connection, for: request) }
        request.deferred = action
        return MHD_Result.YES
    }

    if uploadDataSize.pointee > 0 {
        let bytes = UnsafeRawBufferPointer(start: uploadData, count: uploadDataSize.pointee)
        uploadDataSize.pointee = 0
        if request.deferred != nil { return MHD_Result.YES }
        return exchange.receive(bytes) ? MHD_Result.YES : MHD_Result.NO
    }

    let action = request.deferred ?? exchange.finish()
    request.deferred = nil
    return perform(action, on: connection, for: request)
}

private let completedHandler: MHD_RequestCompletedCallback = { cls, connection, perRequest, code in
    guard let cls, let perRequest, let raw = perRequest.pointee else { return }
    perRequest.pointee = nil
    let server = Unmanaged<ServerContext>.fromOpaque(cls).takeUnretainedValue()
    let request = Unmanaged<RequestContext>.fromOpaque(raw).takeRetainedValue()
    let closedByGuard = connection.flatMap { server.connections.exchangeEnded(connectionID($0)) }
    let termination: HTTPTermination
    switch (closedByGuard, code) {
    case (.headTimeout, _): termination = .headTimeout
    case (.evicted, _): termination = .evicted
    case (.connectionLimit, _): termination = .connectionLimit
    case (nil, .REQUEST_TERMINATED_COMPLETED_OK): termination = .completed
    case (nil, .REQUEST_TERMINATED_TIMEOUT_REACHED): termination = .timeout
    case (nil, .REQUEST_TERMINATED_DAEMON_SHUTDOWN): termination = .shutdown
    case (nil, .REQUEST_TERMINATED_READ_ERROR), (nil, .REQUEST_TERMINATED_CLIENT_ABORT): termination = .clientGone
    default: termination = .error
    }
    if let exchange = request.exchange {
        exchange.complete(status: request.status, termination: termination)
    } else {
        server.service.requestAbandoned(target: request.target, termination: termination,
                                        durationNanoseconds: Clock.monotonicNanoseconds - request.startNanoseconds)
    }
}

/// `MHD_OPTION_NOTIFY_CONNECTION`: a connection was accepted (on the daemon's
/// thread, before the connection's own starts), or is about to be closed.
private let connectionHandler: MHD_NotifyConnectionCallback = { cls, connection, _, code in
    guard let cls, let connection else { return }
    let server = Unmanaged<ServerContext>.fromOpaque(cls).takeUnretainedValue()
    switch code {
    case .CONNECTION_NOTIFY_STARTED:
        guard let info = cmicrohttpd_connection_info(connection, .CONNECTION_INFO_CONNECTION_FD) else { return }
        server.connections.opened(connectionID(connection), descriptor: info.pointee.connect_fd)
    case .CONNECTION_NOTIFY_CLOSED:
        server.connections.closed(connectionID(connection))
    default:
        break
    }
}

/// `MHD_OPTION_EXTERNAL_LOGGER`: the library's own diagnostics, formatted
/// with `vsnprintf(3)` and handed to the service as one line.
private let libraryLogger: MHD_LogCallback = { cls, format, arguments in
    guard let cls, let format, let arguments else { return }
    let server = Unmanaged<ServerContext>.fromOpaque(cls).takeUnretainedValue()
    var buffer = [CChar](repeating: 0, count: 512)
    _ = vsnprintf(&buffer, buffer.count, format, arguments)
    let bytes = buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }
    let line = String(decoding: bytes, as: UTF8.self)
        .split(whereSeparator: { $0 == "\n" || $0 == "\r" }).joined(separator: " ")
    if !line.isEmpty { server.service.libraryMessage(line) }
}

// MARK: - Helpers

/// A connection's identity for ``HeadDeadlines``: its address, unique while it is open.
private func connectionID(_ connection: OpaquePointer) -> HeadDeadlines.ConnectionID {
    HeadDeadlines.ConnectionID(bitPattern: Int(bitPattern: UnsafeRawPointer(connection)))
}

/// Queues `action`'s response, or reports that the connection must close.
private func perform(_ action: HTTPAction, on connection: OpaquePointer, for request: RequestContext) -> MHD_Result {
    guard case .respond(let response) = action else { return MHD_Result.NO }
    let handle: OpaquePointer?
    switch response.body {
    case .bytes(let bytes):
        handle = bytes.withUnsafeBytes { raw in
            MHD_create_response_from_buffer(raw.count, UnsafeMutableRawPointer(mutating: raw.baseAddress), .RESPMEM_MUST_COPY)
        }
    case .file(let file, let size):
        // libmicrohttpd closes the descriptor it is given when it is done with it.
        let copy = Glibc.fcntl(file.rawValue, F_DUPFD_CLOEXEC, 0)
        handle = copy >= 0 ? MHD_create_response_from_fd(Int(size), copy) : nil
        if handle == nil && copy >= 0 { Glibc.close(copy) }
    }
    guard let handle else { return MHD_Result.NO }
    defer { MHD_destroy_response(handle) }
    for header in response.headers {
        // Refused (MHD_Result.NO) only for names or values with line breaks: never ours.
        _ = MHD_add_response_header(handle, header.name, header.value)
    }
    guard MHD_queue_response(connection, UInt32(response.status), handle) == MHD_Result.YES else { return MHD_Result.NO }
    request.status = response.status
    return MHD_Result.YES
}

/// Every request header, in order. Wraps `MHD_get_connection_values_n`.
private func collectHeaders(_ connection: OpaquePointer) -> [HTTPHeader] {
    final class Collector { var headers: [HTTPHeader] = [] }
    let collector = Collector()
    withExtendedLifetime(collector) {
        _ = MHD_get_connection_values_n(connection, MHD_ValueKind.HEADER_KIND, { cls, _, key, keySize, value, valueSize in
            guard let cls, let key else { return MHD_Result.YES }
            let collector = Unmanaged<Collector>.fromOpaque(cls).takeUnretainedValue()
            let name = String(decoding: UnsafeRawBufferPointer(start: key, count: keySize), as: UTF8.self)
            let text = value.map { String(decoding: UnsafeRawBufferPointer(start: $0, count: valueSize), as: UTF8.self) } ?? ""
            collector.headers.append(HTTPHeader(name, text))
            return MHD_Result.YES
        }, Unmanaged.passUnretained(collector).toOpaque())
    }
    return collector.headers
}
