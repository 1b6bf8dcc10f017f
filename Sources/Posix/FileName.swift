/// One name inside a directory, as the kernel stores it: bytes without `/`
/// or NUL, which need not be UTF-8 (spool writers may drop anything).
public struct FileName: Sendable, Hashable, Comparable, CustomStringConvertible {
    public let bytes: [UInt8]

    /// A name from raw bytes; `nil` for "", ".", "..", or bytes holding `/` or NUL.
    public init?(bytes: [UInt8]) {
        guard !bytes.isEmpty, bytes != [0x2E], bytes != [0x2E, 0x2E],
              !bytes.contains(0x2F), !bytes.contains(0) else { return nil }
        self.bytes = bytes
    }

    /// A name from a Swift string; `nil` when it is not a single path component.
    public init?(_ string: String) {
        self.init(bytes: Array(string.utf8))
    }

    /// The name as a string when it is valid UTF-8.
    public var string: String? {
        String(validating: bytes, as: UTF8.self)
    }

    /// A printable, single-line form: bytes that are not printable UTF-8 (and
    /// backslashes) appear as `\xNN`, the scalars ``escapingControlCharacters(backslashes:)``
    /// names as `\uNNNN`, so a hostile name cannot forge a log line.
    public var displayName: String {
        if let s = string { return s.escapingControlCharacters(backslashes: true) }
        var out = ""
        for b in bytes {
            if b >= 0x20 && b < 0x7F && b != 0x5C {
                out.unicodeScalars.append(Unicode.Scalar(b))
            } else {
                out += "\\x" + hex(b)
            }
        }
        return out
    }

    public var description: String { displayName }

    /// The part after the last dot, lowercased, when it is ASCII.
    public var lowercasedExtension: String? {
        guard let dot = bytes.lastIndex(of: 0x2E), dot > 0 else { return nil }
        let ext = bytes[(dot + 1)...]
        guard !ext.isEmpty, ext.allSatisfy({ $0 < 0x80 }) else { return nil }
        return String(decoding: ext, as: UTF8.self).lowercased()
    }

    /// The name without its last extension.
    public var stem: [UInt8] {
        guard let dot = bytes.lastIndex(of: 0x2E), dot > 0 else { return bytes }
        return Array(bytes[..<dot])
    }

    /// This name with `suffix` appended.
    public func appending(_ suffix: String) -> FileName {
        FileName(bytes: bytes + Array(suffix.utf8))!
    }

    public static func < (a: FileName, b: FileName) -> Bool { a.bytes.lexicographicallyPrecedes(b.bytes) }

    func withCString<R, E: Error>(_ body: (UnsafePointer<CChar>) throws(E) -> R) throws(E) -> R {
        var terminated = bytes.map { CChar(bitPattern: $0) }
        terminated.append(0)
        // Rethrow the body's typed error through the untyped closure of
        // withUnsafeBufferPointer without losing its type.
        var result: Result<R, E>!
        terminated.withUnsafeBufferPointer { buffer in
            do throws(E) { result = .success(try body(buffer.baseAddress!)) } catch { result = .failure(error) }
        }
        return try result.get()
    }
}

extension String {
    /// This string on one line: control characters (and, with
    /// `backslashes`, backslashes too) as `\xNN`; the C1 controls
    /// (U+0080–U+009F, which a terminal may take for escape sequences), the
    /// line and paragraph separators (U+2028, U+2029) and the bidirectional
    /// embeddings, overrides and isolates (U+202A–U+202E, U+2066–U+2069)
    /// as `\uNNNN`: text from elsewhere can neither break a log or
    /// terminal line, nor forge one, nor show its neighbours reordered.
    public func escapingControlCharacters(backslashes: Bool = false) -> String {
        let wide = { (scalar: Unicode.Scalar) in
            (0x80...0x9F).contains(scalar.value) || (0x2028...0x202E).contains(scalar.value) || (0x2066...0x2069).contains(scalar.value)
        }
        let escaped = { (scalar: Unicode.Scalar) in
            scalar.value < 0x20 || scalar.value == 0x7F || (backslashes && scalar == "\\") || wide(scalar)
        }
        // Every log line comes through here; most need nothing.
        guard unicodeScalars.contains(where: escaped) else { return self }
        var out = ""
        for scalar in unicodeScalars {
            if wide(scalar) {
                out += "\\u" + hex(UInt8(scalar.value >> 8)) + hex(UInt8(scalar.value & 0xFF))
            } else if escaped(scalar) {
                out += "\\x" + hex(UInt8(scalar.value))
            } else {
                out.unicodeScalars.append(scalar)
            }
        }
        return out
    }
}

private func hex(_ b: UInt8) -> String {
    let digits = Array("0123456789abcdef")
    return String([digits[Int(b >> 4)], digits[Int(b & 0xF)]])
}
