/// HTML written by hand, every value escaped on the way in: text with
/// ``text(_:)``, attribute values (always double-quoted) with ``attribute(_:)``.
/// Nothing a user typed is ever put in a URL scheme, a script or a style.
struct HTML {
    private(set) var text = ""

    /// Markup written by this program.
    mutating func raw(_ markup: String) { text += markup }

    /// Text a user or the database gave: `&`, `<`, `>`, `"` and `'` escaped.
    mutating func text(_ value: String) { text += Self.escaped(value) }

    static func escaped(_ value: String) -> String {
        var result = ""
        result.reserveCapacity(value.utf8.count)
        for c in value.unicodeScalars {
            switch c {
            case "&": result += "&amp;"
            case "<": result += "&lt;"
            case ">": result += "&gt;"
            case "\"": result += "&quot;"
            case "'": result += "&#39;"
            default: result.unicodeScalars.append(c)
            }
        }
        return result
    }

    /// An attribute value, for inside double quotes.
    static func attribute(_ value: String) -> String { escaped(value) }

    /// `value` percent-encoded for a path segment or a query value: only
    /// unreserved characters (RFC 3986 §2.3) stay as they are.
    static func percentEncoded(_ value: String) -> String {
        var result = ""
        for b in value.utf8 {
            let unreserved = (b >= 0x30 && b <= 0x39) || (b >= 0x41 && b <= 0x5A) || (b >= 0x61 && b <= 0x7A)
                || b == UInt8(ascii: "-") || b == UInt8(ascii: ".") || b == UInt8(ascii: "_") || b == UInt8(ascii: "~")
            if unreserved {
                result.unicodeScalars.append(Unicode.Scalar(b))
            } else {
                let digits = Array("0123456789ABCDEF".utf8)
                result += "%" + String(decoding: [digits[Int(b >> 4)], digits[Int(b & 15)]], as: UTF8.self)
            }
        }
        return result
    }

    /// `a=1&b=2`, each value percent-encoded; empty values left out.
    static func query(_ pairs: [(String, String)]) -> String {
        pairs.filter { !$0.1.isEmpty }.map { "\($0.0)=\(percentEncoded($0.1))" }.joined(separator: "&")
    }

    /// A hidden form field.
    mutating func hidden(_ name: String, _ value: String) {
        raw("<input type=\"hidden\" name=\"\(name)\" value=\"\(Self.attribute(value))\">")
    }

    /// A `<select>` of `options` (value, label) with `selected` chosen.
    mutating func select(_ name: String, label: String, _ options: [(String, String)], selected: String) {
        raw("<label>\(Self.escaped(label)) <select name=\"\(name)\">")
        for (value, shown) in options {
            raw("<option value=\"\(Self.attribute(value))\"\(value == selected ? " selected" : "")>\(Self.escaped(shown))</option>")
        }
        raw("</select></label> ")
    }

    /// A text `<input>` with its label.
    mutating func input(_ name: String, label: String, value: String, type: String = "text") {
        raw("<label>\(Self.escaped(label)) <input type=\"\(type)\" name=\"\(name)\" value=\"\(Self.attribute(value))\"></label> ")
    }
}
