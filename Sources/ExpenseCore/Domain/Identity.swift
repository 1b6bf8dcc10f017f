import Digest

/// The identity of one operation: a UUID made once on the client, stored
/// with the job, and sent unchanged on every retry as `Idempotency-Key`.
public enum ClientID {
    /// A new UUID in canonical lowercase form (36 characters): version 7
    /// (RFC 9562), `milliseconds` (the Unix time: the caller's clock) then
    /// 74 random bits. Ids made one after another sort together, so the
    /// indexes that hold them (the cache's by client id, the server's keys)
    /// grow at one end instead of touching a random page for each.
    public static func make(milliseconds: Int64) -> String {
        var random = SystemRandomNumberGenerator()
        return make(milliseconds: milliseconds, using: &random)
    }

    /// The same, with the random bits from `random`.
    public static func make(milliseconds: Int64, using random: inout some RandomNumberGenerator) -> String {
        var bytes = [UInt8](repeating: 0, count: 16)
        for half in 0..<2 {
            let word = random.next()
            for i in 0..<8 { bytes[half * 8 + i] = UInt8(truncatingIfNeeded: word >> (8 * i)) }
        }
        let time = UInt64(max(milliseconds, 0))
        for i in 0..<6 { bytes[i] = UInt8(truncatingIfNeeded: time >> (8 * (5 - i))) }
        bytes[6] = 0x70 | bytes[6] & 0x0F  // version 7
        bytes[8] = 0x80 | bytes[8] & 0x3F  // the RFC's variant
        return [bytes[0..<4], bytes[4..<6], bytes[6..<8], bytes[8..<10], bytes[10..<16]].map(Hex.encode).joined(separator: "-")
    }

    /// True for a UUID in canonical lowercase form: `8-4-4-4-12` hex digits.
    public static func isCanonical(_ text: String) -> Bool {
        let bytes = Array(text.utf8)
        guard bytes.count == 36 else { return false }
        for (i, b) in bytes.enumerated() {
            if i == 8 || i == 13 || i == 18 || i == 23 {
                if b != UInt8(ascii: "-") { return false }
            } else if !((b >= 0x30 && b <= 0x39) || (b >= 0x61 && b <= 0x66)) {
                return false
            }
        }
        return true
    }
}

/// The transaction id of the expense a create operation makes (contract.md, "Identity").
public enum TransactionID {
    /// `"cp-"` followed by the first 22 hex characters of SHA-256 of the
    /// lowercase UUID string: 25 characters. Both sides compute it, so the
    /// client can show it before the server has ever seen the expense.
    public static func derive(from clientID: String) -> String {
        "cp-" + SHA256.hexDigest(clientID.lowercased()).prefix(22)
    }

    /// True for text shaped like a transaction id.
    public static func isValid(_ text: String) -> Bool {
        let bytes = Array(text.utf8)
        return bytes.count == 25 && text.hasPrefix("cp-")
            && bytes[3...].allSatisfy { ($0 >= 0x30 && $0 <= 0x39) || ($0 >= 0x61 && $0 <= 0x66) }
    }
}
