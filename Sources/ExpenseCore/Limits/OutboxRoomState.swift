/// The outbox's use against its limits (``OutboxLimits``): what `status`
/// shows and the metrics file holds.
public struct OutboxRoomState: Sendable, Equatable {
    public var limits: OutboxLimits
    public var use: OutboxLimits.Use
    /// Whether the drain's headroom is set aside; nil when there is none.
    public var headroomHeld: Bool?

    public init(limits: OutboxLimits, use: OutboxLimits.Use, headroomHeld: Bool?) {
        self.limits = limits
        self.use = use
        self.headroomHeld = headroomHeld
    }
}
