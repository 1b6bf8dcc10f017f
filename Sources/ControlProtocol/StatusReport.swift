import ExpenseCore

/// `status`'s answer: the summary, where the daemon keeps things, and, with
/// a server configured, what its last contact showed.
public struct StatusReport: ControlResult, Equatable {
    public var summary: QueueSummary
    /// The summary as one line, as systemd's `STATUS=` shows it.
    public var line: String
    public var serverURL: String?
    public var stateDirectory: String
    public var spoolDirectory: String?
    public var deviceID: String
    /// Present when a server is configured.
    public var contact: ServerContact?
    /// With accounts: the one account the summary is of (nil for every account's).
    public var account: String?
    /// With accounts, to root and `admin_group` asking for every account:
    /// each account's queue and credentials.
    public var accounts: [AccountState]?
    /// The outbox's use against its limits (the machine's, in every
    /// account's status); nil from a daemon that could not read it.
    public var outbox: OutboxRoomState?
    /// Present when a server is configured: what a metered link holds.
    public var metered: MeteredState?
    /// What the backend needs of an expense before it creates it, when it
    /// needs anything ("ihatemoney needs an amount and a date to create an
    /// expense"); `summary.incomplete` counts the expenses held for it.
    public var incompleteRule: String?

    /// Whether the link is metered and what that holds (docs/sync.md,
    /// "Metered links"); `summary.held` counts the jobs held.
    public struct MeteredState: Sendable, Equatable {
        /// NetworkManager's `Metered`: `yes`, `guess-yes`, `no`,
        /// `guess-no`, `unknown`; nil when no NetworkManager says (none on
        /// the system bus, or no bus).
        public var network: String?
        /// `metered` in the configuration: `pause-receipts`, `pause`, `ignore`.
        public var mode: String
        /// What waits now, or nil: "receipt uploads paused (metered = pause-receipts)".
        public var hold: String?

        public init(network: String?, mode: String, hold: String?) {
            self.network = network
            self.mode = mode
            self.hold = hold
        }
    }

    /// One account's part, in `status` to those who may see every account.
    public struct AccountState: Sendable, Equatable {
        public var account: String
        /// Its queue; `server` is `needs_credentials` while it is paused.
        public var summary: QueueSummary
        /// Why its token cannot be used (missing, unreadable, mode), when it cannot.
        public var tokenProblem: String?
        /// Its last failed request, while none of its own has succeeded since
        /// (`lastContactMilliseconds` unused: the contact is the server's).
        public var lastError: ServerContact?

        public init(account: String, summary: QueueSummary, tokenProblem: String?, lastError: ServerContact? = nil) {
            self.account = account
            self.summary = summary
            self.tokenProblem = tokenProblem
            self.lastError = lastError
        }

        var json: JSONValue {
            var object = summary.members
            object["spool_rejected"] = nil
            object["spool_waiting"] = nil
            object["held"] = nil
            object["incomplete"] = nil
            object["incomplete_jobs"] = nil
            object["account"] = .string(account)
            object["token_problem"] = .string(tokenProblem)
            object["last_error_class"] = .string(lastError?.lastErrorClass)
            object["last_error"] = .string(lastError?.lastError)
            object["last_error_at"] = timestampJSON(lastError?.lastErrorMilliseconds)
            return .object(object)
        }

        init(_ value: JSONValue, path: String) throws(ControlDecodingError) {
            let m = try Members(value, path: path)
            var summary = QueueSummary()
            summary.queued = try m.int("queued")
            summary.sending = try m.int("sending")
            summary.needsAttention = try m.int("needs_attention")
            summary.oldestJobMilliseconds = try m.nullableTimestamp("oldest_job_at")
            summary.server = try m.choice("server", QueueSummary.ServerState.self)
            summary.reading = try m.int("reading")
            var lastError: ServerContact?
            if let at = try m.nullableTimestamp("last_error_at") {
                lastError = ServerContact(lastContactMilliseconds: nil, lastErrorClass: try m.nullableString("last_error_class"),
                                          lastError: try m.nullableString("last_error"), lastErrorMilliseconds: at)
            }
            self.init(account: try m.string("account"), summary: summary, tokenProblem: try m.nullableString("token_problem"), lastError: lastError)
        }
    }

    /// The server's record as of the last contact (docs/control-protocol.md,
    /// "The server's state"); `summary.server` says what it is now.
    public struct ServerContact: Sendable, Equatable {
        public var lastContactMilliseconds: Int64?
        public var lastErrorClass: String?
        public var lastError: String?
        public var lastErrorMilliseconds: Int64?

        public init(lastContactMilliseconds: Int64?, lastErrorClass: String?, lastError: String?, lastErrorMilliseconds: Int64?) {
            self.lastContactMilliseconds = lastContactMilliseconds
            self.lastErrorClass = lastErrorClass
            self.lastError = lastError
            self.lastErrorMilliseconds = lastErrorMilliseconds
        }
    }

    public init(summary: QueueSummary, line: String, serverURL: String?, stateDirectory: String, spoolDirectory: String?,
                deviceID: String, contact: ServerContact?) {
        self.summary = summary
        self.line = line
        self.serverURL = serverURL
        self.stateDirectory = stateDirectory
        self.spoolDirectory = spoolDirectory
        self.deviceID = deviceID
        self.contact = contact
    }

    public var json: JSONValue {
        var object = summary.members
        object["line"] = .string(line)
        object["server_url"] = .string(serverURL)
        object["state_dir"] = .string(stateDirectory)
        object["spool_dir"] = .string(spoolDirectory)
        object["device_id"] = .string(deviceID)
        if let account { object["account"] = .string(account) }
        if let accounts { object["accounts"] = .array(accounts.map(\.json)) }
        object["outbox"] = outbox.map(Self.json) ?? .null
        if let metered {
            object["network_metered"] = .string(metered.network)
            object["metered_mode"] = .string(metered.mode)
            object["metered_hold"] = .string(metered.hold)
        }
        object["incomplete_rule"] = .string(incompleteRule)
        if let contact {
            object["last_contact_at"] = timestampJSON(contact.lastContactMilliseconds)
            object["last_error_class"] = .string(contact.lastErrorClass)
            object["last_error"] = .string(contact.lastError)
            object["last_error_at"] = timestampJSON(contact.lastErrorMilliseconds)
        }
        return .object(object)
    }

    public init(json: JSONValue) throws(ControlDecodingError) {
        let m = try Members(json, path: "result")
        var contact: ServerContact?
        if m.value("last_contact_at") != nil {
            contact = ServerContact(lastContactMilliseconds: try m.nullableTimestamp("last_contact_at"),
                                    lastErrorClass: try m.nullableString("last_error_class"), lastError: try m.nullableString("last_error"),
                                    lastErrorMilliseconds: try m.nullableTimestamp("last_error_at"))
        }
        self.init(summary: try QueueSummary(m), line: try m.string("line"), serverURL: try m.nullableString("server_url"),
                  stateDirectory: try m.string("state_dir"), spoolDirectory: try m.nullableString("spool_dir"),
                  deviceID: try m.string("device_id"), contact: contact)
        if m.value("metered_mode") != nil {
            metered = MeteredState(network: try m.nullableString("network_metered"), mode: try m.string("metered_mode"),
                                   hold: try m.nullableString("metered_hold"))
        }
        if m.value("account") != nil { account = try m.string("account") }
        if let value = m.value("outbox"), !value.isNull { outbox = try Self.outbox(try m.object("outbox")) }
        incompleteRule = try m.nullableString("incomplete_rule")
        if let list = m.value("accounts") {
            guard case .array(let items) = list else { throw ControlDecodingError(path: "result.accounts", "must be an array") }
            accounts = try items.enumerated().map { (index, item) throws(ControlDecodingError) in try AccountState(item, path: "result.accounts[\(index)]") }
        }
    }
}

extension StatusReport {
    static func json(_ state: OutboxRoomState) -> JSONValue {
        [
            "jobs": .integer(Int64(state.use.jobs)),
            "max_jobs": .integer(Int64(state.limits.maxJobs)),
            "receipt_bytes": .integer(state.use.receiptBytes),
            "max_receipt_bytes": .integer(state.limits.maxReceiptBytes),
            "disk_free": state.use.diskFreeBytes.map { .integer($0) } ?? .null,
            "disk_reserve": .integer(state.limits.diskReserveBytes),
            "headroom_held": state.headroomHeld.map { .bool($0) } ?? .null,
        ]
    }

    static func outbox(_ m: Members) throws(ControlDecodingError) -> OutboxRoomState {
        let headroom = try m.required("headroom_held")
        var held: Bool?
        if !headroom.isNull { held = try m.bool("headroom_held") }
        return OutboxRoomState(limits: OutboxLimits(maxJobs: try m.int("max_jobs"), maxReceiptBytes: try m.integer("max_receipt_bytes"),
                                                    diskReserveBytes: try m.integer("disk_reserve")),
                               use: OutboxLimits.Use(jobs: try m.int("jobs"), receiptBytes: try m.integer("receipt_bytes"),
                                                     diskFreeBytes: try m.nullableInteger("disk_free"), headroomMissing: held == false),
                               headroomHeld: held)
    }
}
