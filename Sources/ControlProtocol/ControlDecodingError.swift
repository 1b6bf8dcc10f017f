import ExpenseCore

/// An answer that is not the shape this version of the protocol gives it:
/// which member, and what was wrong with it. `expensectl` says so rather
/// than show a field it did not find as empty.
public struct ControlDecodingError: Error, Sendable, Equatable, CustomStringConvertible {
    /// Where in the answer: `result.expenses[2].state`.
    public let path: String
    public let problem: String

    public init(path: String, _ problem: String) {
        self.path = path
        self.problem = problem
    }

    public var description: String { "\(path): \(problem)" }
}

/// The members of an answer's object, read by type: each accessor fails
/// with the member's path. A member the encoder always writes must be
/// there (null where it may be null), so a renamed member is an error,
/// never a silent null; members this version does not know are ignored.
struct Members {
    let object: [String: JSONValue]
    let path: String

    init(_ value: JSONValue, path: String) throws(ControlDecodingError) {
        guard case .object(let object) = value else { throw ControlDecodingError(path: path, "expected an object, got \(value.typeName)") }
        self.object = object
        self.path = path
    }

    func at(_ key: String) -> String { "\(path).\(key)" }

    /// The member as it is, absent or not.
    func value(_ key: String) -> JSONValue? { object[key] }

    func required(_ key: String) throws(ControlDecodingError) -> JSONValue {
        guard let value = object[key] else { throw ControlDecodingError(path: at(key), "missing") }
        return value
    }

    func string(_ key: String) throws(ControlDecodingError) -> String {
        let value = try required(key)
        guard let text = value.stringValue else { throw ControlDecodingError(path: at(key), "expected a string, got \(value.typeName)") }
        return text
    }

    /// A string or null, which must be there.
    func nullableString(_ key: String) throws(ControlDecodingError) -> String? {
        let value = try required(key)
        if value.isNull { return nil }
        guard let text = value.stringValue else { throw ControlDecodingError(path: at(key), "expected a string or null, got \(value.typeName)") }
        return text
    }

    /// A string, null, or absent.
    func optionalString(_ key: String) throws(ControlDecodingError) -> String? {
        guard object[key] != nil else { return nil }
        return try nullableString(key)
    }

    func integer(_ key: String) throws(ControlDecodingError) -> Int64 {
        let value = try required(key)
        guard case .integer(let number) = value else { throw ControlDecodingError(path: at(key), "expected a whole number, got \(value.typeName)") }
        return number
    }

    func nullableInteger(_ key: String) throws(ControlDecodingError) -> Int64? {
        let value = try required(key)
        if value.isNull { return nil }
        return try integer(key)
    }

    func int(_ key: String) throws(ControlDecodingError) -> Int {
        let number = try integer(key)
        guard let int = Int(exactly: number) else { throw ControlDecodingError(path: at(key), "out of range") }
        return int
    }

    /// A number, whole or not.
    func number(_ key: String) throws(ControlDecodingError) -> Double {
        switch try required(key) {
        case .number(let number): return number
        case .integer(let number): return Double(number)
        case let value: throw ControlDecodingError(path: at(key), "expected a number, got \(value.typeName)")
        }
    }

    func bool(_ key: String) throws(ControlDecodingError) -> Bool {
        let value = try required(key)
        guard let flag = value.boolValue else { throw ControlDecodingError(path: at(key), "expected true or false, got \(value.typeName)") }
        return flag
    }

    func object(_ key: String) throws(ControlDecodingError) -> Members {
        try Members(try required(key), path: at(key))
    }

    func array(_ key: String) throws(ControlDecodingError) -> [(JSONValue, path: String)] {
        let value = try required(key)
        guard case .array(let items) = value else { throw ControlDecodingError(path: at(key), "expected an array, got \(value.typeName)") }
        return items.enumerated().map { ($1, "\(at(key))[\($0)]") }
    }

    /// One of an enumeration's raw values.
    func choice<T: RawRepresentable>(_ key: String, _ type: T.Type) throws(ControlDecodingError) -> T where T.RawValue == String {
        let text = try string(key)
        guard let value = T(rawValue: text) else { throw ControlDecodingError(path: at(key), "unknown value '\(text.prefix(64))'") }
        return value
    }

    /// A timestamp (RFC 3339, as ``Timestamp`` writes it), in milliseconds.
    func timestamp(_ key: String) throws(ControlDecodingError) -> Int64 {
        let text = try string(key)
        guard let milliseconds = Timestamp.parse(text) else { throw ControlDecodingError(path: at(key), "not a timestamp: '\(text.prefix(64))'") }
        return milliseconds
    }

    func nullableTimestamp(_ key: String) throws(ControlDecodingError) -> Int64? {
        guard try !required(key).isNull else { return nil }
        return try timestamp(key)
    }

    /// A timestamp, null, or absent.
    func optionalTimestamp(_ key: String) throws(ControlDecodingError) -> Int64? {
        guard object[key] != nil else { return nil }
        return try nullableTimestamp(key)
    }
}

/// A timestamp as the protocol writes it, or null.
func timestampJSON(_ milliseconds: Int64?) -> JSONValue {
    milliseconds.map { .string(Timestamp.format(milliseconds: $0)) } ?? .null
}
