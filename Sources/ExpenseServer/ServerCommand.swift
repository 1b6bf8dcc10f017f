import ExpenseCore
import HTTPD
import Posix
import ServerAccounts
import ServerAPI
import ServerStorage
import ServerWeb
import SQLiteStorage
import Systemd

/// The `expense-server` command: parses its arguments and runs the
/// subcommand. The executable's `main.swift` only calls ``main(_:)``.
public enum ServerCommand {
    /// Runs with `arguments` (without the program name).
    /// - Returns: the exit status.
    public static func main(_ arguments: [String]) -> Int32 {
        let invocation: ServerInvocation
        do {
            invocation = try CommandLineParser.parse(arguments)
        } catch {
            StandardStreams.writeErrorLine("expense-server: \(error)")
            StandardStreams.writeErrorLine("Run 'expense-server --help' for usage.")
            return ExitStatus.usage.rawValue
        }
        switch invocation {
        case .help:
            StandardStreams.writeOutputLine(ServerHelp.text)
            return ExitStatus.success.rawValue
        case .serve(let configuration):
            return serve(configuration)
        case .userAdd(let name, let isAdmin, let storage):
            return addUser(name, isAdmin: isAdmin, storage: storage)
        case .userChange(let action, let name, let storage):
            return changeUser(name, action, storage: storage)
        case .userList(let storage):
            return listUsers(storage: storage)
        case .migrate(let storage):
            return migrate(storage)
        case .backup(let destination, let storage):
            return backup(storage, to: destination)
        case .export(let request, let storage):
            return export(request, from: storage)
        }
    }

    // MARK: serve

    static func serve(_ configuration: ServeConfiguration) -> Int32 {
        let log = ServerLog()
        // Trap signals before any thread starts, so none is lost or left to
        // its default action (and SIGPIPE becomes EPIPE).
        let signals: Signals
        do {
            signals = try Signals(trapping: [Signals.terminate, Signals.interrupt, Signals.hangUp])
        } catch {
            log.log(.error, "Failed to trap signals: \(error)")
            return ExitStatus.failure.rawValue
        }
        // Our parent's signal mask came with us through exec; the signals we
        // trap must get through (to this thread and every thread started later).
        CurrentProcess.unblockSignals([Signals.terminate, Signals.interrupt, Signals.hangUp])
        let store: any ExpenseStorage
        do {
            store = try configuration.storage.open(poolSize: configuration.databasePoolSize)
        } catch {
            log.log(.error, "Failed to open \(configuration.storage): \(error)")
            return ExitStatus.failure.rawValue
        }
        if case .postgres = configuration.storage {
            log.log(.notice, "storing in PostgreSQL, up to \(configuration.databasePoolSize) connections")
        }
        runMaintenance(store, configuration: configuration, log: log)

        let listener: FileDescriptor
        let address: SocketAddress
        do {
            listener = try listeningSocket(configuration, log: log)
            address = try TCPSocket.localAddress(listener)
        } catch {
            log.log(.error, "Failed to listen on \(configuration.listen): \(error)")
            return ExitStatus.failure.rawValue
        }
        let accounts = Accounts(store)
        let api = APIService(storage: store, accounts: accounts, settings: configuration.api, log: log)
        let service = WebService(api: api, storage: store, accounts: accounts, settings: configuration.web, log: log)
        var options = HTTPServer.Options()
        options.connectionLimit = configuration.maxConnections
        options.perAddressConnectionLimit = configuration.maxConnectionsPerAddress
        options.idleTimeoutSeconds = configuration.connectionTimeoutSeconds
        options.headTimeoutSeconds = configuration.headerTimeoutSeconds
        options.isIPv6 = address.family == .ipv6
        if let tls = configuration.tls {
            do {
                options.tls = try tls.read()
            } catch {
                log.log(.error, "\(error)")
                return ExitStatus.failure.rawValue
            }
        }
        let servers: ServingServers
        do {
            servers = try ServingServers(listener: listener, options: options, service: service)
        } catch {
            log.log(.error, "Failed to start the HTTP server: \(error)")
            return ExitStatus.failure.rawValue
        }
        let faults = configuration.faults
        if faults.isEnabled {
            log.log(.warning, "fault injection on: drop-request=\(faults.dropRequest) drop-response=\(faults.dropResponse) error-rate=\(faults.errorRate) delay-ms=\(faults.delayMilliseconds) seed=\(faults.seed)")
        }
        log.log(.notice, "listening on \(address)")
        ServiceManager.ready(status: "listening on \(address)")

        // The main thread waits for a signal; once an hour it tidies up.
        while true {
            _ = try? Poll.wait([(signals.descriptor, .readable)], timeoutMilliseconds: 3_600_000)
            let received = signals.pending()
            if received.contains(Signals.terminate) || received.contains(Signals.interrupt) { break }
            if received.contains(Signals.hangUp) {
                if let tls = configuration.tls {
                    servers.reload(tls, log: log)
                } else {
                    log.log(.notice, "SIGHUP: nothing to reload without --tls-cert, ignoring")
                }
            }
            if received.isEmpty {
                servers.stopIdleRetired()
                runMaintenance(store, configuration: configuration, log: log)
            }
        }

        ServiceManager.stopping()
        log.log(.notice, "stopping: finishing the requests in progress")
        // A second signal, or requests that do not finish, end the process anyway.
        Threads.spawn(name: "shutdown-guard") {
            _ = try? Poll.wait([(signals.descriptor, .readable)], timeoutMilliseconds: 30_000)
            log.log(.error, "Failed to stop gracefully (second signal or 30 s passed), exiting now")
            CurrentProcess.exit(ExitStatus.failure.rawValue)
        }
        servers.stop()
        log.log(.notice, "stopped")
        return ExitStatus.success.rawValue
    }

    /// The socket systemd passed (socket activation), or a new one on `--listen`.
    private static func listeningSocket(_ configuration: ServeConfiguration, log: ServerLog) throws -> FileDescriptor {
        let passed = ServiceManager.listenDescriptors()
        guard let first = passed.first else { return try TCPSocket.listen(configuration.listen) }
        if passed.count > 1 { log.log(.warning, "systemd passed \(passed.count) sockets; serving the first, ignoring the rest") }
        guard TCPSocket.isListeningStream(first) else { throw ActivationError() }
        return first
    }

    /// The service manager passed something other than a listening TCP socket.
    struct ActivationError: Error, CustomStringConvertible {
        var description: String { "the socket passed by the service manager (LISTEN_FDS) is not a listening TCP socket" }
    }

    /// Forgets expired idempotency records and web sessions, and removes
    /// receipt files a crash left unreferenced. Runs at start and hourly.
    /// Failures are logged and ignored: the next run tries again.
    static func runMaintenance(_ store: any ExpenseStorage, configuration: ServeConfiguration, log: ServerLog) {
        do {
            // An expired session is refused at every request already; its row only waits here.
            let forgotten = try store.purgeSessions(nowMilliseconds: Clock.wallMilliseconds)
            if forgotten > 0 { log.log(.info, "forgot \(forgotten) expired web sessions") }
        } catch {
            log.log(.warning, "Failed to forget expired sessions: \(error), ignoring")
        }
        do {
            let purged = try store.purgeIdempotencyRecords(retentionMilliseconds: Int64(configuration.idempotencyRetentionHours) * 3_600_000)
            if purged > 0 { log.log(.info, "forgot \(purged) idempotency records older than \(configuration.idempotencyRetentionHours) h") }
        } catch {
            log.log(.warning, "Failed to purge idempotency records: \(error), ignoring")
        }
        do {
            let cutoff = Clock.wallMilliseconds - configuration.uploadExpirySeconds * 1000
            let expired = try store.removeUploads(touchedBefore: cutoff)
            if expired > 0 { log.log(.info, "removed \(expired) resumable uploads idle for \(configuration.uploadExpirySeconds) s") }
        } catch {
            log.log(.warning, "Failed to remove expired uploads: \(error), ignoring")
        }
        do {
            let removed = try store.removeLeftovers(graceNanoseconds: 600 * 1_000_000_000, now: Clock.wallMilliseconds * 1_000_000)
            for name in removed { log.log(.info, "removed unreferenced receipt file '\(name)'") }
        } catch {
            log.log(.warning, "Failed to sweep receipt files: \(error), ignoring")
        }
    }

    // MARK: user, migrate

    static func addUser(_ name: String, isAdmin: Bool, storage: StorageLocation) -> Int32 {
        userCommand("add user", in: storage) { accounts in
            StandardStreams.writeOutputLine(try accounts.add(named: name, isAdmin: isAdmin))
        }
    }

    /// `user rotate` prints the new token, once; `revoke` and `deactivate` print nothing.
    static func changeUser(_ name: String, _ action: UserAction, storage: StorageLocation) -> Int32 {
        userCommand("\(action.rawValue) user", in: storage) { accounts in
            switch action {
            case .rotate: StandardStreams.writeOutputLine(try accounts.rotate(named: name))
            case .revoke: try accounts.revoke(named: name)
            case .deactivate: try accounts.deactivate(named: name)
            }
        }
    }

    /// Runs `body` on the accounts of `storage`: a ``UserError`` is said
    /// as it is, any other error as a failure to `what`; both exit 1.
    private static func userCommand(_ what: String, in storage: StorageLocation, _ body: (Accounts) throws -> Void) -> Int32 {
        do {
            try body(Accounts(try storage.open(poolSize: 1)))
            return ExitStatus.success.rawValue
        } catch let error as UserError {
            StandardStreams.writeErrorLine("expense-server: \(error)")
            return ExitStatus.failure.rawValue
        } catch {
            StandardStreams.writeErrorLine("expense-server: Failed to \(what) in \(storage): \(error)")
            return ExitStatus.failure.rawValue
        }
    }

    static func listUsers(storage: StorageLocation) -> Int32 {
        do {
            for user in try Accounts(try storage.open(poolSize: 1)).list() {
                StandardStreams.writeOutputLine("\(user.name)\t\(user.createdAt)\t\(user.isAdmin ? "admin" : "user")\t\(user.state.rawValue)")
            }
            return ExitStatus.success.rawValue
        } catch {
            StandardStreams.writeErrorLine("expense-server: Failed to list users in \(storage): \(error)")
            return ExitStatus.failure.rawValue
        }
    }

    /// Opening migrates; this says to which version.
    static func migrate(_ storage: StorageLocation) -> Int32 {
        do {
            let versions = try storage.open(poolSize: 1).schemaVersions()
            StandardStreams.writeOutputLine("schema version \(versions.database)")
            return ExitStatus.success.rawValue
        } catch {
            StandardStreams.writeErrorLine("expense-server: Failed to migrate \(storage): \(error)")
            return ExitStatus.failure.rawValue
        }
    }

    /// A copy of SQLite data that a server can serve from (``SQLiteStore/backup(to:)``).
    static func backup(_ storage: StorageLocation, to destination: String) -> Int32 {
        do {
            guard let store = try storage.open() as? SQLiteStore else { return ExitStatus.usage.rawValue }
            let summary = try store.backup(to: destination)
            StandardStreams.writeOutputLine("backed up \(summary.expenses) expenses and \(summary.receipts) receipts to \(destination)")
            return ExitStatus.success.rawValue
        } catch {
            StandardStreams.writeErrorLine("expense-server: Failed to back up \(storage) to \(LogText.quoted(destination)): \(error)")
            return ExitStatus.failure.rawValue
        }
    }
}
