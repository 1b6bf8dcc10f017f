import HTTPD
import ServerAccounts
import ServerStorage

/// The API as an ``HTTPService``: shared state for every exchange.
public final class APIService: HTTPService {
    let storage: any ExpenseStorage
    let accounts: Accounts
    let settings: APISettings
    let faults: FaultInjector
    let log: ServerLog

    public init(storage: any ExpenseStorage, accounts: Accounts, settings: APISettings, log: ServerLog) {
        self.storage = storage
        self.accounts = accounts
        self.settings = settings
        self.log = log
        faults = FaultInjector(settings.faults)
    }

    public func makeExchange(for head: HTTPRequestHead) -> any HTTPExchange {
        APIExchange(service: self, head: head)
    }

    public func requestAbandoned(target: String, termination: HTTPTermination, durationNanoseconds: UInt64) {
        let reason = termination.note ?? "closed=http-error"
        log.access(AccessEntry(method: "-", path: RequestTarget(target).path, status: nil,
                               durationNanoseconds: durationNanoseconds, transactionID: nil, replayed: false, note: reason))
    }

    public func libraryMessage(_ message: String) {
        log.log(.warning, "libmicrohttpd: \(message)")
    }
}

extension HTTPTermination {
    public var accessNote: String? { note }

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
