import ExpenseCore
import Posix
import ServerAccounts
import ServerAPI
import ServerStorage

/// What the command line asks for.
enum ServerInvocation: Equatable {
    case help
    case serve(ServeConfiguration)
    case userAdd(name: String, isAdmin: Bool, storage: StorageLocation)
    /// `user rotate`, `user revoke`, `user deactivate`.
    case userChange(UserAction, name: String, storage: StorageLocation)
    case userList(storage: StorageLocation)
    case migrate(storage: StorageLocation)
    case backup(destination: String, storage: StorageLocation)
    case export(ExportRequest, storage: StorageLocation)
}

/// What `expense-server export` writes.
struct ExportRequest: Equatable, Sendable {
    var format = ExportFormat.csv
    var since: String?
    var user: String?
    /// Put before each receipt's path: `https://host[:port][/prefix]`, or empty.
    var baseURL = ""
}

/// What `user rotate|revoke|deactivate NAME` does.
enum UserAction: String, CaseIterable, Sendable {
    case rotate
    case revoke
    case deactivate
}

/// Parses `expense-server`'s arguments. One table of options drives both
/// parsing and `--help` (``ServerHelp``); what cannot be run is a
/// ``UsageError``, exit status 64 (`EX_USAGE`).
enum CommandLineParser {
    static func parse(_ arguments: [String]) throws(UsageError) -> ServerInvocation {
        guard let command = arguments.first else { throw UsageError("missing subcommand; expected serve, user, migrate, backup or export") }
        if arguments.contains("--help") || arguments.contains("-h") || command == "help" { return .help }
        switch command {
        case "serve":
            return .serve(try parseServe(Array(arguments.dropFirst())))
        case "user":
            return try parseUser(Array(arguments.dropFirst()))
        case "migrate":
            let options = try Options(Array(arguments.dropFirst()), known: storageOptions, command: "migrate")
            guard options.positional.isEmpty else {
                throw UsageError("migrate takes no arguments, got \(quoted(options.positional[0]))")
            }
            return .migrate(storage: try options.storage())
        case "backup":
            let options = try Options(Array(arguments.dropFirst()), known: storageOptions, command: "backup")
            guard options.positional.count == 1, let destination = options.positional.first else {
                throw UsageError("backup takes exactly one DEST, a folder to create, got \(options.positional.count)")
            }
            guard !destination.isEmpty else { throw UsageError("backup's DEST must not be empty") }
            // Only SQLite data is backed up: no hint at a PostgreSQL URL.
            guard options.values["--data-dir"] != nil || options.values["--database"] != nil else {
                throw UsageError("--data-dir is required")
            }
            let storage = try options.storage()
            guard case .sqlite = storage else {
                throw UsageError("backup copies SQLite data; back up a PostgreSQL database with pg_dump (docs/server.md, \"Backups\")")
            }
            return .backup(destination: destination, storage: storage)
        case "export":
            let options = try Options(Array(arguments.dropFirst()), known: OptionTable(storageOptions.options + ServerHelp.export.options),
                                      command: "export")
            guard options.positional.isEmpty else {
                throw UsageError("export takes no arguments, got \(quoted(options.positional[0]))")
            }
            var request = ExportRequest()
            if let text = options.values["--format"] {
                guard let format = ExportFormat(rawValue: text) else { throw UsageError("--format must be csv or jsonl, got \(quoted(text, limit: 32))") }
                request.format = format
            }
            if let since = options.values["--since"] {
                do { try Validation.checkDate(since) } catch {
                    throw UsageError("--since must be a date, YYYY-MM-DD, got \(quoted(since, limit: 32))")
                }
                request.since = since
            }
            if let user = options.values["--user"] {
                guard Accounts.isValidName(user) else { throw UsageError("--user: \(UserError.invalidName(user))") }
                request.user = user
            }
            if let base = options.values["--base-url"] {
                guard let url = ExportFormat.receiptBase(base) else {
                    throw UsageError("--base-url must be http:// or https://, a host and an optional path, without a query, "
                                     + "fragment or user name, got \(quoted(base, limit: 64))")
                }
                request.baseURL = url
            }
            return .export(request, storage: try options.storage())
        default:
            throw UsageError("unknown subcommand \(quoted(command)); expected serve, user, migrate, backup or export")
        }
    }

    /// Text from the command line as messages show it (``LogText/quoted(_:limit:)``).
    static func quoted(_ text: String, limit: Int = 256) -> String {
        LogText.quoted(text, limit: limit)
    }

    /// Where the data is: every subcommand takes these.
    static var storageOptions: OptionTable { ServerHelp.storage }

    /// What `serve` takes: the storage, its own and the fault injection.
    static var serveOptions: OptionTable { OptionTable(ServerHelp.storage.options + ServerHelp.serve.options + ServerHelp.faults.options) }

    static let userSubcommands = ["add", "list"] + UserAction.allCases.map(\.rawValue)

    private static func parseUser(_ rest: [String]) throws(UsageError) -> ServerInvocation {
        let expected = "expected \(userSubcommands.dropLast().joined(separator: ", ")) or \(userSubcommands.last ?? "")"
        guard let action = rest.first else { throw UsageError("missing user subcommand; \(expected)") }
        guard userSubcommands.contains(action) else {
            throw UsageError("unknown user subcommand \(quoted(action)); \(expected)")
        }
        let options = try Options(Array(rest.dropFirst()), known: OptionTable(storageOptions.options + (action == "add" ? ServerHelp.userAdd.options : [])),
                                  command: "user \(action)")
        let storage = try options.storage()
        if action == "list" {
            guard options.positional.isEmpty else {
                throw UsageError("user list takes no arguments, got \(quoted(options.positional[0]))")
            }
            return .userList(storage: storage)
        }
        guard options.positional.count == 1, let name = options.positional.first else {
            throw UsageError("user \(action) takes exactly one NAME, got \(options.positional.count)")
        }
        guard Accounts.isValidName(name) else { throw UsageError(UserError.invalidName(name).description) }
        guard let change = UserAction(rawValue: action) else {
            return .userAdd(name: name, isAdmin: options.flags.contains("--admin"), storage: storage)
        }
        return .userChange(change, name: name, storage: storage)
    }

    private static func parseServe(_ arguments: [String]) throws(UsageError) -> ServeConfiguration {
        let options = try Options(arguments, known: serveOptions, command: "serve")
        guard options.positional.isEmpty else {
            throw UsageError("serve takes no arguments, got \(quoted(options.positional[0]))")
        }
        var c = ServeConfiguration()
        c.storage = try options.storage()
        c.dataDirectory = options.values["--data-dir"] ?? ""
        c.databasePoolSize = Int(try options.integer("--database-pool", in: 1...1000) ?? Int64(c.databasePoolSize))
        if let text = options.values["--listen"] {
            guard let address = SocketAddress(parsing: text) else {
                throw UsageError("--listen must be HOST:PORT with a numeric address, like 127.0.0.1:8080 or [::1]:8080")
            }
            c.listen = address
        }
        c.receiptMaxBytes = try options.integer("--receipt-max-bytes", in: 1...(Int64(1) << 40)) ?? c.receiptMaxBytes
        c.maxConnections = Int(try options.integer("--max-connections", in: 1...100_000) ?? Int64(c.maxConnections))
        c.maxConnectionsPerAddress = Int(try options.integer("--max-connections-per-ip", in: 0...100_000) ?? Int64(c.maxConnectionsPerAddress))
        c.connectionTimeoutSeconds = Int(try options.integer("--connection-timeout", in: 1...86_400) ?? Int64(c.connectionTimeoutSeconds))
        c.headerTimeoutSeconds = Int(try options.integer("--header-timeout", in: 1...3_600) ?? Int64(c.headerTimeoutSeconds))
        c.requestTimeoutSeconds = Int(try options.integer("--request-timeout", in: 1...86_400) ?? Int64(c.requestTimeoutSeconds))
        c.uploadExpirySeconds = try options.integer("--upload-expiry", in: 1...(30 * 86_400)) ?? c.uploadExpirySeconds
        c.idempotencyRetentionHours = Int(try options.integer("--idempotency-retention-hours", in: 24...87_600) ?? Int64(c.idempotencyRetentionHours))
        c.faults.dropRequest = try options.probability("--fault-drop-request") ?? 0
        c.faults.dropResponse = try options.probability("--fault-drop-response") ?? 0
        c.faults.errorRate = try options.probability("--fault-error-rate") ?? 0
        c.faults.delayMilliseconds = Int(try options.integer("--fault-delay-ms", in: 0...600_000) ?? 0)
        switch (options.values["--tls-cert"], options.values["--tls-key"]) {
        case (nil, nil): break
        case (let cert?, let key?):
            guard !cert.isEmpty, !key.isEmpty else { throw UsageError("--tls-cert and --tls-key must not be empty") }
            c.tls = TLSFiles(certificate: cert, key: key)
        default: throw UsageError("--tls-cert and --tls-key go together")
        }
        if let seed = options.values["--fault-seed"] {
            guard seed.utf8.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }), let value = UInt64(seed) else {
                throw UsageError("--fault-seed must be a whole number from 0 to \(UInt64.max), got \(quoted(seed, limit: 32))")
            }
            c.faults.seed = value
        }
        return c
    }

    /// `--name value` and `--name=value` pairs, flags, and the other arguments.
    struct Options {
        var values: [String: String] = [:]
        var flags: Set<String> = []
        var positional: [String] = []

        /// - Parameters:
        ///   - known: the options the subcommand takes.
        ///   - command: the subcommand, for messages.
        init(_ arguments: [String], known: OptionTable, command: String) throws(UsageError) {
            var scanner = ArgumentScanner(arguments)
            while let item = try scanner.next(known.option, scope: command) {
                switch item {
                case .positional(let argument): positional.append(argument.shown)
                case .option(let option, nil): flags.insert(option.name)
                case .option(let option, let value?): values[option.name] = value.shown
                }
            }
        }

        /// `--data-dir` and `--database`: one of them every subcommand needs.
        func storage() throws(UsageError) -> StorageLocation {
            try StorageLocation.parse(database: values["--database"], dataDirectory: values["--data-dir"])
        }

        func integer(_ name: String, in range: ClosedRange<Int64>) throws(UsageError) -> Int64? {
            guard let text = values[name] else { return nil }
            guard let value = Int64(text), range.contains(value) else {
                throw UsageError("\(name) must be a whole number from \(range.lowerBound) to \(range.upperBound), got \(quoted(text, limit: 32))")
            }
            return value
        }

        /// A probability written as a plain decimal (`0`, `0.25`, `1`).
        func probability(_ name: String) throws(UsageError) -> Double? {
            guard let text = values[name] else { return nil }
            let isDecimal = !text.isEmpty && text.utf8.allSatisfy { ($0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9")) || $0 == UInt8(ascii: ".") }
            guard isDecimal, let value = Double(text), value >= 0, value <= 1 else {
                throw UsageError("\(name) must be a probability from 0 to 1, like 0.25, got \(quoted(text, limit: 32))")
            }
            return value
        }
    }
}
