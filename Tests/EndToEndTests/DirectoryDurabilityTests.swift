import ExpenseCore
import ExpenseTestSupport
import Foundation
import Testing

/// A directory the daemon creates is durable only once the entry naming it
/// is: its parent must be fsynced (fsync(2), NOTES). Without a power-loss
/// model to lose what was not, the system calls show it: traced with
/// strace on a first start, every directory made (state directory and the
/// missing ones above it, `receipts/`, the spool and `rejected/`) has its
/// parent fsynced after it, and before a connection is accepted.
/// Serialized: each test runs the daemon under strace, which stops every thread at every system call; one at a time bounds that load.
@Suite(.serialized) struct DirectoryDurabilityTests {
    struct Call {
        let name: String
        let line: String
    }

    @Test func aFirstStart_fsyncsTheParentOfEveryDirectoryItCreates_beforeItAnswers() throws {
        let directory = TemporaryDirectory(prefix: "mkdir-sync")
        let trace = directory.at("trace")
        let state = directory.at("new/deeper/state"), spool = directory.at("spools/spool")
        let socket = directory.at("control.sock")
        _ = FileManager.default.createFile(atPath: directory.at("expensed.conf"), contents: Data())
        let strace = try ChildProcess("/usr/bin/strace", [
            "-f", "-y", "-qq", "-e", "trace=mkdir,mkdirat,fsync,accept,accept4", "-o", trace, BuiltProducts.path("expensed"),
            "--config", directory.at("expensed.conf"), "--state-dir", state, "--spool-dir", spool, "--socket", socket,
            "--log-target", "stderr",
        ], outputDirectory: directory.path, name: "strace")
        defer { strace.stop() }
        // Answered, not only connected: a connection waits in the listen
        // backlog before the daemon accepts it.
        try waitUntil(timeout: 60, "expensed under strace to answer") {
            guard strace.isRunning else { throw TestFailure("strace exited: \(strace.standardError)") }
            guard let client = try? RawClient(path: socket, timeout: 30) else { return false }
            try client.send(#"{"id":1,"op":"status"}"# + "\n")
            return try client.readJSONLine()["ok"] == true
        }
        // The daemon is the traced process: stop it, and strace follows.
        let lines = try String(contentsOfFile: trace, encoding: .utf8).split(separator: "\n").map(String.init)
        if let pid = lines.first?.split(separator: " ").first.flatMap({ Int32($0) }) { kill(pid, SIGTERM) }
        #expect(strace.waitForExit(timeout: 30) != nil)

        let calls = Self.calls(try String(contentsOfFile: trace, encoding: .utf8))
        // The first connection accepted: from then on the daemon answers.
        let answering = calls.firstIndex { $0.name.hasPrefix("accept") && !$0.line.hasSuffix("EAGAIN (Resource temporarily unavailable)") } ?? calls.count
        #expect(answering < calls.count, "a connection was accepted: \(calls.map(\.line).joined(separator: "\n"))")
        var made: [(index: Int, parent: String, path: String)] = []
        for (index, call) in calls.enumerated() where call.line.hasSuffix(" = 0") {
            if call.name == "mkdir", let path = Self.quoted(call.line) {
                made.append((index, (path as NSString).deletingLastPathComponent, path))
            } else if call.name == "mkdirat", let parent = Self.descriptorPath(call.line), let name = Self.quoted(call.line) {
                made.append((index, parent, "\(parent)/\(name)"))
            }
        }
        let expected = [directory.at("new"), directory.at("new/deeper"), state, "\(state)/receipts", directory.at("spools"), spool, "\(spool)/rejected"]
        #expect(Set(made.map(\.path)) == Set(expected), "\(made.map(\.path))")
        for (index, parent, path) in made {
            let synced = index < answering && calls[(index + 1)..<answering].contains { $0.name == "fsync" && Self.descriptorPath($0.line) == parent && $0.line.hasSuffix(" = 0") }
            #expect(synced, "'\(parent)' is fsynced after '\(path)' was made in it, before a connection is accepted")
        }
    }

    @Test func theTraceIsReadWhateverThePidsLengthAndHowCallsInterleave() {
        let calls = Self.calls("""
            812   mkdir("/a", 0700) = 0
            12345 fsync(3</b> <unfinished ...>
            812   mkdirat(4</a>, "c", 0700) = 0
            12345 <... fsync resumed>) = 0
            """)
        #expect(calls.map(\.name) == ["mkdir", "mkdirat", "fsync"])
        #expect(calls.map { Self.descriptorPath($0.line) } == [nil, "/a", "/b"])
        #expect(calls[2].line == "fsync(3</b> ) = 0")
    }

    /// The calls in an `strace -f` output, in order, each whole: a call
    /// another thread interrupted ("<unfinished ...>") is joined to its
    /// "<... resumed>" line, where it returned.
    static func calls(_ output: String) -> [Call] {
        var pending: [Substring: String] = [:]
        var calls: [Call] = []
        for line in output.split(separator: "\n") {
            let pid = line.prefix { $0 != " " }
            // "%-5d ": a pid under five digits is padded with more spaces.
            var text = String(line.drop { $0 != " " }.drop { $0 == " " })
            if text.hasSuffix("<unfinished ...>") {
                pending[pid] = String(text.dropLast("<unfinished ...>".count))
                continue
            }
            if text.hasPrefix("<... "), let end = text.range(of: " resumed>") {
                text = (pending.removeValue(forKey: pid) ?? "") + text[end.upperBound...]
            }
            calls.append(Call(name: String(text.prefix { $0 != "(" }), line: text))
        }
        return calls
    }

    /// The first double-quoted argument.
    static func quoted(_ line: String) -> String? {
        guard let start = line.firstIndex(of: "\"") else { return nil }
        let rest = line[line.index(after: start)...]
        guard let end = rest.firstIndex(of: "\"") else { return nil }
        return String(rest[..<end])
    }

    /// The path strace -y shows for the first descriptor argument: `8</a/b>`.
    static func descriptorPath(_ line: String) -> String? {
        guard let open = line.firstIndex(of: "<"), let close = line[open...].firstIndex(of: ">") else { return nil }
        return String(line[line.index(after: open)..<close])
    }
}
