import HTTPD
import ServerAccounts
import ServerAPI
import ServerStorage

/// What the web interface is told.
public struct WebSettings: Sendable, Equatable {
    /// The server speaks TLS: cookies are `Secure` and links `https://`.
    public var isTLS = false
    /// Seconds a session lasts from sign-in.
    public var sessionLifetimeSeconds: Int64 = 8 * 3600
    /// Largest form body accepted.
    public var formMaxBytes = 64 << 10

    public init() {}
}

/// The server's one ``HTTPService``: the API's paths (`/v1/…`,
/// `/healthz`), and any request with an `Authorization` header (an API
/// client, whatever path it asks for), go to the API as they are; every
/// other request is the web interface's, for people with a browser.
public final class WebService: HTTPService {
    let api: APIService
    let storage: any ExpenseStorage
    let accounts: Accounts
    let sessions: Sessions
    let settings: WebSettings
    let log: ServerLog

    public init(api: APIService, storage: any ExpenseStorage, accounts: Accounts, settings: WebSettings, log: ServerLog) {
        self.api = api
        self.storage = storage
        self.accounts = accounts
        self.settings = settings
        self.log = log
        sessions = Sessions(storage, lifetimeSeconds: settings.sessionLifetimeSeconds)
    }

    public func makeExchange(for head: HTTPRequestHead) -> any HTTPExchange {
        let path = RequestTarget(head.target).path
        if path.hasPrefix("/v1/") || path == "/v1" || path == "/healthz" || head.value(of: "Authorization") != nil {
            return api.makeExchange(for: head)
        }
        return WebExchange(service: self, head: head)
    }

    public func requestAbandoned(target: String, termination: HTTPTermination, durationNanoseconds: UInt64) {
        api.requestAbandoned(target: target, termination: termination, durationNanoseconds: durationNanoseconds)
    }

    public func libraryMessage(_ message: String) {
        api.libraryMessage(message)
    }
}
