import ExpenseCore

/// One request, checked and typed: what the daemon parses from a line
/// (``parse(_:)``) and what `expensectl` encodes into one (``json``).
public struct ControlRequest: Sendable, Equatable {
    /// Echoed in the response: a string, a number, or null.
    public let id: JSONValue
    public let command: Command
    /// Whose expenses it acts on: the caller's own, unless root or an
    /// `admin_group` member names an account (`account`) or asks for every
    /// account (`all_accounts`), members any op takes.
    public let accounts: AccountSelection

    public init(id: JSONValue, command: Command, accounts: AccountSelection = .caller) {
        self.id = id
        self.command = command
        self.accounts = accounts
    }

    /// Whose expenses a request asks for.
    public enum AccountSelection: Sendable, Equatable {
        /// The caller's own account (from who the peer is).
        case caller
        /// One named account (`"account": NAME`; `""` is the default account).
        case account(String)
        /// Every account (`"all_accounts": true`).
        case all
    }

    public enum Command: Sendable, Equatable {
        /// Queue a new expense. `clientID` makes a retried add idempotent;
        /// `hasReceipt` says a descriptor came with the line.
        /// `receiptPath`: the path the receipt was given as, kept as the expense's source.
        case add(fields: ExpenseFields, clientID: String?, hasReceipt: Bool, receiptPath: String? = nil)
        /// One page of the expenses a query matches (``ListQuery``).
        case list(ListQuery)
        case show(ref: String)
        case retry(ref: String)
        case discard(ref: String)
        case status
        /// Stream the queue's summary; with `changes`, each change of an expense instead.
        case watch(changes: Bool = false)
        /// A pass now; with `refresh`, fetch the server's changes too; with
        /// `now`, send what a metered link holds, in this pass only.
        case sync(refresh: Bool, now: Bool = false)
        case stats
        /// Change fields; with `hasReceipt`, a descriptor came with the
        /// line: the expense's receipt from now on (`fields` may be empty).
        case edit(ref: String, fields: ExpenseFields, hasReceipt: Bool = false)
        case delete(ref: String)
        case resolve(ref: String, takeMine: Bool)
        /// The receipt's bytes, as a descriptor sent with the answer; with
        /// `original`, the bytes as received of a receipt sent as a copy.
        case receipt(ref: String, original: Bool = false)
        /// Read the expense's receipt again now, fill the fields it lacks,
        /// and answer what was read (``ReadResult``).
        case read(ref: String)

        /// Whether a descriptor travels with the line (`"receipt": true`).
        public var takesDescriptor: Bool {
            switch self {
            case .add(_, _, let hasReceipt, _), .edit(_, _, let hasReceipt): hasReceipt
            default: false
            }
        }

        /// The op this command is.
        public var operation: ControlOperation {
            switch self {
            case .add: .add
            case .list: .list
            case .show: .show
            case .retry: .retry
            case .discard: .discard
            case .status: .status
            case .watch: .watch
            case .sync: .sync
            case .stats: .stats
            case .edit: .edit
            case .delete: .delete
            case .resolve: .resolve
            case .receipt: .receipt
            case .read: .read
            }
        }
    }

    /// The ops' names, for `unknown_op` messages and the docs.
    public static let operations = ControlOperation.allCases.map(\.rawValue)

    /// The request as a line's object: what ``parse(_:)`` reads back as
    /// this request (the fields as they are, so normalized ones stay so).
    public var json: JSONValue {
        var members: [String: JSONValue] = ["id": id, "op": .string(command.operation.rawValue)]
        switch accounts {
        case .caller: break
        case .account(let name): members["account"] = .string(name)
        case .all: members["all_accounts"] = true
        }
        switch command {
        case .add(let fields, let clientID, let hasReceipt, let receiptPath):
            members["expense"] = .object(fields.jsonMembers)
            if let clientID { members["client_id"] = .string(clientID) }
            if hasReceipt { members["receipt"] = true }
            if let receiptPath { members["receipt_path"] = .string(receiptPath) }
        case .list(let query):
            members.merge(query.jsonMembers) { _, new in new }
        case .status, .stats:
            break
        case .watch(let changes):
            if changes { members["changes"] = true }
        case .show(let ref), .retry(let ref), .discard(let ref), .delete(let ref), .read(let ref):
            members["ref"] = .string(ref)
        case .receipt(let ref, let original):
            members["ref"] = .string(ref)
            if original { members["original"] = true }
        case .sync(let refresh, let now):
            members["refresh"] = .bool(refresh)
            if now { members["now"] = true }
        case .edit(let ref, let fields, let hasReceipt):
            members["ref"] = .string(ref)
            if !fields.isEmpty || !hasReceipt { members["set"] = .object(fields.jsonMembers) }
            if hasReceipt { members["receipt"] = true }
        case .resolve(let ref, let takeMine):
            members["ref"] = .string(ref)
            members["take"] = .string(takeMine ? "mine" : "server")
        }
        return .object(members)
    }
}
