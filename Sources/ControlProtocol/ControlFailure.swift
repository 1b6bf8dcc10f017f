import ExpenseCore

/// An error answer: the request's id (null when it could not be read), a
/// code, a message for people, and the field concerned when there is one.
public struct ControlFailure: Error, Sendable, Equatable, CustomStringConvertible {
    public var id: JSONValue
    public let code: ControlErrorCode
    public let message: String
    public let field: String?

    public init(id: JSONValue = .null, _ code: ControlErrorCode, _ message: String, field: String? = nil) {
        self.id = id
        self.code = code
        self.message = message
        self.field = field
    }

    public var description: String { "\(code): \(message)" }

    /// The response line, without its newline.
    public var json: JSONValue {
        var error: [String: JSONValue] = ["code": .string(code.rawValue), "message": .string(message)]
        if let field { error["field"] = .string(field) }
        return ["id": id, "ok": false, "error": .object(error)]
    }
}

extension ControlFailure {
    /// Reads an error line's object (`{"id", "ok": false, "error": {…}}`).
    /// - Throws: ``ControlDecodingError`` when it is not that shape.
    public init(json: JSONValue) throws(ControlDecodingError) {
        let line = try Members(json, path: "answer")
        let error = try line.object("error")
        self.init(id: line.value("id") ?? .null, ControlErrorCode(rawValue: try error.string("code")), try error.string("message"),
                  field: try error.optionalString("field"))
    }
}
