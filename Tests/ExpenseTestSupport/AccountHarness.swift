import ExpenseCore
import Foundation
import SQLite

/// A daemon with `accounts_dir`, real local users (``LocalUsers``) and an
/// `expense-server` with one server user per account: alice's token in
/// `accounts/<alice's local name>`, and so on. Roles in `withoutAccount`
/// are local users with no token file. Every user is in the control
/// group; `admins` in the admin group too.
public final class AccountHarness: @unchecked Sendable {
    public let users = LocalUsers()
    public let directory: TemporaryDirectory
    public let daemon: DaemonHarness
    public let serverData: String
    public let accountsDirectory: String
    public let port: UInt16
    public private(set) var server: ServerProcess?
    /// Server tokens by role.
    public private(set) var tokens: [String: String] = [:]

    public init(accounts: [String] = ["alice", "bob"], withoutAccount: [String] = [], admins: [String] = [],
                daemonArguments: [String] = [], environment: [String: String] = [:]) throws {
        directory = TemporaryDirectory(prefix: "accounts")
        serverData = directory.at("server")
        accountsDirectory = directory.at("accounts")
        try FileManager.default.createDirectory(atPath: accountsDirectory, withIntermediateDirectories: true)
        chmod(accountsDirectory, 0o700)
        port = try ServerProcess.unusedPort()
        let control = try users.addGroup("ctl")
        let admin = try users.addGroup("adm")
        for role in accounts + withoutAccount + admins {
            try users.addUser(role, groups: admins.contains(role) ? ["ctl", "adm"] : ["ctl"])
        }
        for role in accounts {
            tokens[role] = try ServerProcess.addUser(role, dataDirectory: serverData)
        }
        daemon = DaemonHarness(arguments: [
            "--server", "http://127.0.0.1:\(port)", "--accounts-dir", accountsDirectory,
            "--control-group", control, "--admin-group", admin,
            "--drain-interval", "200ms", "--backoff-base", "50ms", "--backoff-cap", "1s",
            "--connect-timeout", "2s", "--request-timeout", "10s", "--spool-settle", "100ms",
        ] + daemonArguments, environment: environment, spool: true, directory: directory)
        // The maildrop's modes: writers in the group create, only the daemon lists.
        chown(daemon.spoolDirectory, 0, getgrnam(control)?.pointee.gr_gid ?? 0)
        chmod(daemon.spoolDirectory, 0o1730)
        for (role, token) in tokens { writeToken(token, for: role) }
        try startServer()
    }

    deinit { users.remove() }

    /// Writes `token` as `role`'s token file: a new file renamed in, mode 600.
    public func writeToken(_ token: String, for role: String) {
        let path = "\(accountsDirectory)/\(users.name(role))"
        let temporary = "\(accountsDirectory)/.\(users.name(role)).tmp"
        _ = FileManager.default.createFile(atPath: temporary, contents: Data((token + "\n").utf8), attributes: [.posixPermissions: 0o600])
        rename(temporary, path)
    }

    public func startServer() throws {
        server = try ServerProcess(dataDirectory: serverData, outputDirectory: directory.path, token: tokens.values.first ?? "none", port: port)
    }

    public func stopServer() {
        server?.stop()
        server = nil
    }

    /// Starts the daemon, which binds its socket itself (no socket
    /// activation): the socket belongs to the control group, mode 0660.
    public func startDaemon() throws {
        try daemon.start()
    }

    /// `expensectl` as `role` (root for "root").
    public func ctl(_ role: String, _ arguments: [String]) throws -> CommandResult {
        let all = ["--socket", daemon.socketPath] + arguments
        if role == "root" { return try runCommand(BuiltProducts.path("expensectl"), all) }
        return try users.run(as: role, BuiltProducts.path("expensectl"), all)
    }

    /// `expensectl … --json` as `role`, parsed; fails on a non-zero exit.
    public func ctlJSON(_ role: String, _ arguments: [String]) throws -> JSONValue {
        let result = try ctl(role, arguments + ["--json"])
        guard result.status == 0 else { throw TestFailure("expensectl \(arguments.joined(separator: " ")) as \(role) exited \(result.status): \(result.stderr)") }
        return try JSONValue.parse(Array(result.stdout.utf8))
    }

    /// Adds an expense as `role`; returns its transaction id.
    public func add(_ role: String, merchant: String, receipt: String? = nil) throws -> String {
        var arguments = ["add", "--merchant", merchant, "--amount", "4.20", "--currency", "EUR", "--date", "2026-11-29"]
        if let receipt { arguments += ["--receipt", receipt] }
        guard let id = try ctlJSON(role, arguments)["transaction_id"]?.stringValue else { throw TestFailure("add as \(role): no transaction id") }
        return id
    }

    /// The transaction ids `list` shows `role` (with `extra` options).
    public func listed(_ role: String, _ extra: [String] = []) throws -> Set<String> {
        guard let expenses = try ctlJSON(role, ["list"] + extra).arrayValue else { throw TestFailure("list as \(role) is not an array") }
        return Set(expenses.compactMap { $0["transaction_id"]?.stringValue })
    }

    /// Drops a sidecar-only expense into the spool as `role` (root for
    /// "root"), the safe way: written under a dot name, renamed in.
    public func drop(_ role: String, name: String, merchant: String) throws {
        let source = directory.at("\(name).source")
        _ = FileManager.default.createFile(atPath: source, contents: Data("""
            {"merchant": "\(merchant)", "amount": "1.00", "currency": "EUR", "date": "2026-11-29"}
            """.utf8), attributes: [.posixPermissions: 0o644])
        let spool = daemon.spoolDirectory
        let script = "cp \(source) \(spool)/.\(name).tmp && mv \(spool)/.\(name).tmp \(spool)/\(name).json"
        let result = role == "root" ? try runCommand("/bin/sh", ["-c", script]) : try users.run(as: role, "/bin/sh", ["-c", script])
        guard result.status == 0 else { throw TestFailure("drop as \(role): \(result.stderr)") }
    }

    /// Makes an expense on the server as `role`'s server user (another
    /// device of theirs); returns its transaction id.
    public func createOnServer(as role: String, merchant: String) throws -> String {
        guard let server, let token = tokens[role] else { throw TestFailure("no server, or no token for \(role)") }
        let key = ClientID.make()
        let body: JSONValue = ["merchant": .string(merchant), "amount": "2.00", "currency": "EUR", "date": "2026-11-02"]
        let response = try server.connect().request("POST", "/v1/expenses", headers: [
            ("Authorization", "Bearer \(token)"), ("Idempotency-Key", "\"\(key)\""), ("Content-Type", "application/json"),
        ], body: body.serializedBytes())
        guard response.status == 201 else { throw TestFailure("create on the server as \(role): \(response.status)") }
        return TransactionID.derive(from: key)
    }

    /// Every expense row of the server, with the name of the server user it belongs to.
    public func serverRows() throws -> [(transactionID: String, user: String, merchant: String?)] {
        let db = try Connection(path: "\(serverData)/expense-server.db", readOnly: true)
        return try db.query("SELECT e.transaction_id, u.name, e.merchant FROM expenses e JOIN users u ON u.id = e.user_id WHERE e.deleted = 0 ORDER BY e.id") {
            ($0.string(0), $0.string(1), $0.optionalString(2))
        }
    }

    /// Runs `expense-server user VERB NAME` against the server's data; returns what it printed.
    @discardableResult
    public func serverUser(_ verb: String, _ role: String) throws -> String {
        let result = try runCommand(BuiltProducts.path("expense-server"), ["user", verb, role, "--data-dir", serverData])
        guard result.status == 0 else { throw TestFailure("user \(verb) \(role): \(result.stderr)") }
        return result.stdout.trimmingCharacters(in: .newlines)
    }

    /// Waits until nothing of any account is queued or sending.
    public func waitUntilDrained(timeout: Double = 60) throws {
        try daemon.waitForQueue(allAccounts: true, timeout: timeout)
    }
}
