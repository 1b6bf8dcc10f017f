import Posix

/// What the command line asks for.
enum ServerInvocation: Equatable {
    case help
    case serve(ServeConfiguration)
    case userAdd(name: String, dataDirectory: String)
    case userList(dataDirectory: String)
}

/// A command line that cannot be run: exit status 64 (`EX_USAGE`).
struct UsageError: Error, Equatable, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// Parses `expense-server`'s arguments. One table of options drives both
/// parsing and `--help` (``ServerHelp``).
enum CommandLineParser {
    static func parse(_ arguments: [String]) throws(UsageError) -> ServerInvocation {
        guard let command = arguments.first else { throw UsageError("missing subcommand; expected serve or user") }
        if arguments.contains("--help") || arguments.contains("-h") || command == "help" { return .help }
        switch command {
        case "serve":
            return .serve(try parseServe(Array(arguments.dropFirst())))
        case "user":
            let rest = Array(arguments.dropFirst())
            guard let action = rest.first else { throw UsageError("missing user subcommand; expected add or list") }
            var options = try Options(Array(rest.dropFirst()), known: ["--data-dir"])
            guard let directory = options.values["--data-dir"] else { throw UsageError("--data-dir is required") }
            switch action {
            case "add":
                guard options.positional.count == 1, let name = options.positional.first else {
                    throw UsageError("user add takes exactly one NAME")
                }
                options.positional = []
                return .userAdd(name: name, dataDirectory: directory)
            case "list":
                guard options.positional.isEmpty else { throw UsageError("user list takes no arguments") }
                return .userList(dataDirectory: directory)
            default:
                throw UsageError("unknown user subcommand '\(AccessEntry.printable(action, limit: 64))'; expected add or list")
            }
        default:
            throw UsageError("unknown subcommand '\(AccessEntry.printable(command, limit: 64))'; expected serve or user")
        }
    }

    static let serveOptions = [
        "--listen", "--data-dir", "--receipt-max-bytes", "--max-connections", "--max-connections-per-ip",
        "--connection-timeout", "--header-timeout", "--request-timeout", "--idempotency-retention-hours",
        "--fault-drop-request", "--fault-drop-response", "--fault-error-rate", "--fault-delay-ms", "--fault-seed",
    ]

    private static func parseServe(_ arguments: [String]) throws(UsageError) -> ServeConfiguration {
        let options = try Options(arguments, known: Set(serveOptions))
        guard options.positional.isEmpty else {
            throw UsageError("serve takes no arguments, got '\(AccessEntry.printable(options.positional[0], limit: 64))'")
        }
        var c = ServeConfiguration()
        guard let directory = options.values["--data-dir"], !directory.isEmpty else { throw UsageError("--data-dir is required") }
        c.dataDirectory = directory
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
        c.idempotencyRetentionHours = Int(try options.integer("--idempotency-retention-hours", in: 24...87_600) ?? Int64(c.idempotencyRetentionHours))
        c.faults.dropRequest = try options.probability("--fault-drop-request") ?? 0
        c.faults.dropResponse = try options.probability("--fault-drop-response") ?? 0
        c.faults.errorRate = try options.probability("--fault-error-rate") ?? 0
        c.faults.delayMilliseconds = Int(try options.integer("--fault-delay-ms", in: 0...600_000) ?? 0)
        if let seed = options.values["--fault-seed"] {
            guard let value = UInt64(seed) else { throw UsageError("--fault-seed must be a whole number from 0 to \(UInt64.max)") }
            c.faults.seed = value
        }
        return c
    }

    /// `--name value` and `--name=value` pairs, and the other arguments.
    private struct Options {
        var values: [String: String] = [:]
        var positional: [String] = []

        init(_ arguments: [String], known: Set<String>) throws(UsageError) {
            var index = 0
            while index < arguments.count {
                let argument = arguments[index]
                index += 1
                guard argument.hasPrefix("--") else {
                    positional.append(argument)
                    continue
                }
                var name = argument
                var value: String?
                if let equals = argument.firstIndex(of: "=") {
                    name = String(argument[..<equals])
                    value = String(argument[argument.index(after: equals)...])
                }
                guard known.contains(name) else { throw UsageError("unknown option '\(AccessEntry.printable(name, limit: 64))'") }
                if value == nil {
                    guard index < arguments.count else { throw UsageError("\(name) needs a value") }
                    value = arguments[index]
                    index += 1
                }
                guard values[name] == nil else { throw UsageError("\(name) was given more than once") }
                values[name] = value
            }
        }

        func integer(_ name: String, in range: ClosedRange<Int64>) throws(UsageError) -> Int64? {
            guard let text = values[name] else { return nil }
            guard let value = Int64(text), range.contains(value) else {
                throw UsageError("\(name) must be a whole number from \(range.lowerBound) to \(range.upperBound)")
            }
            return value
        }

        func probability(_ name: String) throws(UsageError) -> Double? {
            guard let text = values[name] else { return nil }
            guard let value = Double(text), value >= 0, value <= 1 else {
                throw UsageError("\(name) must be a probability from 0 to 1")
            }
            return value
        }
    }
}
