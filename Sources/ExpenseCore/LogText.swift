/// Text from outside (a client's request line, a name typed on a command
/// line) made safe for one log line.
public enum LogText {
    /// Bytes outside printable ASCII (and `%`) become `%XX`, so nothing can
    /// forge or split a line; cut at `limit` bytes (then `...`); `-` for "".
    public static func printable(_ text: String, limit: Int) -> String {
        if text.isEmpty { return "-" }
        let digits = Array("0123456789ABCDEF".utf8)
        var out: [UInt8] = []
        for byte in text.utf8 {
            if out.count >= limit { out.append(contentsOf: "...".utf8); break }
            if byte > 0x20 && byte < 0x7F && byte != UInt8(ascii: "%") {
                out.append(byte)
            } else {
                out.append(contentsOf: [UInt8(ascii: "%"), digits[Int(byte >> 4)], digits[Int(byte & 0xF)]])
            }
        }
        return String(decoding: out, as: UTF8.self)
    }
}
