import Digest

/// The `Repr-Digest` request header (RFC 9530): a structured-field
/// dictionary such as `sha-256=:<base64>:`. Only SHA-256 is checked.
enum ReprDigest {
    /// The 32-byte SHA-256 the client claims for the body.
    /// - Throws: `400 digest_required` when no well-formed `sha-256` member is there.
    static func sha256(_ values: [String]) throws(APIError) -> [UInt8] {
        guard !values.isEmpty else {
            throw .digestInvalid("a receipt upload needs a Repr-Digest header: sha-256=:<base64 of the body's SHA-256>:")
        }
        // Several header lines form one dictionary (RFC 8941 §3.2).
        let members = values.joined(separator: ",").split(separator: ",")
        var found: [UInt8]?
        for member in members {
            let trimmed = member.drop { $0 == " " || $0 == "\t" }
            guard let equals = trimmed.firstIndex(of: "=") else { continue }
            let name = trimmed[..<equals].lowercased()
            guard name == "sha-256" else { continue }
            var value = trimmed[trimmed.index(after: equals)...]
            // Parameters (";…") may follow the byte sequence.
            if let semicolon = value.firstIndex(of: ";") { value = value[..<semicolon] }
            while value.last == " " || value.last == "\t" { value.removeLast() }
            guard value.count >= 2, value.first == ":", value.last == ":",
                  let bytes = Base64.decode(String(value.dropFirst().dropLast())), bytes.count == 32 else {
                throw .digestInvalid("Repr-Digest sha-256 must be :<base64 of 32 bytes>:")
            }
            guard found == nil || found == bytes else {
                throw .digestInvalid("Repr-Digest names sha-256 twice with different values")
            }
            found = bytes
        }
        guard let found else {
            throw .digestInvalid("Repr-Digest has no sha-256 member; this server checks sha-256")
        }
        return found
    }

    /// The header value for `digest`.
    static func format(_ digest: [UInt8]) -> String {
        "sha-256=:\(Base64.encode(digest)):"
    }
}
