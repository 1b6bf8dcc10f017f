import ExpenseCore

/// The `Idempotency-Key` request header (contract.md, "Identity"): a UUID,
/// sent as a structured-field string (`"…"`) or bare.
enum IdempotencyKey {
    /// The key in canonical lowercase form.
    /// - Throws: `400 idempotency_key_required` when the header is missing,
    ///   repeated, or not a UUID.
    static func parse(_ values: [String]) throws(APIError) -> String {
        guard let raw = values.first else {
            throw .idempotencyKeyRequired("this request needs an Idempotency-Key header holding a UUID")
        }
        guard values.count == 1 else {
            throw .idempotencyKeyRequired("Idempotency-Key was sent more than once")
        }
        var text = Substring(raw)
        while text.first == " " || text.first == "\t" { text.removeFirst() }
        while text.last == " " || text.last == "\t" { text.removeLast() }
        if text.count >= 2, text.first == "\"", text.last == "\"" {
            text = text.dropFirst().dropLast()
        }
        // UUIDs are case-insensitive (RFC 9562); the canonical form, which
        // the transaction id is derived from, is lowercase.
        let key = text.lowercased()
        guard ClientID.isCanonical(key) else {
            throw .idempotencyKeyRequired("Idempotency-Key must be a UUID like 1b4e28ba-2fa1-11d2-883f-0000f87d3b6e")
        }
        return key
    }
}
