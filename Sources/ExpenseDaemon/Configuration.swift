import DaemonSupport
import ExpenseCore
import ReceiptCopy
import ReceiptReading
import SyncEngine

/// Everything `expensed` can be told, from `/etc/expensed/expensed.conf`
/// and command-line flags (flags win). docs/configuration.md lists each key.
public struct Configuration: Sendable, Equatable {
    public var configFile = "/etc/expensed/expensed.conf"
    public var stateDirectory = "/var/lib/expensed"
    public var socketPath = "/run/expensed/control.sock"
    public var spoolDirectory: String? = "/var/spool/expensed"
    public var serverURL: String?
    public var tokenFile: String?
    /// One token file per local user name: each user's own account.
    public var accountsDirectory: String?
    /// Members of this group (and root) may act on every account.
    public var adminGroup: String?
    /// Members of this group may use the control socket (besides root and the daemon's user).
    public var controlGroup: String?
    public var receiptMaxBytes = 25 * 1024 * 1024
    /// Receipts of at least this many bytes go to expense-server as
    /// resumable uploads (docs/sync.md); nil: never.
    public var resumableUploadMinBytes: Int64? = 2 << 20
    /// The longest edge of a receipt's legible copy (docs/receipts.md).
    public var receiptMaxEdge = 2500
    /// A receipt whose header claims more pixels is refused before decoding.
    public var receiptMaxPixels = 100_000_000
    /// How long the sandboxed decoder may take for one receipt.
    public var receiptDecodeTimeoutMilliseconds: Int64 = 120_000
    /// The sandboxed decoder; nil: `expensed-decode` beside `expensed`.
    public var receiptDecoder: String?
    /// How long the original of a receipt sent as a copy is kept after it
    /// was received: nil forever, 0 not once the copy is sent.
    public var receiptOriginalRetentionMilliseconds: Int64?
    /// Tesseract's languages for reading receipts, each installed at start.
    public var receiptLanguages = ["eng"]
    /// Where their `NAME.traineddata` files are.
    public var receiptTessdata = ReadSettings.debianTessdata
    /// How a date that reads two ways is read; nil: as the locale writes dates.
    public var receiptDateOrder: DateOrder?
    /// The currency of a receipt that names none, and which dollar `$` is.
    public var receiptCurrency: String?
    /// Whether receipts are read, their fields suggested (`reading`).
    public var reading = true
    /// How long a receipt-only expense's create waits for its reading.
    public var readingWaitMilliseconds: Int64 = 120_000
    /// How long the sandboxed reader may take for one receipt.
    public var readingTimeoutMilliseconds: Int64 = 120_000
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
    /// Certificate authorities to trust for an `https://` server (PEM), instead of the system's.
    public var caFile: String?
    public var spoolSettleMilliseconds: Int64 = 500
    public var spoolSidecarWindowMilliseconds: Int64 = 10 * 60_000
    public var spoolMaxBytes = 25 * 1024 * 1024
    /// How often to scan the spool besides inotify: nil is `auto` (on a
    /// network file system only), 0 is `off`.
    public var spoolScanIntervalMilliseconds: Int64?
    /// The outbox's limits (docs/sync.md, "A bounded outbox"): nil sizes
    /// are derived from the state directory's file system at start.
    public var outboxMaxJobs = OutboxLimitSettings.defaultMaxJobs
    public var outboxMaxReceiptBytes: Int64?
    public var diskReserve: OutboxLimitSettings.DiskReserve?
    /// Where the daemon writes its figures in Prometheus's text format; nil: nowhere.
    public var metricsFile: String?
    public var logTarget: Logger.Target = .auto
    /// What a metered link holds back (NetworkManager's `Metered`, docs/sync.md).
    public var metered = MeteredMode.pauseReceipts
    /// What kind of backend `server` is, and its own keys (Configuration+Backend.swift).
    public var backend = BackendKind.expenseServer
    public var ihatemoneyPayer: String?
    /// Each account's paying member, by account name (with `accounts_dir`).
    public var ihatemoneyPayers: [String: String] = [:]
    /// nil: all the project's active members.
    public var ihatemoneyPayedFor: [String]?
    public var favaExpenseAccount = Configuration.defaultFavaExpenseAccount
    public var favaFundingAccount = Configuration.defaultFavaFundingAccount

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
        Key(name: "ca_file", flag: "--ca-file", valueName: "FILE", help: "PEM certificate authorities to trust for an https:// server, instead of the system's") { c, v throws(ConfigurationError) in c.caFile = try path(v) },
        Key(name: "token_file", flag: "--token-file", valueName: "FILE", help: "file holding the bearer token (default: $CREDENTIALS_DIRECTORY/token)") { c, v throws(ConfigurationError) in c.tokenFile = try path(v) },
        Key(name: "accounts_dir", flag: "--accounts-dir", valueName: "DIR", help: "one token file per local user name, each user's own account") { c, v throws(ConfigurationError) in c.accountsDirectory = try path(v) },
        Key(name: "admin_group", flag: "--admin-group", valueName: "GROUP", help: "group whose members may act on every account (--account, --all-accounts)") { c, v throws(ConfigurationError) in c.adminGroup = try nonEmpty(v) },
        Key(name: "control_group", flag: "--control-group", valueName: "GROUP", help: "group whose members may use the control socket") { c, v throws(ConfigurationError) in c.controlGroup = try nonEmpty(v) },
        Key(name: "receipt_max_bytes", flag: "--receipt-max-bytes", valueName: "SIZE", help: "largest receipt accepted (default 25M)") { c, v throws(ConfigurationError) in c.receiptMaxBytes = try size(v, 1...(4 << 30)) },
        Key(name: "resumable_upload_min_bytes", flag: "--resumable-upload-min-bytes", valueName: "SIZE|never", help: "receipts at least this large go to expense-server as resumable uploads (default 2M)") { c, v throws(ConfigurationError) in
            guard v != "never" else {
                c.resumableUploadMinBytes = nil
                return
            }
            do throws(ConfigurationError) {
                c.resumableUploadMinBytes = Int64(try size(v, 1...(4 << 30)))
            } catch {
                throw ConfigurationError("\(error.message), or never")
            }
        },
        Key(name: "receipt_max_edge", flag: "--receipt-max-edge", valueName: "PIXELS", help: "longest edge of the legible copy a backend is sent (default 2500)") { c, v throws(ConfigurationError) in c.receiptMaxEdge = try count(v, 256...20_000) },
        Key(name: "receipt_max_pixels", flag: "--receipt-max-pixels", valueName: "N", help: "refuse a receipt whose header claims more pixels, before decoding (default 100000000)") { c, v throws(ConfigurationError) in c.receiptMaxPixels = try count(v, 1_000...1_000_000_000) },
        Key(name: "receipt_decode_timeout", flag: "--receipt-decode-timeout", valueName: "DURATION", help: "time the sandboxed decoder is given for one receipt (default 2m)") { c, v throws(ConfigurationError) in c.receiptDecodeTimeoutMilliseconds = try duration(v, 1_000...hour) },
        Key(name: "receipt_original_retention", flag: "--receipt-original-retention", valueName: "DURATION|forever|no", help: "how long the original of a receipt sent as a legible copy is kept (default forever)") { c, v throws(ConfigurationError) in
            switch v {
            case "forever": c.receiptOriginalRetentionMilliseconds = nil
            case "no": c.receiptOriginalRetentionMilliseconds = 0
            default:
                guard let value = DurationText.milliseconds(v) else {
                    throw ConfigurationError("must be forever, no, or a duration up to 365d, like 30d or 12h")
                }
                c.receiptOriginalRetentionMilliseconds = value
            }
        },
        Key(name: "receipt_languages", flag: "--receipt-languages", valueName: "LANGS", help: "Tesseract's languages for reading receipts, like 'eng deu' (default eng)") { c, v throws(ConfigurationError) in
            let names = v.split(whereSeparator: { $0 == " " || $0 == "\t" || $0 == "+" }).map(String.init)
            if let problem = ReadingLanguages.firstInvalid(names) { throw ConfigurationError(problem) }
            c.receiptLanguages = names
        },
        Key(name: "receipt_tessdata", flag: "--receipt-tessdata", valueName: "DIR", help: "where the languages' .traineddata files are (default \(ReadSettings.debianTessdata))") { c, v throws(ConfigurationError) in
            let directory = try path(v)
            guard directory.hasPrefix("/") else { throw ConfigurationError("must be an absolute path") }
            c.receiptTessdata = directory
        },
        Key(name: "receipt_date_order", flag: "--receipt-date-order", valueName: "locale|day-first|month-first", help: "how a receipt's 03/04/2026 is read (default locale)") { c, v throws(ConfigurationError) in
            if v == "locale" { c.receiptDateOrder = nil; return }
            guard let order = DateOrder(rawValue: v) else { throw ConfigurationError("must be locale, day-first or month-first") }
            c.receiptDateOrder = order
        },
        Key(name: "receipt_currency", flag: "--receipt-currency", valueName: "CODE|none", help: "currency of a receipt that names none, and of a bare $ (default none)") { c, v throws(ConfigurationError) in
            if v == "none" { c.receiptCurrency = nil; return }
            guard v.utf8.count == 3, v.utf8.allSatisfy({ $0 >= 0x41 && $0 <= 0x5A }), Currency.isKnown(v) else {
                throw ConfigurationError("must be none or an ISO 4217 code in capitals, like EUR")
            }
            c.receiptCurrency = v
        },
        Key(name: "reading", flag: "--reading", valueName: "on|off", help: "read receipts and suggest their fields (default on)") { c, v throws(ConfigurationError) in
            switch v {
            case "on": c.reading = true
            case "off": c.reading = false
            default: throw ConfigurationError("must be on or off")
            }
        },
        Key(name: "reading_wait", flag: "--reading-wait", valueName: "DURATION", help: "how long a receipt-only expense waits for its reading before it is sent (default 2m)") { c, v throws(ConfigurationError) in c.readingWaitMilliseconds = try duration(v, 0...hour) },
        Key(name: "reading_timeout", flag: "--reading-timeout", valueName: "DURATION", help: "time the sandboxed reader is given for one receipt (default 2m)") { c, v throws(ConfigurationError) in c.readingTimeoutMilliseconds = try duration(v, 100...hour) },
        Key(name: "receipt_decoder", flag: "--receipt-decoder", valueName: "FILE", help: "the sandboxed receipt decoder (default: expensed-decode beside expensed)") { c, v throws(ConfigurationError) in c.receiptDecoder = try path(v) },
        Key(name: "control_max_connections", flag: "--control-max-connections", valueName: "N", help: "concurrent control connections (default 64)") { c, v throws(ConfigurationError) in c.controlMaxConnections = try count(v, 1...10_000) },
        Key(name: "control_idle_timeout", flag: "--control-idle-timeout", valueName: "DURATION", help: "close a control connection silent this long (default 30s)") { c, v throws(ConfigurationError) in c.controlIdleTimeoutMilliseconds = try duration(v, 100...day) },
        Key(name: "control_line_max", flag: "--control-line-max", valueName: "SIZE", help: "longest request line (default 1M)") { c, v throws(ConfigurationError) in c.controlLineMaxBytes = try size(v, 1024...(64 << 20)) },
        Key(name: "drain_interval", flag: "--drain-interval", valueName: "DURATION", help: "retry timer while anything is pending (default 5s)") { c, v throws(ConfigurationError) in c.drainIntervalMilliseconds = try duration(v, 100...day) },
        Key(name: "backoff_base", flag: "--backoff-base", valueName: "DURATION", help: "first retry delay ceiling (default 1s)") { c, v throws(ConfigurationError) in c.backoffBaseMilliseconds = try duration(v, 1...hour) },
        Key(name: "backoff_cap", flag: "--backoff-cap", valueName: "DURATION", help: "longest retry delay (default 5m)") { c, v throws(ConfigurationError) in c.backoffCapMilliseconds = try duration(v, 1...day) },
        Key(name: "max_attempts", flag: "--max-attempts", valueName: "N", help: "rejections before a job needs attention (default 5)") { c, v throws(ConfigurationError) in c.maxAttempts = try count(v, 1...1000) },
        Key(name: "concurrency", flag: "--concurrency", valueName: "N", help: "requests in flight at once (default 4)") { c, v throws(ConfigurationError) in c.concurrency = try count(v, 1...64) },
        Key(name: "refresh_interval", flag: "--refresh-interval", valueName: "DURATION", help: "how often to fetch server changes (default 15m)") { c, v throws(ConfigurationError) in c.refreshIntervalMilliseconds = try duration(v, 1000...(7 * day)) },
        Key(name: "connect_timeout", flag: "--connect-timeout", valueName: "DURATION", help: "connect timeout per request (default 10s)") { c, v throws(ConfigurationError) in c.connectTimeoutMilliseconds = try duration(v, 100...(10 * minute)) },
        Key(name: "request_timeout", flag: "--request-timeout", valueName: "DURATION", help: "total timeout per request (default 60s)") { c, v throws(ConfigurationError) in c.requestTimeoutMilliseconds = try duration(v, 1000...day) },
        Key(name: "spool_settle", flag: "--spool-settle", valueName: "DURATION", help: "how long a receipt waits for its sidecar, and 20 times that a truncated one for its writer (default 500ms)") { c, v throws(ConfigurationError) in c.spoolSettleMilliseconds = try duration(v, 0...hour) },
        Key(name: "spool_sidecar_window", flag: "--spool-sidecar-window", valueName: "DURATION", help: "a sidecar this late for a receipt taken alone edits its expense; 0 turns it off (default 10m)") { c, v throws(ConfigurationError) in c.spoolSidecarWindowMilliseconds = try duration(v, 0...(7 * day)) },
        Key(name: "spool_scan_interval", flag: "--spool-scan-interval", valueName: "DURATION", help: "also scan the spool this often; auto: every 10s on a network file system, never elsewhere; 0 or off: never (default auto)") { c, v throws(ConfigurationError) in c.spoolScanIntervalMilliseconds = try scanInterval(v) },
        Key(name: "spool_max_bytes", flag: "--spool-max-bytes", valueName: "SIZE", help: "largest spool file taken (default 25M)") { c, v throws(ConfigurationError) in c.spoolMaxBytes = try size(v, 1...(4 << 30)) },
        Key(name: "outbox_max_jobs", flag: "--outbox-max-jobs", valueName: "N", help: "jobs the outbox holds at most; adds past it are refused (default 100000)") { c, v throws(ConfigurationError) in c.outboxMaxJobs = try count(v, 1...100_000_000) },
        Key(name: "outbox_max_receipt_bytes", flag: "--outbox-max-receipt-bytes", valueName: "SIZE|auto", help: "receipt bytes the outbox holds at most (default auto: 2G, or a quarter of the state directory's file system if less)") { c, v throws(ConfigurationError) in
            c.outboxMaxReceiptBytes = v == "auto" ? nil : Int64(try size(v, (1 << 20)...(1 << 50)))
        },
        Key(name: "disk_reserve", flag: "--disk-reserve", valueName: "SIZE|PERCENT|auto", help: "free space of the state directory's file system that adds never take (default auto: 5%, at most 1G)") { c, v throws(ConfigurationError) in c.diskReserve = try reserve(v) },
        Key(name: "metrics_file", flag: "--metrics-file", valueName: "FILE|none", help: "keep the daemon's figures in this file in Prometheus's text format (default none)") { c, v throws(ConfigurationError) in c.metricsFile = v == "none" ? nil : try path(v) },
        Key(name: "metered", flag: "--metered", valueName: "pause-receipts|pause|ignore", help: "on a metered link (NetworkManager): hold receipt uploads, all sending, or nothing (default pause-receipts)") { c, v throws(ConfigurationError) in
            guard let mode = MeteredMode(rawValue: v) else { throw ConfigurationError("must be pause-receipts, pause or ignore") }
            c.metered = mode
        },
        Key(name: "log_target", flag: "--log-target", valueName: "auto|journal|stderr", help: "where log lines go (default auto)") { c, v throws(ConfigurationError) in
            guard let target = Logger.Target(rawValue: v) else { throw ConfigurationError("must be auto, journal or stderr") }
            c.logTarget = target
        },
    ] + backendKeys

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

/// Digits only: `Int("+5")` and `Int("-0")` would pass.
private func wholeNumber(_ v: Substring) -> Int? {
    guard !v.isEmpty, v.count <= 18, v.allSatisfy({ $0 >= "0" && $0 <= "9" }) else { return nil }
    return Int(v)
}

private func count(_ v: String, _ range: ClosedRange<Int>) throws(ConfigurationError) -> Int {
    guard let n = wholeNumber(Substring(v)), range.contains(n) else {
        throw ConfigurationError("must be a whole number from \(range.lowerBound) to \(range.upperBound)")
    }
    return n
}

private let minute: Int64 = 60_000
private let hour: Int64 = 3_600_000
private let day: Int64 = 86_400_000

/// A duration in ``DurationText``'s syntax (`250ms`, `5s`, `1.5m`, `1h`, `2d`,
/// or plain seconds) within `range` ms: a zero timeout would mean none at
/// all, a zero interval a busy loop, and a year-long one a hung daemon.
func duration(_ v: String, _ range: ClosedRange<Int64>) throws(ConfigurationError) -> Int64 {
    let bounds = "from \(DurationText.describe(milliseconds: range.lowerBound)) to \(DurationText.describe(milliseconds: range.upperBound))"
    guard let value = DurationText.milliseconds(v) else {
        throw ConfigurationError("must be a duration \(bounds), like 250ms, 5s, 15m or 1h")
    }
    guard range.contains(value) else { throw ConfigurationError("must be \(bounds)") }
    return value
}

/// `spool_scan_interval`: `auto` (nil), `off` or a zero duration (0), or a
/// duration from 100ms to 1d: shorter would list the spool in a busy loop.
func scanInterval(_ v: String) throws(ConfigurationError) -> Int64? {
    let allowed = "must be auto, off (or 0), or a duration from 100ms to 1d, like 10s or 1m"
    switch v {
    case "auto": return nil
    case "off": return 0
    default:
        guard let value = DurationText.milliseconds(v), value == 0 || (100...day).contains(value) else {
            throw ConfigurationError(allowed)
        }
        return value
    }
}

/// `disk_reserve`: `auto` (nil), a size (``size(_:_:)``, 0 to 1T), or a
/// whole percentage of the file system from 0% to 50% (more would keep
/// most of it from the daemon that is meant to use it).
func reserve(_ v: String) throws(ConfigurationError) -> OutboxLimitSettings.DiskReserve? {
    if v == "auto" { return nil }
    if v.hasSuffix("%") {
        guard let percent = wholeNumber(v.dropLast()), percent <= 50 else {
            throw ConfigurationError("must be auto, a size like 256M or 2G, or a percentage from 0% to 50%, like 5%")
        }
        return .percent(percent)
    }
    do {
        return .bytes(Int64(try size(v, 0...(1 << 40))))
    } catch {
        throw ConfigurationError("must be auto, a size from 0 to 1T like 256M or 2G, or a percentage from 0% to 50%, like 5%")
    }
}

/// `1024`, `512K`, `25M`, `1G`, `1T` (binary multiples; `KiB`, `MiB`, `GiB`, `TiB` too), within `range` bytes.
func size(_ v: String, _ range: ClosedRange<Int>) throws(ConfigurationError) -> Int {
    func describe(_ n: Int) -> String {
        for (suffix, unit) in [("T", 1 << 40), ("G", 1 << 30), ("M", 1 << 20), ("K", 1 << 10)] where n >= unit && n % unit == 0 { return "\(n / unit)\(suffix)" }
        return "\(n)"
    }
    let bounds = "from \(describe(range.lowerBound)) to \(describe(range.upperBound))"
    let units: [(String, Int)] = [("KiB", 1 << 10), ("MiB", 1 << 20), ("GiB", 1 << 30), ("TiB", 1 << 40), ("K", 1 << 10), ("M", 1 << 20), ("G", 1 << 30), ("T", 1 << 40)]
    var number = Substring(v), factor = 1
    if let unit = units.first(where: { v.hasSuffix($0.0) }) {
        number = number.dropLast(unit.0.count)
        factor = unit.1
    }
    guard let n = wholeNumber(number), case let (bytes, false) = n.multipliedReportingOverflow(by: factor) else {
        throw ConfigurationError("must be a size \(bounds), like 1048576, 512K or 25M")
    }
    guard range.contains(bytes) else { throw ConfigurationError("must be \(bounds)") }
    return bytes
}
