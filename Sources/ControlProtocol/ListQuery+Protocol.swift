import ExpenseCore

/// `list`'s members (docs/control-protocol.md, "Listing"): each given only
/// when it differs from the default, so a plain `list` is `{"op":"list"}`.
extension ListQuery {
    /// The members a `list` request may have.
    public static let memberNames = ["state", "incomplete", "since", "until", "merchant", "category", "sort", "reverse",
                                     "limit", "offset", "totals"]

    public var jsonMembers: [String: JSONValue] {
        var members: [String: JSONValue] = [:]
        if let state { members["state"] = .string(state.rawValue) }
        if incomplete { members["incomplete"] = true }
        if let since { members["since"] = .string(since) }
        if let until { members["until"] = .string(until) }
        if let merchant { members["merchant"] = .string(merchant) }
        if let category { members["category"] = .string(category) }
        if sort != .added { members["sort"] = .string(sort.rawValue) }
        if reverse { members["reverse"] = true }
        if let limit { members["limit"] = .integer(limit) }
        if offset != 0 { members["offset"] = .integer(offset) }
        if totals { members["totals"] = true }
        return members
    }
}
