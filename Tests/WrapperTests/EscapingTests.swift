import Posix
import Testing

/// Text from elsewhere (spool names, server messages) on one log line.
@Suite struct EscapingTests {
    @Test func controlCharacters_becomeHexEscapes_andNothingElseChanges() {
        #expect("two\nlines\r\u{1B}[31m\u{7F}".escapingControlCharacters() == "two\\x0alines\\x0d\\x1b[31m\\x7f")
        #expect("café \\ ok".escapingControlCharacters() == "café \\ ok", "printable text, backslashes included, stays")
        #expect("a\\b\n".escapingControlCharacters(backslashes: true) == "a\\x5cb\\x0a", "so an escape cannot be forged")
        #expect("".escapingControlCharacters() == "")
        // What would show a line's text in another order (Trojan Source).
        #expect("pay \u{202E}00.001\u{202C} now \u{2066}x\u{2069}".escapingControlCharacters() == "pay \\u202e00.001\\u202c now \\u2066x\\u2069")
        #expect("שלום \u{200F}café".escapingControlCharacters() == "שלום \u{200F}café", "right-to-left text and its marks stay")
        #expect("a\u{9B}31mb\u{85}c\u{2028}d".escapingControlCharacters() == "a\\u009b31mb\\u0085c\\u2028d", "C1 controls and separators")
        #expect("\u{A0}\u{7E}\u{202F}".escapingControlCharacters() == "\u{A0}\u{7E}\u{202F}", "the printable neighbours of those ranges stay")
    }
}
