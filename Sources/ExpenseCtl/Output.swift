import ExpenseCore
import Posix
#if canImport(Glibc)
import Glibc
#endif

/// Unbuffered writes to stdout and stderr (each call is one `write(2)`, so
/// `watch` lines appear as they come).
enum Output {
    static func out(_ text: String) {
        write(1, text)
    }

    static func error(_ text: String) {
        write(2, text)
    }

    /// A value from the daemon as a cell or a line shows it: `-` when it
    /// is null or empty, control characters escaped (it may be anyone's text).
    static func text(_ value: String?) -> String {
        guard let value, !value.isEmpty else { return "-" }
        return value.escapingControlCharacters()
    }

    /// A question on standard error, without a newline: the answer follows on the same line.
    static func prompt(_ text: String) {
        writeBytes(2, Array(text.utf8))
    }

    /// One line from standard input, without its newline; nil at its end.
    static func readInputLine() -> String? {
        var line: [UInt8] = []
        var byte: UInt8 = 0
        while true {
            let n = Glibc.read(0, &byte, 1)
            if n < 0 && errno == EINTR { continue }
            if n <= 0 { return line.isEmpty ? nil : String(decoding: line, as: UTF8.self) }
            if byte == 0x0A { return String(decoding: line, as: UTF8.self) }
            line.append(byte)
        }
    }

    /// Writes `text` as it is, without adding a newline (progress lines).
    static func raw(_ text: String) {
        writeBytes(1, Array(text.utf8))
    }

    private static func write(_ fd: Int32, _ text: String) {
        var bytes = Array(text.utf8)
        if bytes.last != 0x0A { bytes.append(0x0A) }
        writeBytes(fd, bytes)
    }

    private static func writeBytes(_ fd: Int32, _ bytes: [UInt8]) {
        var offset = 0
        while offset < bytes.count {
            let n = bytes.withUnsafeBytes { Glibc.write(fd, $0.baseAddress! + offset, $0.count - offset) }
            if n <= 0 { return }
            offset += n
        }
    }
}

/// Whether a descriptor is a terminal (`isatty(3)`).
enum Terminal {
    static func isTerminal(_ fd: Int32) -> Bool { isatty(fd) == 1 }
}

/// A text table: a header row and aligned columns, two spaces apart.
struct Table {
    let headers: [String]
    var rows: [[String]] = []

    var rendered: String {
        var widths = headers.map(\.count)
        for row in rows { for (i, cell) in row.enumerated() { widths[i] = max(widths[i], cell.count) } }
        func render(_ cells: [String]) -> String {
            var line = ""
            for (i, cell) in cells.enumerated() {
                line += i == cells.count - 1 ? cell : cell + String(repeating: " ", count: widths[i] - cell.count + 2)
            }
            return line
        }
        return ([render(headers)] + rows.map(render)).joined(separator: "\n")
    }
}
