import ControlProtocol
import ExpenseCore
import Posix

/// Identifies one control connection for the life of the daemon.
public typealias ConnectionID = UInt64

/// A checked request handed from the socket thread to the handlers.
public struct IncomingRequest: Sendable {
    public let connection: ConnectionID
    public let request: ControlRequest
    /// The receipt's descriptor, for an `add` that said `"receipt": true`.
    public let receipt: FileDescriptor?
    public let peer: PeerCredentials
}

/// What the socket thread does after writing a response.
public enum ResponseAction: Sendable {
    /// Read the connection's next request.
    case next
    /// Stream queue summaries on this connection from now on (`watch`).
    /// `seenVersion` is the published version current when the answered
    /// summary was read: anything published later is sent too. `scope` is
    /// whose queue it follows (a person's own account, or every account).
    /// With `changes`, each change of an expense in `scope` instead
    /// (the ring's changes after the request came), not summaries.
    case watch(id: JSONValue, seenVersion: Int, scope: AccountScope = .all, changes: Bool = false)
}
