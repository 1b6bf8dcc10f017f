import ExpenseCore

/// `sync`'s answer: a pass was asked for (and a refresh, with `refresh`).
public struct SyncResult: ControlResult, Equatable {
    public var triggered: Bool
    public var refresh: Bool

    public init(triggered: Bool = true, refresh: Bool) {
        self.triggered = triggered
        self.refresh = refresh
    }

    public var json: JSONValue { ["triggered": .bool(triggered), "refresh": .bool(refresh)] }

    public init(json: JSONValue) throws(ControlDecodingError) {
        let m = try Members(json, path: "result")
        self.init(triggered: try m.bool("triggered"), refresh: try m.bool("refresh"))
    }
}
