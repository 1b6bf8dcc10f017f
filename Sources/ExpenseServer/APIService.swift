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
        let reason = switch termination {
        case .timeout: "closed=timeout"
        case .clientGone: "closed=client-gone"
        case .shutdown: "closed=shutdown"
        case .completed, .error: "closed=http-error"
        }
        log.access(AccessEntry(method: "-", path: RequestTarget(target).path, status: nil,
                               durationNanoseconds: durationNanoseconds, transactionID: nil, replayed: false, note: reason))
    }

    func libraryMessage(_ message: String) {
        log.log(.warning, "libmicrohttpd: \(message)")
    }
}
