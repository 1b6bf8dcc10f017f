/// Text for SQL's `LIKE … ESCAPE '\'`, in SQLite and PostgreSQL alike: the
/// daemon's `list --merchant` and the server's merchant filter take what
/// was typed literally, `%` and `_` included.
public enum LikePattern {
    /// `text` with `%`, `_` and the escape character itself escaped, so
    /// that it matches only itself.
    public static func escaped(_ text: String) -> String {
        var result = ""
        for character in text {
            if character == "%" || character == "_" || character == "\\" { result.append("\\") }
            result.append(character)
        }
        return result
    }

    /// A pattern matching any text that contains `text`.
    public static func containing(_ text: String) -> String {
        "%" + escaped(text) + "%"
    }
}
