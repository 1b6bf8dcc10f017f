internal import CCrypto

/// SHA-256 through OpenSSL's EVP interface.
public struct SHA256: ~Copyable {
    private let context: OpaquePointer

    /// Starts an incremental digest. Wraps `EVP_DigestInit_ex`.
    public init() {
        guard let context = EVP_MD_CTX_new() else { preconditionFailure("EVP_MD_CTX_new: out of memory") }
        precondition(EVP_DigestInit_ex(context, EVP_sha256(), nil) == 1, "EVP_DigestInit_ex failed")
        self.context = context
    }

    deinit { EVP_MD_CTX_free(context) }

    /// Adds bytes. Wraps `EVP_DigestUpdate`.
    public mutating func update(_ bytes: UnsafeRawBufferPointer) {
        guard bytes.count > 0 else { return }
        precondition(EVP_DigestUpdate(context, bytes.baseAddress, bytes.count) == 1, "EVP_DigestUpdate failed")
    }

    public mutating func update(_ bytes: [UInt8]) {
        bytes.withUnsafeBytes { update($0) }
    }

    /// The 32-byte digest. Wraps `EVP_DigestFinal_ex`.
    public consuming func finalize() -> [UInt8] {
        var out = [UInt8](repeating: 0, count: 32)
        var length: UInt32 = 0
        precondition(EVP_DigestFinal_ex(context, &out, &length) == 1 && length == 32, "EVP_DigestFinal_ex failed")
        return out
    }

    /// The digest of `bytes` in one call. Wraps `EVP_Digest`.
    public static func hash(_ bytes: some Collection<UInt8>) -> [UInt8] {
        let array = Array(bytes)
        var out = [UInt8](repeating: 0, count: 32)
        var length: UInt32 = 0
        let ok = array.withUnsafeBytes { EVP_Digest($0.baseAddress, $0.count, &out, &length, EVP_sha256(), nil) }
        precondition(ok == 1 && length == 32, "EVP_Digest failed")
        return out
    }

    /// The digest of a string's UTF-8 bytes, as lowercase hex.
    public static func hexDigest(_ string: String) -> String {
        Hex.encode(hash(Array(string.utf8)))
    }
}

/// Lowercase hexadecimal.
public enum Hex {
    public static func encode(_ bytes: some Collection<UInt8>) -> String {
        let digits: [UInt8] = Array("0123456789abcdef".utf8)
        var out = [UInt8]()
        out.reserveCapacity(bytes.count * 2)
        for b in bytes {
            out.append(digits[Int(b >> 4)])
            out.append(digits[Int(b & 0xF)])
        }
        return String(decoding: out, as: UTF8.self)
    }
}
