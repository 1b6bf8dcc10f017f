import ExpenseCore

/// Why a spool file is not taken: the text of its `.reason` file and of
/// the journal warning. Never holds field values (they may be personal).
struct SpoolRejection: Error, Sendable, Equatable {
    let reason: String
    init(_ reason: String) { self.reason = reason }
}

/// A sidecar, `name.json` beside `name.jpg`: a JSON object whose members
/// are expense fields, each a string. Strict, like the control protocol:
/// anything else is rejected with a reason naming what was wrong.
enum SpoolSidecar {
    /// The largest sidecar read; no valid one comes near it.
    static let maxBytes = 64 * 1024

    /// The fields a sidecar may set: every field `expensectl add` takes.
    static let fieldNames = ExpenseFields.names

    /// The UTF-8 byte-order mark some Windows tools write first.
    static let byteOrderMark: [UInt8] = [0xEF, 0xBB, 0xBF]

    /// The fields in `bytes`, each valid on its own and normalized. Whether they are
    /// enough (an expense without a receipt needs more) is checked once it
    /// is known whether a receipt comes with them.
    static func parse(_ bytes: [UInt8]) throws(SpoolRejection) -> ExpenseFields {
        // A byte-order mark says only that the text is UTF-8, which it must be anyway.
        let bytes = bytes.starts(with: byteOrderMark) ? Array(bytes.dropFirst(byteOrderMark.count)) : bytes
        guard String(validating: bytes, as: UTF8.self) != nil else {
            throw SpoolRejection("sidecar is not valid UTF-8")
        }
        let value: JSONValue
        do {
            value = try JSONValue.parse(bytes)
        } catch {
            throw SpoolRejection("sidecar is not valid JSON: \(escaped(error.message))")
        }
        guard case .object(let members) = value else {
            throw SpoolRejection("sidecar must be a JSON object, got \(value.typeName)")
        }
        var fields = ExpenseFields()
        for (key, member) in members.sorted(by: { $0.key < $1.key }) {
            guard fieldNames.contains(key) else {
                throw SpoolRejection("sidecar field '\(escaped(String(key.prefix(64))))' is not an expense field; known: \(fieldNames.joined(separator: ", "))")
            }
            guard case .string(let text) = member else {
                throw SpoolRejection("sidecar field '\(key)' must be a string, got \(member.typeName)")
            }
            fields[key] = text
        }
        do {
            // The form every interface stores: "10" EUR is "10.00", an empty
            // comment is none.
            return try Validation.normalized(fields).values
        } catch {
            throw SpoolRejection("sidecar field \(error.description)")
        }
    }

    /// `text` on one line: control characters and backslashes as `\xNN`, so
    /// a hostile sidecar cannot forge lines in a `.reason` file or a log.
    static func escaped(_ text: String) -> String { text.escapingControlCharacters(backslashes: true) }
}
