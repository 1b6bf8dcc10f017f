import ExpenseCore
import ExpenseTestSupport
import Foundation
import Testing

/// `expensectl watch`: one line per change of an expense's state, through a
/// real daemon sending to a server on loopback.
@Suite(.serialized) struct WatchChangesTests {
    /// A server that creates what it is sent, refuses "Blocked" merchants
    /// (422) and is busy for "Busy" ones (503, retry in an hour), and
    /// deletes with a tombstone.
    static func server() throws -> LoopbackHTTPServer {
        try LoopbackHTTPServer { request in
            if request.method == "GET" { return .respond(status: 200, headers: [:], body: Array(#"{"expenses":[],"next_cursor":"0","has_more":false}"#.utf8)) }
            if request.method == "DELETE" {
                let id = String(request.path.split(separator: "/").last ?? "")
                let tombstone: JSONValue = ["transaction_id": .string(id), "client_id": "x", "version": 2, "deleted": true,
                                            "created_at": "2026-11-30T00:00:00.000Z", "updated_at": "2026-11-30T00:00:00.000Z"]
                return .respond(status: 200, headers: ["Content-Type": "application/json"], body: tombstone.serializedBytes())
            }
            let merchant = (try? JSONValue.parse(request.body))?["merchant"]?.stringValue ?? ""
            if merchant == "Blocked" {
                return .respond(status: 422, headers: ["Content-Type": "application/json"],
                                body: Array(#"{"error":{"code":"invalid_field","field":"amount","message":"amount is over the limit"}}"#.utf8))
            }
            if merchant == "Busy" { return .respond(status: 503, headers: ["Retry-After": "3600"], body: []) }
            return SyncTests.created(request)
        }
    }

    static func watch(_ daemon: DaemonHarness, _ arguments: [String], name: String) throws -> ChildProcess {
        let child = try ChildProcess(BuiltProducts.path("expensectl"), ["--socket", daemon.socketPath] + arguments + ["watch"],
                                     outputDirectory: daemon.directory.path, name: name)
        try waitUntil(timeout: 20, "\(name) to start watching") { child.standardError.contains("watching changes") }
        return child
    }

    static func add(_ daemon: DaemonHarness, _ merchant: String) throws -> String {
        let added = try daemon.ctlJSON(["add", "--merchant", merchant, "--amount", "12.50", "--currency", "EUR", "--date", "2026-11-29"])
        return try #require(added["transaction_id"]?.stringValue)
    }

    /// The `--json` lines printed so far, parsed.
    static func changes(_ child: ChildProcess) -> [JSONValue] {
        child.standardOutput.split(separator: "\n").compactMap { try? JSONValue.parse(Array($0.utf8)) }
    }

    @Test func addSyncRefusalRetryAndDelete_eachShowAsTheirLine_inOrder() throws {
        let server = try Self.server()
        defer { server.stop() }
        let daemon = try SyncTests.daemon(sendingTo: server, ["--drain-interval", "100ms", "--backoff-base", "10ms", "--backoff-cap", "2h",
                                                                  "--max-attempts", "1"])
        defer { daemon.stop() }
        let text = try Self.watch(daemon, [], name: "watch-text")
        defer { text.stop() }
        let json = try Self.watch(daemon, ["--json"], name: "watch-json")
        defer { json.stop() }
        func waitFor(_ count: Int, _ what: String) throws {
            try waitUntil(timeout: 20, what) { Self.changes(json).count >= count && text.standardOutput.split(separator: "\n").count >= count }
        }
        let fine = try Self.add(daemon, "Fine")
        try waitFor(3, "the add and its sync")
        _ = try daemon.ctlJSON(["delete", fine])
        try waitFor(6, "the delete and its sync")
        let blocked = try Self.add(daemon, "Blocked")
        try waitFor(9, "the refusal")
        let busy = try Self.add(daemon, "Busy")
        try waitFor(12, "the retry later")

        let expected: [(String, String?, String, String?)] = [
            (fine, nil, "queued", nil), (fine, "queued", "sending", nil), (fine, "sending", "synced", nil),
            (fine, "synced", "deleting", nil), (fine, "deleting", "sending", nil), (fine, "sending", "deleted", nil),
            (blocked, nil, "queued", nil), (blocked, "queued", "sending", nil), (blocked, "sending", "needs_attention", "422"),
            (busy, nil, "queued", nil), (busy, "queued", "sending", nil), (busy, "sending", "queued", "503"),
        ]
        let seen = Self.changes(json)
        #expect(seen.count == expected.count, "\(json.standardOutput)")
        var lastSeq: Int64 = 0
        for (change, want) in zip(seen, expected) {
            #expect(change["transaction_id"]?.stringValue == want.0, "\(change)")
            #expect(change["from"]?.stringValue == want.1 && change["to"]?.stringValue == want.2, "\(change) wanted \(want)")
            if let reason = want.3 { #expect(change["reason"]?.stringValue?.hasPrefix(reason) == true, "\(change)") }
            #expect(change["account"] == "", "\(change)")
            #expect(change["at"]?.stringValue.flatMap(Timestamp.parse) != nil, "\(change)")
            let seq = change["seq"]?.intValue ?? 0
            #expect(seq > lastSeq, "sequence numbers grow: \(change)")
            lastSeq = seq
        }
        let refusal = try #require(seen.count > 8 ? seen[8]["reason"]?.stringValue : nil)
        #expect(refusal.contains("invalid_field") && refusal.contains("amount"), "\(refusal)")
        #expect(seen.count > 11 && seen[11]["reason"]?.stringValue?.contains("retry in") == true, "\(seen.last ?? .null)")

        // The text lines say the same, one each: time, id, from → to, (reason).
        let lines = text.standardOutput.split(separator: "\n").map(String.init)
        #expect(lines.count == expected.count, "\(text.standardOutput)")
        for (line, want) in zip(lines, expected) {
            let shown = "\(want.0)  \(want.1?.replacingOccurrences(of: "_", with: " ") ?? "new") → \(want.2.replacingOccurrences(of: "_", with: " "))"
            #expect(line.contains(shown), "\(line) wanted \(shown)")
            #expect(Timestamp.parse(String(line.prefix { $0 != " " })) != nil, "\(line)")
            if let reason = want.3 { #expect(line.contains("  (\(reason)"), "\(line)") }
        }
    }

    @Test func theDaemonKilledAndRestarted_watchReconnects_andShowsLaterChanges() throws {
        let daemon = DaemonHarness()
        try daemon.start()
        defer { daemon.stop() }
        let watching = try Self.watch(daemon, ["--json"], name: "watch")
        defer { watching.stop() }
        let first = try Self.add(daemon, "Before")
        try waitUntil(timeout: 20, "the first add") { Self.changes(watching).count == 1 }
        daemon.crash()
        try waitUntil(timeout: 20, "watch to notice") { watching.standardError.contains("lost expensed") }
        try daemon.start()
        try waitUntil(timeout: 20, "watch to reconnect") { watching.standardError.contains("reconnected") }
        let second = try Self.add(daemon, "After")
        try waitUntil(timeout: 20, "the add after the restart") { Self.changes(watching).count == 2 }
        #expect(Self.changes(watching).map { $0["transaction_id"]?.stringValue } == [first, second])
        #expect(watching.isRunning)
    }

    @Test func aWatcherThatReadsNothing_holdsNothingUp_andIsToldWhatItMissed() throws {
        // The idle timeout is long so that the reader, silent for the whole
        // run, is not closed: it must cost nothing all the same.
        let daemon = DaemonHarness(arguments: ["--control-idle-timeout", "1h"])
        try daemon.start()
        defer { daemon.stop() }
        let reader = try RawClient(path: daemon.socketPath)
        try reader.send(#"{"id":7,"op":"watch","changes":true}"# + "\n")
        #expect(try reader.readJSONLine()["ok"] == true, "the summary comes first")
        let rssBefore = try Self.residentKiB(daemon.daemonPID())
        let writer = try RawClient(path: daemon.socketPath)
        let total = 10_000
        for n in 0..<total {
            try writer.send(#"{"op":"add","expense":{"merchant":"Shop \#(n)","amount":"1.00","currency":"EUR","date":"2026-11-29"}}"# + "\n")
            #expect(try writer.readJSONLine()["ok"] == true)
        }
        let rssAfter = try Self.residentKiB(daemon.daemonPID())
        // A backlog of 10,000 change lines is about 2 MiB; the ring's 4,096 hold far less.
        #expect(rssAfter - rssBefore < 16 * 1024, "resident memory grew \(rssAfter - rssBefore) KiB")
        var changes = 0
        var missed: Int64 = 0
        var missedLines = 0
        while changes + Int(missed) < total, let line = try? reader.readJSONLine() {
            #expect(line["id"] == 7)
            if let count = line["result"]?["missed"]?.intValue {
                missed += count
                missedLines += 1
            } else {
                changes += 1
            }
        }
        #expect(changes + Int(missed) == total, "every change seen or counted as missed: \(changes) seen, \(missed) missed")
        #expect(missedLines == 1, "one line says what was missed: \(missedLines)")
        #expect(missed > 0, "a ring's worth is kept, no more")
        // What the socket's buffers took before the ring lapped it, then the ring.
        #expect(changes <= 2 * 4096, "only what the ring and the socket's buffers hold: \(changes)")
    }

    static func residentKiB(_ pid: Int32) throws -> Int {
        let status = try String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8)
        let line = try #require(status.split(separator: "\n").first { $0.hasPrefix("VmRSS:") })
        return Int(line.split(separator: " ")[1]) ?? 0
    }

    @Test func alicesWatch_neverShowsBobsChanges() throws {
        let h = try AccountHarness()
        defer { h.users.remove() }
        try h.startDaemon()
        defer { h.daemon.stop() }
        let alice = h.users.name("alice")
        let watching = try ChildProcess("/usr/bin/setpriv", ["--reuid=\(alice)", "--regid=\(alice)", "--init-groups", "--",
                                                             BuiltProducts.path("expensectl"), "--socket", h.daemon.socketPath, "--json", "watch"],
                                        outputDirectory: h.directory.path, name: "watch-alice")
        defer { watching.stop() }
        try waitUntil(timeout: 20, "alice's watch to start") { watching.standardError.contains("watching changes") }
        let bobs = try h.add("bob", merchant: "Bob One")
        let hers = try h.add("alice", merchant: "Alice One")
        try h.waitUntilDrained()
        try waitUntil(timeout: 20, "alice's expense synced") { Self.changes(watching).contains { $0["to"] == "synced" } }
        let seen = Self.changes(watching)
        #expect(seen.allSatisfy { $0["transaction_id"]?.stringValue == hers && $0["account"]?.stringValue == alice }, "\(seen) bob's \(bobs)")
        #expect(seen.map { $0["to"]?.stringValue } == ["queued", "sending", "synced"], "\(seen)")
    }

    @Test func garbage_isRefusedClearly() throws {
        let daemon = DaemonHarness()
        try daemon.start()
        defer { daemon.stop() }
        let client = try RawClient(path: daemon.socketPath)
        try client.send(#"{"id":1,"op":"watch","changes":"yes"}"# + "\n")
        let refused = try client.readJSONLine()
        #expect(refused["ok"] == false && refused["error"]?["field"] == "changes", "\(refused)")
        try client.send(#"{"id":2,"op":"watch","since":3}"# + "\n")
        let unknown = try client.readJSONLine()
        #expect(unknown["ok"] == false && unknown["error"]?["field"] == "since", "\(unknown)")
        let flag = try daemon.ctl(["watch", "--changes"])
        #expect(flag.status == 64, "\(flag.status) \(flag.stderr)")
        #expect(flag.stderr.contains("--changes"), "\(flag.stderr)")
    }
}
