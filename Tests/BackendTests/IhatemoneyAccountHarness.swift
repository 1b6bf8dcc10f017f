import ExpenseCore
import ExpenseTestSupport
import Foundation

/// A household on one machine sharing a real ihatemoney project (Alice,
/// Bob, Carol): real local users alice, bob and carol, each with a token
/// file in `accounts_dir` holding the project's private code, and a daemon
/// whose `ihatemoney_payers` names alice's and bob's members (carol has
/// none unless `payers` says so), optionally behind a fault proxy.
final class IhatemoneyAccountHarness: @unchecked Sendable {
    let users = LocalUsers()
    let directory = TemporaryDirectory(prefix: "ihm-accounts")
    let ihatemoney: IhatemoneyProcess
    let project: IhatemoneyProject
    let proxy: FaultProxy?
    let daemon: DaemonHarness

    /// - Parameters:
    ///   - payers: role to member; written as `ihatemoney_payers` with each role's user name.
    ///   - odds: put a fault proxy with these odds between daemon and ihatemoney.
    init(payers: [String: String] = ["alice": "Alice", "bob": "Bob"], odds: FaultProxy.Odds? = nil,
         daemonArguments: [String] = [], environment: [String: String] = [:]) throws {
        // The test process's ihatemoney, with a project of this test's own.
        let ihatemoney = try IhatemoneyProcess.shared()
        let project = try ihatemoney.makeProject(IhatemoneyProcess.uniqueProjectID(), members: ["Alice", "Bob", "Carol"])
        let proxy = try odds.map { try FaultProxy(backendPort: ihatemoney.port, odds: $0, seed: 23) }
        self.ihatemoney = ihatemoney
        self.project = project
        self.proxy = proxy
        let users = users
        let control = try users.addGroup("ctl")
        let accounts = directory.at("accounts")
        try FileManager.default.createDirectory(atPath: accounts, withIntermediateDirectories: true)
        chmod(accounts, 0o700)
        for role in ["alice", "bob", "carol"] {
            try users.addUser(role, groups: ["ctl"])
            SampleReceipt.write(Array((project.privateCode + "\n").utf8), to: "\(accounts)/\(users.name(role))")
            chmod("\(accounts)/\(users.name(role))", 0o600)
        }
        let entries = payers.keys.sorted().map { "\(users.name($0)):\(payers[$0]!)" }
        let text = """
            backend = ihatemoney
            server = \(proxy?.baseURL ?? ihatemoney.baseURL)\(project.path)
            accounts_dir = \(accounts)
            control_group = \(control)
            \(entries.isEmpty ? "" : "ihatemoney_payers = " + entries.joined(separator: ", "))
            """
        SampleReceipt.write(Array(text.utf8), to: directory.at("expensed.conf"))
        daemon = DaemonHarness(arguments: ["--drain-interval", "200ms", "--backoff-base", "50ms", "--backoff-cap", "500ms"] + daemonArguments,
                               environment: environment, directory: directory)
    }

    deinit {
        daemon.stop()
        proxy?.stop()
        users.remove()
    }

    /// Starts the daemon and opens its socket file to everyone: the peer
    /// check (control group) is what decides who is served.
    func startDaemon() throws {
        try daemon.start()
        chmod(daemon.socketPath, 0o666)
    }

    /// `expensectl … --json` as `role`, parsed; fails on a non-zero exit.
    func ctlJSON(_ role: String, _ arguments: [String]) throws -> JSONValue {
        let result = try users.run(as: role, BuiltProducts.path("expensectl"), ["--socket", daemon.socketPath] + arguments + ["--json"])
        guard result.status == 0 else { throw TestFailure("expensectl \(arguments.joined(separator: " ")) as \(role) exited \(result.status): \(result.stderr)") }
        return try JSONValue.parse(Array(result.stdout.utf8))
    }

    /// Adds an expense as `role`; returns its transaction id.
    @discardableResult
    func add(_ role: String, merchant: String, amount: String = "4.20", clientID: String? = nil) throws -> String {
        let added = try ctlJSON(role, ["add", "--merchant", merchant, "--amount", amount, "--currency", "EUR", "--date", "2026-11-29"]
                                    + (clientID.map { ["--client-id", $0] } ?? []))
        guard let id = added["transaction_id"]?.stringValue else { throw TestFailure("add as \(role): no transaction id") }
        return id
    }

    /// The transaction ids `list` shows `role`.
    func listed(_ role: String) throws -> Set<String> {
        guard let expenses = try ctlJSON(role, ["list"]).arrayValue else { throw TestFailure("list as \(role) is not an array") }
        return Set(expenses.compactMap { $0["transaction_id"]?.stringValue })
    }

    /// Bills in ihatemoney's own database.
    func bills() throws -> [IhatemoneyBill] { try ihatemoney.storedBills(project: project.id) }

    /// The bills carrying `transactionID`'s marker.
    func bills(for transactionID: String) throws -> [IhatemoneyBill] {
        try bills().filter { $0.externalLink.hasPrefix("https://expensed.invalid/t/\(transactionID)") }
    }

    /// Waits until no account has anything queued or sending.
    func waitUntilDrained(timeout: Double = 60) throws {
        try daemon.waitForQueue(allAccounts: true, timeout: timeout, "the outbox to drain into ihatemoney")
    }
}
