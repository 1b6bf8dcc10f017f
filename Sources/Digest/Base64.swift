internal import CCrypto

/// Standard base64 (RFC 4648 §4, with padding), as `Repr-Digest` uses it.
public enum Base64 {
    /// Wraps `EVP_EncodeBlock`.
    public static func encode(_ bytes: [UInt8]) -> String {
        var out = [UInt8](repeating: 0, count: 4 * ((bytes.count + 2) / 3) + 1)
        let n = bytes.withUnsafeBufferPointer { EVP_EncodeBlock(&out, $0.baseAddress, Int32($0.count)) }
        return String(decoding: out.prefix(Int(n)), as: UTF8.self)
    }

    /// Decodes padded base64; `nil` when the text is not valid base64.
    /// Wraps `EVP_DecodeBlock`, which does not undo padding itself.
    public static func decode(_ text: String) -> [UInt8]? {
        let input = Array(text.utf8)
        guard !input.isEmpty, input.count % 4 == 0 else { return input.isEmpty ? [] : nil }
        let alphabet = Set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8)
        let padding = input.reversed().prefix(while: { $0 == UInt8(ascii: "=") }).count
        guard padding <= 2, input.dropLast(padding).allSatisfy({ alphabet.contains($0) }) else { return nil }
        var out = [UInt8](repeating: 0, count: input.count / 4 * 3)
        let n = input.withUnsafeBufferPointer { EVP_DecodeBlock(&out, $0.baseAddress, Int32($0.count)) }
        guard n >= 0 else { return nil }
        return Array(out.prefix(Int(n) - padding))
    }
}

/// Cryptographically strong random bytes. Wraps `RAND_bytes`.
public enum SecureRandom {
    public static func bytes(_ count: Int) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: count)
        precondition(RAND_bytes(&out, Int32(count)) == 1, "RAND_bytes failed")
        return out
    }
}
