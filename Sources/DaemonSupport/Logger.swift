import Posix
import Systemd
#if canImport(Glibc)
import Glibc
#endif

/// Where the daemon's log lines go: structured journal entries when stderr
/// is the journal (or when asked), else `<N>`-prefixed lines on stderr,
/// which systemd and syslog both read as priorities.
public final class Logger: Sendable {
    public enum Priority: Int, Sendable, Comparable {
        case error = 3, warning = 4, notice = 5, info = 6, debug = 7
        public static func < (a: Priority, b: Priority) -> Bool { a.rawValue < b.rawValue }
    }

    let toJournal: Bool
    let threshold: Priority
    /// `<N>` priority prefixes, for journald and syslog reading stderr;
    /// a person at a terminal gets the plain lines.
    let prefixes = isatty(2) == 0

    /// Where lines go: the journal, stderr, or (`auto`) the journal when
    /// stderr is connected to it.
    public enum Target: String, Sendable, Equatable {
        case auto, journal, stderr
    }

    public init(target: Target) {
        switch target {
        case .journal: toJournal = true
        case .stderr: toJournal = false
        case .auto: toJournal = Journal.isStderrConnected
        }
        threshold = Environment["EXPENSED_DEBUG"] != nil ? .debug : .info
    }

    /// Logs one line. When it is about an expense, `transactionID` is both
    /// a journal field (`EXPENSE_TRANSACTION_ID`) and the start of the
    /// message; `account`, its account, is the field `EXPENSE_ACCOUNT`
    /// (empty for the default account); `source`, where the expense came
    /// from (``ExpenseSource/compact``), is `EXPENSE_SOURCE`; `fields` are
    /// more journal fields (names in capitals, values without personal data).
    /// The message is built only when its priority is logged (some debug
    /// lines are per request).
    public func log(_ priority: Priority, _ message: @autoclosure () -> String, transactionID: String? = nil, jobUUID: String? = nil,
                    account: String? = nil, source: String? = nil, messageID: MessageID? = nil, fields: [(String, String)] = []) {
        guard priority <= threshold else { return }
        let text = (transactionID.map { "\($0): " } ?? "") + message()
        if toJournal {
            var entry: [(String, String)] = [
                ("MESSAGE", text), ("PRIORITY", String(priority.rawValue)), ("SYSLOG_IDENTIFIER", "expensed"),
            ]
            if let transactionID { entry.append(("EXPENSE_TRANSACTION_ID", transactionID)) }
            if let jobUUID { entry.append(("EXPENSE_JOB_UUID", jobUUID)) }
            if let account { entry.append(("EXPENSE_ACCOUNT", account)) }
            if let source { entry.append(("EXPENSE_SOURCE", source)) }
            if let messageID { entry.append(("MESSAGE_ID", messageID.rawValue)) }
            entry += fields
            if Journal.send(entry) { return }
        }
        // One write(2) per line, so lines from several threads never interleave.
        StandardStreams.writeErrorLine("\(prefixes ? "<\(priority.rawValue)>" : "")\(text.escapingControlCharacters())")
    }

    public func error(_ m: @autoclosure () -> String, transactionID: String? = nil, jobUUID: String? = nil, account: String? = nil,
                      messageID: MessageID? = nil) {
        log(.error, m(), transactionID: transactionID, jobUUID: jobUUID, account: account, messageID: messageID)
    }
    public func warning(_ m: @autoclosure () -> String, transactionID: String? = nil, jobUUID: String? = nil, account: String? = nil,
                      messageID: MessageID? = nil) {
        log(.warning, m(), transactionID: transactionID, jobUUID: jobUUID, account: account, messageID: messageID)
    }
    public func notice(_ m: @autoclosure () -> String, transactionID: String? = nil, jobUUID: String? = nil, account: String? = nil,
                      messageID: MessageID? = nil) {
        log(.notice, m(), transactionID: transactionID, jobUUID: jobUUID, account: account, messageID: messageID)
    }
    public func info(_ m: @autoclosure () -> String, transactionID: String? = nil, jobUUID: String? = nil, account: String? = nil,
                     source: String? = nil, messageID: MessageID? = nil) {
        log(.info, m(), transactionID: transactionID, jobUUID: jobUUID, account: account, source: source, messageID: messageID)
    }
    public func debug(_ m: @autoclosure () -> String, transactionID: String? = nil, jobUUID: String? = nil, account: String? = nil) {
        log(.debug, m(), transactionID: transactionID, jobUUID: jobUUID, account: account)
    }
}

