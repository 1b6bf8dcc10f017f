/// Limits on what one client can make the daemon hold.
/// The control socket's settings: the daemon maps its configuration into it.
public struct ControlLimits: Sendable, Equatable {
    /// Connections at once; more are refused with an error line.
    public var maxConnections = 64
    /// A connection that says nothing for this long is closed.
    public var idleTimeoutMilliseconds: Int64 = 30_000
    /// The longest request line taken.
    public var lineMaxBytes = 1 << 20
    public init() {}
}
