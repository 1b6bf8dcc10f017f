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
    }
}
