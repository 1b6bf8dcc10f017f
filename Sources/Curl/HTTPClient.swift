internal import CCurl
import Posix
import Synchronization

/// An HTTP client on libcurl's multi interface: one dedicated thread runs
/// every transfer (so no blocking call touches Swift's cooperative pool),
/// connections to the server are reused, and several requests can be in
/// flight at once.
public final class HTTPClient: Sendable {
    private let multi: MultiHandle
    private let maxConnections: Int
    private let state = Mutex(State())

    private struct State: ~Copyable {
        var pending: [(HTTPRequest, @Sendable (Result<HTTPResponse, TransportError>) -> Void)] = []
        var stopping = false
        /// The thread is waiting in `curl_multi_poll` (or about to).
        var sleeping = false
    }

    /// Wraps `curl_global_init`, which must run before any thread uses curl.
    private static let globalInit: Void = {
        _ = curl_global_init(ccurl_global_default())
    }()

    /// - Parameter maxConnections: transfers (and connections to one host)
    ///   at once. Requests beyond it wait here, in order, and start as
    ///   transfers end: their timeouts count from then, not while waiting.
    public init(maxConnections: Int = 4) {
        _ = Self.globalInit
        self.maxConnections = maxConnections
        multi = MultiHandle(maxConnections: maxConnections)
        Threads.spawn(name: "http") { [self] in run() }
    }

    /// Sends `request` and returns the response, or the transport failure.
    public func send(_ request: HTTPRequest) async -> Result<HTTPResponse, TransportError> {
        await withCheckedContinuation { continuation in
            start(request) { continuation.resume(returning: $0) }
        }
    }

    /// Sends `request` without waiting: `completion` runs once, on the
    /// client's thread, with the response or the transport failure (at
    /// once, on the caller's thread, when the client is shut down). It must
    /// not block: hand the result on.
    public func start(_ request: HTTPRequest, completion: @escaping @Sendable (Result<HTTPResponse, TransportError>) -> Void) {
        // The thread is woken only when it sleeps: awake, it takes every
        // pending request before it would sleep (so a completion handler
        // that hands over the next request costs no wake-up), and once woken
        // it takes those handed over meanwhile too.
        let accepted = state.withLock { state -> Bool? in
            guard !state.stopping else { return nil }
            state.pending.append((request, completion))
            defer { state.sleeping = false }
            return state.sleeping
        }
        if let wake = accepted {
            if wake { multi.wakeUp() }
        } else {
            completion(.failure(TransportError(code: -1, message: "the HTTP client is shut down")))
        }
    }

    /// Stops the thread; requests in flight end with a transport error.
    public func shutdown() {
        state.withLock { $0.stopping = true }
        multi.wakeUp()
    }

    private func run() {
        var transfers: [UnsafeMutableRawPointer: Transfer] = [:]
        // Requests handed over but not yet started, oldest first: about
        // `maxConnections` of them while a drain keeps the client busy.
        var waiting: [(HTTPRequest, @Sendable (Result<HTTPResponse, TransportError>) -> Void)] = []
        func startWaiting() {
            while transfers.count < maxConnections && !waiting.isEmpty {
                let (request, complete) = waiting.removeFirst()
                guard let transfer = Transfer(request: request, complete: complete) else {
                    complete(.failure(TransportError(code: 27, message: "out of memory")))
                    continue
                }
                if let problem = transfer.configure() {
                    complete(.failure(TransportError(code: 3, message: problem)))
                    continue
                }
                multi.add(transfer.easy)
                transfers[transfer.easy] = transfer
            }
        }
        while true {
            let (incoming, stopping) = state.withLock { state in
                defer { state.pending = [] }
                return (state.pending, state.stopping)
            }
            waiting += incoming
            if stopping {
                let shutDown = TransportError(code: -1, message: "the HTTP client is shut down")
                for (easy, transfer) in transfers {
                    multi.remove(easy)
                    transfer.complete(.failure(shutDown))
                }
                for (_, complete) in waiting { complete(.failure(shutDown)) }
                return
            }
            startWaiting()
            multi.perform()
            while let (easy, code) = multi.nextFinished() {
                multi.remove(easy)
                transfers.removeValue(forKey: easy)?.finish(code)
                startWaiting()
            }
            // Woken by curl's own timers, socket activity, or wakeUp(); not
            // when requests were handed over since the top of the loop.
            let idle = state.withLock { state -> Bool in
                guard state.pending.isEmpty && !state.stopping else { return false }
                state.sleeping = true
                return true
            }
            if idle {
                multi.poll(timeoutMilliseconds: transfers.isEmpty ? Int32.max : 1000)
                state.withLock { $0.sleeping = false }
            }
        }
    }
}

/// The multi handle, used only on the client's thread, except `wakeUp`,
/// which libcurl documents as safe from any thread.
private final class MultiHandle: @unchecked Sendable {
    let handle: UnsafeMutableRawPointer

    init(maxConnections: Int) {
        guard let handle = curl_multi_init() else { preconditionFailure("curl_multi_init failed: out of memory") }
        self.handle = handle
        _ = ccurl_multi_setopt_long(handle, CURLMOPT_MAX_HOST_CONNECTIONS, maxConnections)
        _ = ccurl_multi_setopt_long(handle, CURLMOPT_MAXCONNECTS, maxConnections)
    }

    /// Wraps `curl_multi_wakeup`.
    func wakeUp() { _ = curl_multi_wakeup(handle) }
    /// Wraps `curl_multi_add_handle`.
    func add(_ easy: UnsafeMutableRawPointer) { _ = curl_multi_add_handle(handle, easy) }
    /// Wraps `curl_multi_remove_handle`.
    func remove(_ easy: UnsafeMutableRawPointer) { _ = curl_multi_remove_handle(handle, easy) }
    /// Wraps `curl_multi_perform`.
    func perform() {
        var running: Int32 = 0
        _ = curl_multi_perform(handle, &running)
    }
    /// Wraps `curl_multi_poll`.
    func poll(timeoutMilliseconds: Int32) {
        var ready: Int32 = 0
        _ = curl_multi_poll(handle, nil, 0, timeoutMilliseconds, &ready)
    }
    /// Wraps `curl_multi_info_read`: the next finished transfer and its result.
    func nextFinished() -> (UnsafeMutableRawPointer, CURLcode)? {
        var remaining: Int32 = 0
        while let message = curl_multi_info_read(handle, &remaining) {
            if message.pointee.msg == CURLMSG_DONE, let easy = message.pointee.easy_handle {
                return (easy, message.pointee.data.result)
            }
        }
        return nil
    }
}
