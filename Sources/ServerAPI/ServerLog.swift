import ExpenseCore
import Posix
import Systemd

/// Where the server's lines go: standard error, or the journal with
/// structured fields when standard error is connected to it (systemd sets
/// `JOURNAL_STREAM`). Never the token, never a body.
public final class ServerLog: Sendable {
    private let toJournal: Bool

    public init(toJournal: Bool = Journal.isStderrConnected) {
        self.toJournal = toJournal
    }

    public enum Priority: Int, Sendable {
        case error = 3, warning = 4, notice = 5, info = 6
    }

    /// A line about the server itself: `expense-server: <message>`.
    public func log(_ priority: Priority, _ message: String) {
        if toJournal {
            Journal.send([("MESSAGE", message), ("PRIORITY", String(priority.rawValue)),
                          ("SYSLOG_IDENTIFIER", "expense-server")])
        } else {
            StandardStreams.writeErrorLine("expense-server: \(message)")
        }
    }

    /// One access log line (docs/server.md, "Access log"):
    /// `POST /v1/expenses 201 1.8ms cp-0206e11a39722b8b0b0d34 replayed=false`.
    public func access(_ entry: AccessEntry) {
        let line = entry.line
        if toJournal {
            var fields: [(String, String)] = [
                ("MESSAGE", line), ("PRIORITY", "6"), ("SYSLOG_IDENTIFIER", "expense-server"),
                ("HTTP_METHOD", entry.method), ("HTTP_PATH", entry.path), ("HTTP_STATUS", entry.statusText),
                ("DURATION_MS", entry.durationText),
            ]
            if let id = entry.transactionID { fields.append(("TRANSACTION_ID", id)) }
            Journal.send(fields)
        } else {
            StandardStreams.writeErrorLine(line)
        }
    }
}

/// What the access log records about one request.
public struct AccessEntry: Sendable {
    var method: String
    var path: String
    /// The status sent; `nil` when no response went out (`000` in the line).
    var status: Int?
    var durationNanoseconds: UInt64
    var transactionID: String?
    var replayed: Bool
    /// Why the exchange ended unusually, as `key=value`: the fault
    /// injected (`fault=drop-response`), or why the server closed the
    /// connection (`closed=timeout`).
    var note: String?

    public init(method: String, path: String, status: Int?, durationNanoseconds: UInt64, transactionID: String?,
                replayed: Bool = false, note: String? = nil) {
        self.method = method
        self.path = path
        self.status = status
        self.durationNanoseconds = durationNanoseconds
        self.transactionID = transactionID
        self.replayed = replayed
        self.note = note
    }

    var statusText: String { status.map { String($0) } ?? "000" }

    var durationText: String {
        let tenths = (durationNanoseconds + 50_000) / 100_000
        return "\(tenths / 10).\(tenths % 10)"
    }

    var line: String {
        var text = "\(Self.printable(method, limit: 32)) \(Self.printable(path, limit: 256)) \(statusText) \(durationText)ms \(transactionID ?? "-") replayed=\(replayed)"
        if let note { text += " \(note)" }
        return text
    }

    /// Client-controlled text made safe for one log line (``LogText``).
    public static func printable(_ text: String, limit: Int) -> String {
        LogText.printable(text, limit: limit)
    }
}
