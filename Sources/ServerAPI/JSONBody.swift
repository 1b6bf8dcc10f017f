import ExpenseCore

/// A request body that must be one JSON object.
enum JSONBody {
    /// Deepest nesting accepted. The contract's bodies nest two levels;
    /// the limit keeps hostile input from exhausting the stack.
    static let maximumDepth = 32

    /// The members of the body's top-level object.
    /// - Throws: `400 invalid_json` for invalid UTF-8, bad JSON, excessive
    ///   nesting, or anything but an object.
    static func object(_ bytes: [UInt8]) throws(APIError) -> [String: JSONValue] {
        guard !bytes.isEmpty else { throw .invalidJSON("the body is empty; expected a JSON object") }
        guard String(validating: bytes, as: UTF8.self) != nil else {
            throw .invalidJSON("the body is not valid UTF-8")
        }
        let value: JSONValue
        do {
            value = try JSONParser.parse(bytes, maximumDepth: maximumDepth)
        } catch {
            throw .invalidJSON("the body is not valid JSON: \(error.message)")
        }
        guard case .object(let members) = value else {
            throw .invalidJSON("the body must be a JSON object, got \(value.typeName)")
        }
        return members
    }

    /// The canonical bytes of a body (keys sorted, no spaces): what the
    /// idempotency fingerprint hashes, so key order and whitespace do not
    /// make a retry look like another request.
    static func canonical(_ members: [String: JSONValue]) -> [UInt8] {
        var writer = JSONWriter()
        writer.value(.object(members))
        return writer.bytes
    }
}

/// Typed access to an object's members, with errors that name the field.
struct Members {
    let values: [String: JSONValue]
    /// Prefix for field names in messages (`set.` inside a PATCH).
    var prefix = ""

    init(_ values: [String: JSONValue], prefix: String = "") {
        self.values = values
        self.prefix = prefix
    }

    /// A string or null; absent is null.
    func optionalString(_ name: String) throws(APIError) -> String? {
        guard let value = values[name] else { return nil }
        switch value {
        case .null: return nil
        case .string(let s): return s
        default: throw .invalidField(prefix + name, "must be a string or null, got \(value.typeName)")
        }
    }

    /// A whole number in `range`, or null; absent is null.
    func optionalInteger(_ name: String, in range: ClosedRange<Int64>) throws(APIError) -> Int64? {
        guard let value = values[name] else { return nil }
        if value.isNull { return nil }
        switch value {
        case .integer, .number: break
        default: throw .invalidField(prefix + name, "must be a whole number, got \(value.typeName)")
        }
        guard let number = value.intValue else {
            if case .number(let d) = value, d == d.rounded() {
                throw .invalidField(prefix + name, "must be between \(range.lowerBound) and \(range.upperBound)")
            }
            throw .invalidField(prefix + name, "must be a whole number")
        }
        guard range.contains(number) else {
            throw .invalidField(prefix + name, "must be between \(range.lowerBound) and \(range.upperBound)")
        }
        return number
    }
}
