import HTTPD

/// The API as an ``HTTPService``: shared state for every exchange.
final class APIService: HTTPService {
    let store: ExpenseStore
    let configuration: ServeConfiguration
    let inFlight = InFlightKeys()
    let faults: FaultInjector
    let log: ServerLog

    init(store: ExpenseStore, configuration: ServeConfiguration, log: ServerLog) {
        self.store = store
        self.configuration = configuration
        self.log = log
        faults = FaultInjector(configuration.faults)
    }

    func makeExchange(for head: HTTPRequestHead) -> any HTTPExchange {
        APIExchange(service: self, head: head)
    }

    func requestAbandoned(target: String, termination: HTTPTermination, durationNanoseconds: UInt64) {
        let reason = termination.note ?? "closed=http-error"
        log.access(AccessEntry(method: "-", path: RequestTarget(target).path, status: nil,
                               durationNanoseconds: durationNanoseconds, transactionID: nil, replayed: false, note: reason))
    }

    func libraryMessage(_ message: String) {
        log.log(.warning, "libmicrohttpd: \(message)")
    }
}

extension HTTPTermination {
    /// The access log's note for an exchange that ended this way without
    /// an answer (docs/server.md, "Access log"); `nil` for the ways that
    /// need no note of their own.
    var note: String? {
        switch self {
        case .timeout: "closed=timeout"
        case .headTimeout: "closed=head-timeout"
        case .evicted: "closed=evicted"
        case .connectionLimit: "closed=connection-limit"
        case .clientGone: "closed=client-gone"
        case .shutdown: "closed=shutdown"
        case .completed, .error: nil
        }
    }
}
