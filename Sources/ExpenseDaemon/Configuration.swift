import ExpenseCore

/// Everything `expensed` can be told, from `/etc/expensed/expensed.conf`
/// and command-line flags (flags win). docs/configuration.md lists each key.
public struct Configuration: Sendable, Equatable {
    public var configFile = "/etc/expensed/expensed.conf"
    public var stateDirectory = "/var/lib/expensed"
    public var socketPath = "/run/expensed/control.sock"
    public var spoolDirectory: String? = "/var/spool/expensed"
    public var serverURL: String?
    public var tokenFile: String?
    /// Members of this group may use the control socket (besides root and the daemon's user).
    public var controlGroup: String?
    public var receiptMaxBytes = 25 * 1024 * 1024
    public var controlMaxConnections = 64
    public var controlIdleTimeoutMilliseconds: Int64 = 30_000
    public var controlLineMaxBytes = 1024 * 1024
    public var drainIntervalMilliseconds: Int64 = 5_000
    public var backoffBaseMilliseconds: Int64 = 1_000
    public var backoffCapMilliseconds: Int64 = 300_000
    public var maxAttempts = 5
    public var concurrency = 4
    public var refreshIntervalMilliseconds: Int64 = 900_000
    public var connectTimeoutMilliseconds: Int64 = 10_000
    public var requestTimeoutMilliseconds: Int64 = 60_000
    public var spoolSettleMilliseconds: Int64 = 500
    public var spoolMaxBytes = 25 * 1024 * 1024
    public var logTarget: LogTarget = .auto

    public enum LogTarget: String, Sendable, Equatable {
        case auto, journal, stderr
    }

    public init() {}

    /// One configuration key: its name in the file, its flag, what it takes, and how to set it.
    struct Key: Sendable {
        let name: String
        let flag: String
        let valueName: String
        let help: String
        let apply: @Sendable (inout Configuration, String) throws(ConfigurationError) -> Void
    }

    /// The table that drives the file parser, the flag parser and `--help`.
    static let keys: [Key] = [
        Key(name: "state_dir", flag: "--state-dir", valueName: "DIR", help: "database and receipts (default /var/lib/expensed)") { c, v throws(ConfigurationError) in c.stateDirectory = try path(v) },
        Key(name: "socket", flag: "--socket", valueName: "PATH", help: "control socket (default /run/expensed/control.sock)") { c, v throws(ConfigurationError) in c.socketPath = try path(v) },
        Key(name: "spool_dir", flag: "--spool-dir", valueName: "DIR", help: "spool directory to watch, or 'none' (default /var/spool/expensed)") { c, v throws(ConfigurationError) in c.spoolDirectory = v == "none" ? nil : try path(v) },
        Key(name: "server", flag: "--server", valueName: "URL", help: "base URL of the expense server, or 'none' to queue only (default none)") { c, v throws(ConfigurationError) in c.serverURL = v == "none" ? nil : try url(v) },
        Key(name: "token_file", flag: "--token-file", valueName: "FILE", help: "file holding the bearer token (default: $CREDENTIALS_DIRECTORY/token)") { c, v throws(ConfigurationError) in c.tokenFile = try path(v) },
        Key(name: "control_group", flag: "--control-group", valueName: "GROUP", help: "group whose members may use the control socket") { c, v throws(ConfigurationError) in c.controlGroup = try nonEmpty(v) },
        Key(name: "receipt_max_bytes", flag: "--receipt-max-bytes", valueName: "SIZE", help: "largest receipt accepted (default 25M)") { c, v throws(ConfigurationError) in c.receiptMaxBytes = try size(v) },
        Key(name: "control_max_connections", flag: "--control-max-connections", valueName: "N", help: "concurrent control connections (default 64)") { c, v throws(ConfigurationError) in c.controlMaxConnections = try count(v, 1...10_000) },
        Key(name: "control_idle_timeout", flag: "--control-idle-timeout", valueName: "DURATION", help: "close a control connection silent this long (default 30s)") { c, v throws(ConfigurationError) in c.controlIdleTimeoutMilliseconds = try duration(v, atLeast: 100) },
        Key(name: "control_line_max", flag: "--control-line-max", valueName: "SIZE", help: "longest request line (default 1M)") { c, v throws(ConfigurationError) in c.controlLineMaxBytes = try size(v) },
        Key(name: "drain_interval", flag: "--drain-interval", valueName: "DURATION", help: "retry timer while anything is pending (default 5s)") { c, v throws(ConfigurationError) in c.drainIntervalMilliseconds = try duration(v, atLeast: 100) },
        Key(name: "backoff_base", flag: "--backoff-base", valueName: "DURATION", help: "first retry delay ceiling (default 1s)") { c, v throws(ConfigurationError) in c.backoffBaseMilliseconds = try duration(v, atLeast: 1) },
        Key(name: "backoff_cap", flag: "--backoff-cap", valueName: "DURATION", help: "longest retry delay (default 5m)") { c, v throws(ConfigurationError) in c.backoffCapMilliseconds = try duration(v, atLeast: 1) },
        Key(name: "max_attempts", flag: "--max-attempts", valueName: "N", help: "rejections before a job needs attention (default 5)") { c, v throws(ConfigurationError) in c.maxAttempts = try count(v, 1...1000) },
        Key(name: "concurrency", flag: "--concurrency", valueName: "N", help: "requests in flight at once (default 4)") { c, v throws(ConfigurationError) in c.concurrency = try count(v, 1...64) },
        Key(name: "refresh_interval", flag: "--refresh-interval", valueName: "DURATION", help: "how often to fetch server changes (default 15m)") { c, v throws(ConfigurationError) in c.refreshIntervalMilliseconds = try duration(v, atLeast: 1000) },
        Key(name: "connect_timeout", flag: "--connect-timeout", valueName: "DURATION", help: "connect timeout per request (default 10s)") { c, v throws(ConfigurationError) in c.connectTimeoutMilliseconds = try duration(v, atLeast: 100) },
        Key(name: "request_timeout", flag: "--request-timeout", valueName: "DURATION", help: "total timeout per request (default 60s)") { c, v throws(ConfigurationError) in c.requestTimeoutMilliseconds = try duration(v, atLeast: 1000) },
        Key(name: "spool_settle", flag: "--spool-settle", valueName: "DURATION", help: "how long a receipt waits for its sidecar (default 500ms)") { c, v throws(ConfigurationError) in c.spoolSettleMilliseconds = try duration(v) },
        Key(name: "spool_max_bytes", flag: "--spool-max-bytes", valueName: "SIZE", help: "largest spool file taken (default 25M)") { c, v throws(ConfigurationError) in c.spoolMaxBytes = try size(v) },
        Key(name: "log_target", flag: "--log-target", valueName: "auto|journal|stderr", help: "where log lines go (default auto)") { c, v throws(ConfigurationError) in
            guard let target = LogTarget(rawValue: v) else { throw ConfigurationError("must be auto, journal or stderr") }
            c.logTarget = target
        },
    ]

    /// Applies a configuration file's text. Lines are `key = value`; `#`
    /// starts a comment; blank lines are ignored.
    /// - Throws: ``ConfigurationError`` naming the file and line.
    public mutating func apply(fileText: String, path: String) throws(ConfigurationError) {
        var seen: Set<String> = []
        for (index, rawLine) in fileText.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let lineNumber = index + 1
            var line = Substring(rawLine)
            if let hash = line.firstIndex(of: "#") { line = line[..<hash] }
            let text = String(line).trimmingSpaces()
            if text.isEmpty { continue }
            guard let equals = text.firstIndex(of: "=") else {
                throw ConfigurationError("expected 'key = value'", file: path, line: lineNumber)
            }
            let name = String(text[..<equals]).trimmingSpaces()
            let value = String(text[text.index(after: equals)...]).trimmingSpaces()
            guard let key = Self.keys.first(where: { $0.name == name }) else {
                throw ConfigurationError("unknown key '\(name.prefix(64))'", file: path, line: lineNumber)
            }
            guard seen.insert(name).inserted else {
                throw ConfigurationError("'\(name)' is set twice", file: path, line: lineNumber)
            }
            do {
                try key.apply(&self, value)
            } catch {
                throw ConfigurationError("\(name): \(error.message)", file: path, line: lineNumber)
            }
        }
    }
}

/// A configuration value that cannot be used, with where it came from.
public struct ConfigurationError: Error, Sendable, Equatable, CustomStringConvertible {
    public let message: String
    public let file: String?
    public let line: Int?

    public init(_ message: String, file: String? = nil, line: Int? = nil) {
        self.message = message
        self.file = file
        self.line = line
    }

    public var description: String {
        if let file, let line { return "\(file):\(line): \(message)" }
        if let file { return "\(file): \(message)" }
        return message
    }
}

// MARK: Value parsers

private func nonEmpty(_ v: String) throws(ConfigurationError) -> String {
    guard !v.isEmpty else { throw ConfigurationError("must not be empty") }
    return v
}

private func path(_ v: String) throws(ConfigurationError) -> String {
    guard !v.isEmpty else { throw ConfigurationError("must not be empty") }
    guard !v.utf8.contains(0) else { throw ConfigurationError("must not contain NUL") }
    var p = v
    while p.count > 1 && p.hasSuffix("/") { p.removeLast() }
    return p
}

private func url(_ v: String) throws(ConfigurationError) -> String {
    guard v.hasPrefix("http://") || v.hasPrefix("https://"), v.count > 8,
          !v.contains(where: { $0.isWhitespace }) else {
        throw ConfigurationError("must be an http:// or https:// URL")
    }
    guard !v.contains("@") else {
        throw ConfigurationError("must not carry credentials; use token_file")
    }
    var u = v
    while u.hasSuffix("/") { u.removeLast() }
    return u
}

private func count(_ v: String, _ range: ClosedRange<Int>) throws(ConfigurationError) -> Int {
    guard let n = Int(v), range.contains(n) else {
        throw ConfigurationError("must be a whole number from \(range.lowerBound) to \(range.upperBound)")
    }
    return n
}

/// `250ms`, `5s`, `15m`, `1h`, or plain seconds; at least `atLeast` ms
/// (a zero timeout would mean none at all, a zero interval a busy loop).
func duration(_ v: String, atLeast minimum: Int64 = 0) throws(ConfigurationError) -> Int64 {
    let value = try parseDuration(v)
    guard value >= minimum else {
        throw ConfigurationError("must be at least \(minimum >= 1000 && minimum % 1000 == 0 ? "\(minimum / 1000)s" : "\(minimum)ms")")
    }
    return value
}

private func parseDuration(_ v: String) throws(ConfigurationError) -> Int64 {
    let units: [(String, Int64)] = [("ms", 1), ("s", 1000), ("m", 60_000), ("h", 3_600_000)]
    for (suffix, factor) in units where v.hasSuffix(suffix) {
        let number = v.dropLast(suffix.count)
        if let n = Int64(number), n >= 0, n <= 365 * 86_400_000 / factor { return n * factor }
        throw ConfigurationError("must be a duration like 250ms, 5s, 15m or 1h")
    }
    if let n = Int64(v), n >= 0, n <= 365 * 86_400 { return n * 1000 }
    throw ConfigurationError("must be a duration like 250ms, 5s, 15m or 1h")
}

/// `1024`, `512K`, `25M`, `1G` (binary multiples; `KiB`, `MiB`, `GiB` too).
func size(_ v: String) throws(ConfigurationError) -> Int {
    let units: [(String, Int)] = [("KiB", 1 << 10), ("MiB", 1 << 20), ("GiB", 1 << 30), ("K", 1 << 10), ("M", 1 << 20), ("G", 1 << 30)]
    for (suffix, factor) in units where v.hasSuffix(suffix) {
        if let n = Int(v.dropLast(suffix.count)), n > 0, n <= (4 << 30) / factor { return n * factor }
        throw ConfigurationError("must be a size like 1048576, 512K or 25M")
    }
    if let n = Int(v), n > 0, n <= 4 << 30 { return n }
    throw ConfigurationError("must be a size like 1048576, 512K or 25M")
}
