import ExpenseCore
import ExpenseTestSupport
import Foundation

/// A real ihatemoney with a project (Alice, Bob, Carol), optionally behind
/// a fault proxy, and an expensed configured to send to it.
final class IhatemoneyHarness: @unchecked Sendable {
    let directory = TemporaryDirectory(prefix: "ihm")
    let ihatemoney: IhatemoneyProcess
    let project: IhatemoneyProject
    let proxy: FaultProxy?
    let daemon: DaemonHarness

    /// - Parameters:
    ///   - odds: put a fault proxy with these odds between daemon and ihatemoney.
    ///   - privateCode: what the daemon's token file holds (a wrong one for refused credentials).
    init(odds: FaultProxy.Odds? = nil, privateCode: String? = nil, configuration: String = "", daemonArguments: [String] = [],
         environment: [String: String] = [:], spool: Bool = false) throws {
        // The test process's ihatemoney, with a project of this test's own.
        let ihatemoney = try IhatemoneyProcess.shared()
        let project = try ihatemoney.makeProject(IhatemoneyProcess.uniqueProjectID(), members: ["Alice", "Bob", "Carol"])
        let proxy = try odds.map { try FaultProxy(backendPort: ihatemoney.port, odds: $0, seed: 16) }
        self.ihatemoney = ihatemoney
        self.project = project
        self.proxy = proxy
        let base = proxy?.baseURL ?? ihatemoney.baseURL
        SampleReceipt.write(Array((privateCode ?? project.privateCode).utf8), to: directory.at("token"))
        let text = """
            backend = ihatemoney
            server = \(base)\(project.path)
            token_file = \(directory.at("token"))
            ihatemoney_payer = Alice
            \(configuration)
            """
        SampleReceipt.write(Array(text.utf8), to: directory.at("expensed.conf"))
        daemon = DaemonHarness(arguments: ["--drain-interval", "200ms", "--backoff-base", "50ms", "--backoff-cap", "500ms"] + daemonArguments,
                               environment: environment, spool: spool, directory: directory)
    }

    /// For a test that kills the daemon with creates in flight: at its next
    /// start they wait for the longest a request may take before their
    /// markers are looked up (a request the dead daemon sent may still be
    /// committing), here 12 s rather than the default 70 s.
    static let shortRequests = ["--connect-timeout", "2s", "--request-timeout", "10s"]

    deinit {
        daemon.stop()
        proxy?.stop()
    }

    /// Bills in ihatemoney's own database.
    func bills() throws -> [IhatemoneyBill] { try ihatemoney.storedBills(project: project.id) }

    /// The bill carrying `transactionID`'s marker.
    func bills(for transactionID: String) throws -> [IhatemoneyBill] {
        try bills().filter { $0.externalLink.hasPrefix("https://expensed.invalid/t/\(transactionID)") }
    }

    /// Adds an expense with `expensectl add`; returns its transaction id.
    @discardableResult
    func add(merchant: String, amount: String, comment: String? = nil, receipt: String? = nil, clientID: String? = nil) throws -> String {
        var arguments = ["add", "--merchant", merchant, "--amount", amount, "--currency", "EUR", "--date", "2026-11-29", "--json"]
        if let clientID { arguments += ["--client-id", clientID] }
        if let comment { arguments += ["--comment", comment] }
        if let receipt { arguments += ["--receipt", receipt] }
        let result = try daemon.ctl(arguments)
        guard result.status == 0, let id = (try? JSONValue.parse(Array(result.stdout.utf8)))?["transaction_id"]?.stringValue else {
            throw TestFailure("add failed (\(result.status)): \(result.stdout) \(result.stderr)")
        }
        return id
    }

    /// `show --json` of one expense.
    func show(_ id: String) throws -> JSONValue { try daemon.ctlJSON(["show", id]) }

    /// Waits until nothing is queued, sending or needing attention.
    func waitUntilDrained(timeout: Double = 60) throws {
        try waitUntil(timeout: timeout, "the daemon to drain into ihatemoney") {
            try daemon.list().allSatisfy { $0["state"] == "synced" || $0["state"] == "deleted" }
        }
    }
}
