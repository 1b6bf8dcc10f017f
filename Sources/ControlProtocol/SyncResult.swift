import ExpenseCore

/// `sync`'s answer: a pass was asked for (and a refresh, with `refresh`; one
/// that sends what a metered link holds, with `now`).
public struct SyncResult: ControlResult, Equatable {
    public var triggered: Bool
    public var refresh: Bool
    public var now: Bool

    public init(triggered: Bool = true, refresh: Bool, now: Bool = false) {
        self.triggered = triggered
        self.refresh = refresh
        self.now = now
    }

    public var json: JSONValue { ["triggered": .bool(triggered), "refresh": .bool(refresh), "now": .bool(now)] }

    public init(json: JSONValue) throws(ControlDecodingError) {
        let m = try Members(json, path: "result")
        self.init(triggered: try m.bool("triggered"), refresh: try m.bool("refresh"), now: try m.bool("now"))
    }
}
