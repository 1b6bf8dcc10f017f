/// A request target split into its path and its decoded query parameters.
public struct RequestTarget: Sendable {
    /// The path as sent (not percent-decoded: no route needs escapes).
    public let path: String
    /// Query parameters in order, percent-decoded; `nil` when the query
    /// is not valid (a bad escape, or bytes that are not UTF-8).
    public let query: [(name: String, value: String)]?

    public init(_ target: String) {
        if let mark = target.firstIndex(of: "?") {
            path = String(target[..<mark])
            query = Self.parseQuery(target[target.index(after: mark)...])
        } else {
            path = target
            query = []
        }
    }

    /// The single value of parameter `name`.
    /// - Throws: `400 invalid_parameter` when it is given more than once.
    func parameter(_ name: String) throws(APIError) -> String? {
        guard let query else { throw APIError(400, "invalid_parameter", "the query string is not valid percent-encoded UTF-8") }
        let values = query.filter { $0.name == name }
        guard values.count <= 1 else { throw .invalidParameter(name, "given more than once") }
        return values.first?.value
    }

    /// `a=1&b=2` (a query string, or a form body) decoded; `nil` for bad escapes or bytes that are not UTF-8.
    public static func parseQuery(_ text: Substring) -> [(name: String, value: String)]? {
        var result: [(name: String, value: String)] = []
        for pair in text.split(separator: "&", omittingEmptySubsequences: true) {
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            guard let name = decode(parts[0]), let value = decode(parts.count > 1 ? parts[1] : "") else { return nil }
            result.append((name, value))
        }
        return result
    }

    /// Percent-decoding with `+` as space (HTML forms, which query strings follow).
    public static func decode(_ text: Substring) -> String? {
        var bytes: [UInt8] = []
        var iterator = Array(text.utf8).makeIterator()
        while let byte = iterator.next() {
            switch byte {
            case UInt8(ascii: "%"):
                guard let high = iterator.next().flatMap(hexValue), let low = iterator.next().flatMap(hexValue) else { return nil }
                bytes.append(high << 4 | low)
            case UInt8(ascii: "+"): bytes.append(UInt8(ascii: " "))
            default: bytes.append(byte)
            }
        }
        return String(validating: bytes, as: UTF8.self)
    }

    private static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case 0x30...0x39: byte - 0x30
        case 0x41...0x46: byte - 0x41 + 10
        case 0x61...0x66: byte - 0x61 + 10
        default: nil
        }
    }
}
