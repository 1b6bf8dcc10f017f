/// Text from outside (a client's request line, a name typed on a command
/// line) made safe for one log line, or a message on a terminal.
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

    /// Text from the command line, quoted as it may be shown on a terminal:
    /// cut at `limit` characters, and with backslashes and the characters
    /// that are not text (controls such as a line break or an escape
    /// sequence, C1 controls, bidirectional overrides and other format
    /// characters) written as Swift escapes (`\n`, `\u{1B}`), so nothing
    /// typed or pasted can forge a line of output or restyle the terminal.
    public static func quoted(_ text: String, limit: Int = 256) -> String {
        var out = "'"
        var count = 0
        for scalar in text.unicodeScalars {
            if count == limit {
                out += "..."
                break
            }
            count += 1
            switch scalar.properties.generalCategory {
            case .control, .format, .lineSeparator, .paragraphSeparator, .surrogate, .privateUse, .unassigned:
                out += scalar.escaped(asASCII: true)
            default:
                if scalar == "\\" { out += "\\\\" } else { out.unicodeScalars.append(scalar) }
            }
        }
        return out + "'"
    }
}
