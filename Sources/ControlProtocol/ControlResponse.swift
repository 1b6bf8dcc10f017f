import ExpenseCore

/// What an operation answers: a value the daemon encodes as a response's
/// `result` and `expensectl` decodes from it (docs/control-protocol.md).
/// Encoding then decoding gives the same value, and decoding then encoding
/// the same JSON, so `expensectl --json` prints what the daemon sent.
public protocol ControlResult: Sendable {
    /// - Throws: ``ControlDecodingError`` naming the member that is not as
    ///   this version writes it.
    init(json: JSONValue) throws(ControlDecodingError)
    var json: JSONValue { get }
}

/// One response line: a result or an error, each with the request's id.
public enum ControlResponse: Sendable, Equatable {
    case success(id: JSONValue, result: JSONValue)
    case failure(ControlFailure)

    /// The success line for `result`.
    public init(id: JSONValue, _ result: some ControlResult) {
        self = .success(id: id, result: result.json)
    }

    /// The line's object, without its newline.
    public var json: JSONValue {
        switch self {
        case .success(let id, let result): ["id": id, "ok": true, "result": result]
        case .failure(let failure): failure.json
        }
    }

    /// Reads a response line's object.
    /// - Throws: ``ControlDecodingError`` when it is neither shape.
    public init(json: JSONValue) throws(ControlDecodingError) {
        let line = try Members(json, path: "answer")
        if try line.bool("ok") {
            self = .success(id: line.value("id") ?? .null, result: try line.required("result"))
        } else {
            self = .failure(try ControlFailure(json: json))
        }
    }

    /// The result as `type`.
    /// - Throws: the ``ControlFailure`` the daemon answered, or a
    ///   ``ControlDecodingError`` when the result is not `type`'s shape.
    public func result<Result: ControlResult>(as type: Result.Type) throws -> Result {
        switch self {
        case .success(_, let result):
            return try Result(json: result)
        case .failure(let failure):
            throw failure
        }
    }
}
