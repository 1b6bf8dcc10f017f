/// Writes compact JSON straight into bytes: the server's responses and the
/// canonical form of request bodies (sorted keys, no spaces) that
/// idempotency fingerprints hash.
public struct JSONWriter {
    public private(set) var bytes: [UInt8] = []
    /// Whether the next value in the current container needs a comma first.
    private var needsComma = false

    public init() { bytes.reserveCapacity(512) }

    public mutating func beginObject() { separate(); bytes.append(UInt8(ascii: "{")); needsComma = false }
    public mutating func endObject() { bytes.append(UInt8(ascii: "}")); needsComma = true }
    public mutating func beginArray() { separate(); bytes.append(UInt8(ascii: "[")); needsComma = false }
    public mutating func endArray() { bytes.append(UInt8(ascii: "]")); needsComma = true }

    public mutating func key(_ name: String) {
        separate()
        appendQuoted(name)
        bytes.append(UInt8(ascii: ":"))
        needsComma = false
    }

    public mutating func string(_ value: String?) {
        separate()
        if let value { appendQuoted(value) } else { bytes.append(contentsOf: "null".utf8) }
        needsComma = true
    }

    public mutating func integer(_ value: Int64) {
        separate()
        bytes.append(contentsOf: String(value).utf8)
        needsComma = true
    }

    public mutating func bool(_ value: Bool) {
        separate()
        bytes.append(contentsOf: (value ? "true" : "false").utf8)
        needsComma = true
    }

    public mutating func member(_ name: String, _ value: String?) { key(name); string(value) }
    public mutating func member(_ name: String, _ value: Int) { key(name); integer(Int64(value)) }
    public mutating func member(_ name: String, _ value: Bool) { key(name); bool(value) }

    /// Any JSON value, objects with their keys sorted (byte order), so equal
    /// values always give equal bytes.
    public mutating func value(_ value: JSONValue) {
        switch value {
        case .null: string(nil)
        case .bool(let b): bool(b)
        case .integer(let i): integer(i)
        case .number(let d):
            separate()
            bytes.append(contentsOf: "\(d)".utf8)
            needsComma = true
        case .string(let s): string(s)
        case .array(let items):
            beginArray()
            for item in items { self.value(item) }
            endArray()
        case .object(let members):
            beginObject()
            for name in members.keys.sorted(by: { $0.utf8.lexicographicallyPrecedes($1.utf8) }) {
                key(name)
                self.value(members[name]!)
            }
            endObject()
        }
    }

    /// Any JSON value indented for people: a member or an element a line,
    /// two spaces a level, `"name" : value` (the form `expensectl --json`
    /// has always printed, which scripts may look for), keys sorted as
    /// ``value(_:)`` sorts them; scalars, `[]` and `{}` as ``value(_:)``
    /// writes them. Separated from what was written before it as any value is.
    public mutating func pretty(_ value: JSONValue) {
        pretty(value, depth: 0)
    }

    private mutating func pretty(_ value: JSONValue, depth: Int) {
        let (open, close): (Unicode.Scalar, Unicode.Scalar)
        let items: [(name: String?, value: JSONValue)]
        switch value {
        case .array(let elements) where !elements.isEmpty:
            (open, close, items) = ("[", "]", elements.map { (nil, $0) })
        case .object(let members) where !members.isEmpty:
            items = members.keys.sorted(by: { $0.utf8.lexicographicallyPrecedes($1.utf8) }).map { ($0, members[$0]!) }
            (open, close) = ("{", "}")
        default:
            self.value(value)
            return
        }
        separate()
        bytes.append(UInt8(ascii: open))
        for (index, item) in items.enumerated() {
            if index > 0 { bytes.append(UInt8(ascii: ",")) }
            newLine(depth + 1)
            if let name = item.name {
                appendQuoted(name)
                bytes.append(contentsOf: " : ".utf8)
            }
            needsComma = false
            pretty(item.value, depth: depth + 1)
        }
        newLine(depth)
        bytes.append(UInt8(ascii: close))
        needsComma = true
    }

    private mutating func newLine(_ depth: Int) {
        bytes.append(UInt8(ascii: "\n"))
        bytes.append(contentsOf: repeatElement(UInt8(ascii: " "), count: 2 * depth))
    }

    private mutating func separate() {
        if needsComma { bytes.append(UInt8(ascii: ",")) }
    }

    private static let hexDigits = Array("0123456789abcdef".utf8)

    private mutating func appendQuoted(_ text: String) {
        bytes.append(UInt8(ascii: "\""))
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "\""): bytes.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "\"")])
            case UInt8(ascii: "\\"): bytes.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "\\")])
            case UInt8(ascii: "\n"): bytes.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "n")])
            case UInt8(ascii: "\r"): bytes.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "r")])
            case UInt8(ascii: "\t"): bytes.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "t")])
            case 0..<0x20, 0x7F:
                bytes.append(contentsOf: "\\u00".utf8)
                bytes.append(Self.hexDigits[Int(byte >> 4)])
                bytes.append(Self.hexDigits[Int(byte & 0xF)])
            default: bytes.append(byte)
            }
        }
        bytes.append(UInt8(ascii: "\""))
    }
}

extension CanonicalExpense {
    /// Writes the expense in the contract's shape, every field present.
    public func write(to writer: inout JSONWriter) {
        writer.beginObject()
        writer.member("transaction_id", transactionID)
        writer.member("client_id", clientID)
        writer.member("merchant", merchant)
        writer.member("amount", amount)
        writer.member("currency", currency)
        writer.member("date", date)
        writer.member("category", category)
        writer.member("comment", comment)
        writer.member("tax_tag", taxTag)
        writer.member("receipt_url", receiptURL)
        writer.member("assigned", assigned)
        writer.member("version", version)
        writer.member("created_at", createdAt)
        writer.member("updated_at", updatedAt)
        writer.member("deleted", deleted)
        writer.member("conflict", conflict)
        writer.key("conflicts")
        writeConflicts(conflicts, to: &writer)
        writer.endObject()
    }

    public var jsonBytes: [UInt8] {
        var writer = JSONWriter()
        write(to: &writer)
        return writer.bytes
    }
}

/// `{"currency": {"server": "EUR", "client": "USD"}}`, keys sorted.
public func writeConflicts(_ conflicts: [String: ConflictValues], to writer: inout JSONWriter) {
    writer.beginObject()
    for name in conflicts.keys.sorted() {
        let values = conflicts[name]!
        writer.key(name)
        writer.beginObject()
        writer.member("server", values.server)
        writer.member("client", values.client)
        writer.endObject()
    }
    writer.endObject()
}
