import Foundation

/// Runs a program on a pseudo-terminal of its own (Python's `pty.fork`),
/// as a person at a terminal would: standard input, output and error are
/// the terminal. When the program asks (`[y/N] `), `answer` is typed.
public enum TerminalSession {
    static let script = """
        import os, pty, sys
        answer = os.environ.get("TERMINAL_ANSWER")
        pid, fd = pty.fork()
        if pid == 0:
            os.execv(sys.argv[1], sys.argv[1:])
        out, sent = b"", answer is None
        while True:
            try:
                chunk = os.read(fd, 4096)
            except OSError:
                break
            if not chunk:
                break
            out += chunk
            if not sent and b"[y/N] " in out:
                os.write(fd, answer.encode() + b"\\n")
                sent = True
        _, status = os.waitpid(pid, 0)
        sys.stdout.write(out.decode(errors="replace"))
        sys.exit(os.waitstatus_to_exitcode(status))
        """

    /// - Returns: the exit status and everything the terminal showed.
    public static func run(_ executable: String, _ arguments: [String], answer: String? = nil, timeout: Double = 60) throws -> CommandResult {
        var environment: [String: String] = [:]
        if let answer { environment["TERMINAL_ANSWER"] = answer }
        return try runCommand("/usr/bin/python3", ["-c", script, executable] + arguments, environment: environment, timeout: timeout)
    }
}
