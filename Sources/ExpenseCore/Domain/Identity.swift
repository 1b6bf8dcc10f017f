import Digest
import FoundationEssentials

/// The identity of one operation: a UUID made once on the client, stored
/// with the job, and sent unchanged on every retry as `Idempotency-Key`.
public enum ClientID {
    /// A new UUID in canonical lowercase form (36 characters): version 7
    /// (RFC 9562), the Unix time in milliseconds then 74 random bits. Ids
    /// made one after another sort together, so the indexes that hold them
    /// (the cache's by client id, the server's keys) grow at one end
    /// instead of touching a random page for each.
    public static func make() -> String {
        make(milliseconds: UInt64(Date().timeIntervalSince1970 * 1000))
    }

    static func make(milliseconds: UInt64) -> String {
        // A random (version 4) UUID has the RFC variant and 122 random
        // bits: its first 48 become the time and its version nibble a 7.
        var uuid = UUID().uuid
        withUnsafeMutableBytes(of: &uuid) { bytes in
            for i in 0..<6 { bytes[i] = UInt8(truncatingIfNeeded: milliseconds >> (8 * (5 - i))) }
            bytes[6] = 0x70 | bytes[6] & 0x0F
        }
        return UUID(uuid: uuid).uuidString.lowercased()
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
