import Foundation

/// One system call read from an `strace -f -tt -y` trace.
///
/// strace prints a call when it sees it enter and, when another thread's
/// event came in between, finishes it on a `<... name resumed>` line when
/// it returns. Both moments are kept as line numbers of the trace: a call
/// that returned on a line before the line where another one entered
/// returned before that one ran (a traced thread stops at each entry
/// until strace has seen it), which is the order the checks rely on. The
/// wall-clock times are kept for messages.
public struct TracedCall: Sendable, CustomStringConvertible {
    /// The thread (strace's pid column).
    public let thread: Int32
    public let name: String
    /// The arguments as printed, without the parentheses.
    public let arguments: String
    /// What follows `= `: `0`, `12</path>`, `-1 ENOENT (No such file or directory)`.
    public let result: String
    /// Line numbers (from 1) of the entry and of the return.
    public let entryLine: Int
    public let exitLine: Int
    /// `HH:MM:SS.micro` of those lines.
    public let entryTime: String
    public let exitTime: String

    public var succeeded: Bool { !result.hasPrefix("-") && !result.hasPrefix("?") }

    /// The arguments split at their top-level commas.
    public var argumentList: [String] { SyscallTrace.splitArguments(arguments) }

    /// The path `-y` printed for the descriptor argument at `position`
    /// (`7</state/expensed.db-wal>` gives `/state/expensed.db-wal`).
    public func descriptorPath(_ position: Int) -> String? {
        let list = argumentList
        return position < list.count ? SyscallTrace.annotatedPath(list[position]) : nil
    }

    /// The string argument at `position`, unescaped.
    public func stringArgument(_ position: Int) -> String? {
        let list = argumentList
        return position < list.count ? SyscallTrace.unquote(list[position]) : nil
    }

    /// The path `-y` printed for a returned descriptor (`openat`).
    public var resultPath: String? { SyscallTrace.annotatedPath(result) }

    public var description: String { "\(name)(\(arguments.prefix(160))) = \(result) [thread \(thread), line \(entryLine), \(entryTime)]" }
}

/// Reading `strace -f -tt -y` output.
public enum SyscallTrace {
    /// The strace command that runs a program with every call in `calls`
    /// traced into `output`: all threads (`-f`), microsecond times (`-tt`),
    /// descriptors shown with their paths (`-y`), strings up to 256 bytes.
    public static func command(output: String, calls: [String]) -> [String] {
        ["/usr/bin/strace", "-f", "-tt", "-y", "-s", "256", "-o", output, "-e", "trace=" + calls.joined(separator: ","), "-e", "signal=none"]
    }

    /// The calls in `text`, in the order they entered, each paired with its
    /// return; calls that never returned (the process died) are left out.
    public static func parse(_ text: String) -> [TracedCall] {
        var calls: [(order: Int, call: TracedCall)] = []
        var pending: [Int32: (name: String, arguments: String, line: Int, time: String)] = [:]
        for (index, raw) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let line = index + 1
            var rest = Substring(raw)
            guard let thread = Int32(rest.prefix { $0.isNumber }) else { continue }
            rest = rest.drop { $0.isNumber }.drop { $0 == " " }
            let time = String(rest.prefix { $0 != " " })
            rest = rest.drop { $0 != " " }.dropFirst()
            if rest.hasPrefix("+++") || rest.hasPrefix("---") { continue }
            if rest.hasPrefix("<... ") {
                // `<... name resumed>REST) = RESULT`
                guard let close = rest.range(of: " resumed>"), let started = pending.removeValue(forKey: thread) else { continue }
                guard let (tail, result) = splitResult(rest[close.upperBound...]) else { continue }
                let call = TracedCall(thread: thread, name: started.name, arguments: started.arguments + tail, result: result,
                                      entryLine: started.line, exitLine: line, entryTime: started.time, exitTime: time)
                calls.append((started.line, call))
                continue
            }
            guard let open = rest.firstIndex(of: "(") else { continue }
            let name = String(rest[..<open])
            let body = rest[rest.index(after: open)...]
            if body.hasSuffix(" <unfinished ...>") {
                pending[thread] = (name, String(body.dropLast(" <unfinished ...>".count)), line, time)
                continue
            }
            guard let (arguments, result) = splitResult(body) else { continue }
            calls.append((line, TracedCall(thread: thread, name: name, arguments: arguments, result: result,
                                           entryLine: line, exitLine: line, entryTime: time, exitTime: time)))
        }
        return calls.sorted { $0.order < $1.order }.map(\.call)
    }

    /// Splits `ARGS) = RESULT` at the closing parenthesis of the call.
    private static func splitResult(_ text: Substring) -> (String, String)? {
        var depth = 0
        var quoted = false
        var escaped = false
        for index in text.indices {
            let c = text[index]
            if quoted {
                if escaped { escaped = false } else if c == "\\" { escaped = true } else if c == "\"" { quoted = false }
                continue
            }
            switch c {
            case "\"": quoted = true
            case "(", "[", "{": depth += 1
            case "]", "}": depth -= 1
            case ")":
                if depth == 0 {
                    let after = text[text.index(after: index)...]
                    guard after.hasPrefix(" = ") else { return nil }
                    return (String(text[..<index]), String(after.dropFirst(3)))
                }
                depth -= 1
            default: break
            }
        }
        return nil
    }

    /// Splits an argument list at its top-level commas: not inside a string,
    /// brackets, braces, or a descriptor's `<path>` (which follows a digit).
    static func splitArguments(_ text: String) -> [String] {
        var parts: [String] = []
        var current = ""
        var depth = 0, angles = 0
        var quoted = false, escaped = false
        var previous: Character = " "
        for c in text {
            defer { previous = c }
            if quoted {
                current.append(c)
                if escaped { escaped = false } else if c == "\\" { escaped = true } else if c == "\"" { quoted = false }
                continue
            }
            switch c {
            case "\"": quoted = true
            case "(", "[", "{": depth += 1
            case ")", "]", "}": depth -= 1
            case "<" where previous.isNumber: angles += 1
            case ">" where angles > 0: angles -= 1
            case "," where depth == 0 && angles == 0:
                parts.append(current.trimmingCharacters(in: .whitespaces))
                current = ""
                continue
            default: break
            }
            current.append(c)
        }
        if !current.trimmingCharacters(in: .whitespaces).isEmpty { parts.append(current.trimmingCharacters(in: .whitespaces)) }
        return parts
    }

    /// `12</a/b>` → `/a/b`; `AT_FDCWD</a>` → `/a`; nil without a path.
    static func annotatedPath(_ argument: String) -> String? {
        guard let open = argument.firstIndex(of: "<"), argument.hasSuffix(">") else { return nil }
        let path = argument[argument.index(after: open)..<argument.index(before: argument.endIndex)]
        return path.hasPrefix("/") ? String(path) : nil
    }

    /// A C string as strace prints it (`"a\"b\n"`), unescaped; nil when not a string.
    static func unquote(_ argument: String) -> String? {
        guard argument.hasPrefix("\""), let end = argument.lastIndex(of: "\""), end > argument.startIndex else { return nil }
        var bytes: [UInt8] = []
        var chars = Array(argument[argument.index(after: argument.startIndex)..<end].utf8)[...]
        while let c = chars.popFirst() {
            guard c == UInt8(ascii: "\\"), let next = chars.popFirst() else { bytes.append(c); continue }
            switch next {
            case UInt8(ascii: "n"): bytes.append(0x0A)
            case UInt8(ascii: "t"): bytes.append(0x09)
            case UInt8(ascii: "r"): bytes.append(0x0D)
            case UInt8(ascii: "x"):
                let hex = String(decoding: chars.prefix(2), as: UTF8.self)
                chars = chars.dropFirst(2)
                bytes.append(UInt8(hex, radix: 16) ?? 0)
            case UInt8(ascii: "0")...UInt8(ascii: "7"):
                var digits = [next]
                while digits.count < 3, let d = chars.first, (UInt8(ascii: "0")...UInt8(ascii: "7")).contains(d) { digits.append(d); chars = chars.dropFirst() }
                bytes.append(UInt8(String(decoding: digits, as: UTF8.self), radix: 8) ?? 0)
            default: bytes.append(next)
            }
        }
        return String(decoding: bytes, as: UTF8.self)
    }
}
