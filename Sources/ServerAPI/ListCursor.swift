/// The cursor of `GET /v1/expenses?since=` (contract.md): opaque to
/// clients. It is the change sequence of the last expense a page held,
/// written `c1-<number>`; the prefix versions the format.
struct ListCursor: Equatable, Sendable {
    let sequence: Int64

    static let beginning = ListCursor(sequence: 0)

    init(sequence: Int64) { self.sequence = sequence }

    /// Parses a cursor this server issued.
    /// - Throws: `400 invalid_cursor` for anything else.
    init(parsing text: String) throws(APIError) {
        let bytes = Array(text.utf8)
        let prefix = Array("c1-".utf8)
        guard bytes.count > prefix.count, bytes.count <= prefix.count + 18, bytes.starts(with: prefix) else {
            throw APIError(400, "invalid_cursor", "since is not a cursor this server issued", field: "since")
        }
        let digits = bytes[prefix.count...]
        guard digits.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }), digits.count == 1 || digits.first != 0x30,
              let value = Int64(String(decoding: digits, as: UTF8.self)) else {
            throw APIError(400, "invalid_cursor", "since is not a cursor this server issued", field: "since")
        }
        sequence = value
    }

    var text: String { "c1-\(sequence)" }
}
