import Synchronization

/// One transition of an expense's state, as the store committed it: what
/// `watch` shows a line of. Not persisted; `watch` is a live view.
public struct ExpenseChange: Sendable, Equatable {
    /// Given by the daemon's ring of recent changes, in the order they came;
    /// 0 until then.
    public var seq: Int64 = 0
    /// Its number among its account's changes, given with `seq`: a watcher
    /// of one account counts what it missed of that account's alone.
    public var accountSeq: Int64 = 0
    /// When it committed (wall clock, milliseconds since 1970).
    public var wallMilliseconds: Int64
    public var account: String
    public var transactionID: String
    /// The state before: nil for a new expense.
    public var from: String?
    /// `queued`, `sending`, `synced`, `conflict` (synced, with a value the
    /// server held back), `needs_attention`, `deleting`, `deleted`,
    /// `discarded` (a state, or how its pending work ended).
    public var to: String
    /// Why, when there is more to say: the server's refusal, a retry's delay.
    public var reason: String?

    public init(account: String, transactionID: String, from: String?, to: String, reason: String? = nil,
                wallMilliseconds: Int64 = 0) {
        self.account = account
        self.transactionID = transactionID
        self.from = from
        self.to = to
        self.reason = reason
        self.wallMilliseconds = wallMilliseconds
    }

    /// The object `watch --json` prints a line of (docs/control-protocol.md).
    public var json: JSONValue {
        .object([
            "seq": .integer(seq), "at": .string(Timestamp.format(milliseconds: wallMilliseconds)),
            "account": .string(account), "transaction_id": .string(transactionID),
            "from": from.map(JSONValue.string) ?? .null, "to": .string(to), "reason": reason.map(JSONValue.string) ?? .null,
        ])
    }

    /// Reads back ``json``; nil when a member is missing or of the wrong type.
    public init?(json value: JSONValue) {
        guard let seq = value["seq"]?.intValue, let at = value["at"]?.stringValue.flatMap(Timestamp.parse),
              let account = value["account"]?.stringValue, let transactionID = value["transaction_id"]?.stringValue,
              let to = value["to"]?.stringValue else { return nil }
        self.init(account: account, transactionID: transactionID, from: value["from"]?.stringValue, to: to,
                  reason: value["reason"]?.stringValue, wallMilliseconds: at)
        self.seq = seq
    }
}

/// Where the store's changes go: the daemon's control server.
public protocol ChangeSink: AnyObject, Sendable {
    /// Whether someone listens now.
    var wantsChanges: Bool { get }
    func publish(changes: [ExpenseChange])
}

/// Where the store hands the changes it committed: nowhere until the
/// daemon connects a sink, and while nobody wants them (then the store does
/// not even look up what they need: a write pays a lock and a counter's load).
///
/// The sink is an object, not a pair of closures: a closure kept in a
/// `Mutex` and copied out on each call is wrapped in two more
/// reabstraction thunks every time (Swift 6.3), so each call ran through
/// all the wrappers of those before it.
public final class ChangeFeed: Sendable {
    private let sink = Mutex<(any ChangeSink)?>(nil)

    public init() {}

    /// Sends changes to `sink` from now on, whenever it wants them.
    public func connect(_ sink: any ChangeSink) {
        self.sink.withLock { $0 = sink }
    }

    /// Whether someone listens now: the store looks up what a change needs
    /// only then.
    public var isWanted: Bool { sink.withLock { $0 }?.wantsChanges == true }

    /// Hands `changes` to the sink, stamped `now` (wall clock,
    /// milliseconds) unless they carry their own time.
    public func deliver(_ changes: [ExpenseChange], at now: Int64) {
        guard !changes.isEmpty, let sink = sink.withLock({ $0 }) else { return }
        sink.publish(changes: changes.map { change in
            var stamped = change
            if stamped.wallMilliseconds == 0 { stamped.wallMilliseconds = now }
            return stamped
        })
    }
}
