import ExpenseCore
import ExpenseTestSupport
import Foundation
import Testing

/// `expensectl watch`: one line per change of an expense's state, through a
/// real daemon sending to a server on loopback.
@Suite struct WatchChangesTests {
    /// A server that creates what it is sent, refuses "Blocked" merchants
    /// (422) and is busy for "Busy" ones (503, retry in an hour), and
    /// deletes with a tombstone (or is busy for deletes: `deleting: false`).
    static func server(deleting: Bool = true) throws -> LoopbackHTTPServer {
        try LoopbackHTTPServer { request in
            if request.method == "GET" { return .respond(status: 200, headers: [:], body: Array(#"{"expenses":[],"next_cursor":"0","has_more":false}"#.utf8)) }
            if request.method == "DELETE" && !deleting { return .respond(status: 503, headers: ["Retry-After": "3600"], body: []) }
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
        try waitFor(5, "the delete and its sync")
        let blocked = try Self.add(daemon, "Blocked")
        try waitFor(8, "the refusal")
        let busy = try Self.add(daemon, "Busy")
        try waitFor(11, "the retry later")

        // A delete is `deleting` until applied, as `list` shows it: sending it is no change.
        let expected: [(String, String?, String, String?)] = [
            (fine, nil, "queued", nil), (fine, "queued", "sending", nil), (fine, "sending", "synced", nil),
            (fine, "synced", "deleting", nil), (fine, "deleting", "deleted", nil),
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
        let refusal = try #require(seen.count > 7 ? seen[7]["reason"]?.stringValue : nil)
        #expect(refusal.contains("invalid_field") && refusal.contains("amount"), "\(refusal)")
        #expect(seen.count > 10 && seen[10]["reason"]?.stringValue?.contains("retry in") == true, "\(seen.last ?? .null)")

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

    /// Finds `wanted` (transaction id, from, to, start of the reason) in
    /// `seen` in that order, other changes between them allowed.
    static func expectInOrder(_ seen: [JSONValue], _ wanted: [(String, String?, String, String?)],
                              sourceLocation: SourceLocation = #_sourceLocation) {
        var rest = seen[...]
        for want in wanted {
            guard let found = rest.firstIndex(where: { change in
                change["transaction_id"]?.stringValue == want.0 && change["from"]?.stringValue == want.1 && change["to"]?.stringValue == want.2
                    && want.3.map { change["reason"]?.stringValue?.hasPrefix($0) == true } ?? true
            }) else {
                Issue.record("no change \(want) after those before it in \(seen.map { $0.serialized() }.joined(separator: "\n"))", sourceLocation: sourceLocation)
                return
            }
            rest = rest[(found + 1)...]
        }
    }

    /// The real server, two devices: what the other device's watch shows of
    /// an expense learned from a refresh, edited into a conflict, resolved,
    /// given a receipt, then deleted by the first device.
    @Test func refreshEditConflictResolveReceiptAndRemoteDelete_eachShowAsTheirLine() throws {
        let sync = try SyncHarness()
        let other = sync.secondDevice()
        try sync.daemon.start()
        try other.start()
        defer { sync.daemon.stop(); other.stop() }
        let watching = try Self.watch(other, ["--json"], name: "watch-other")
        defer { watching.stop() }
        let first = try Self.watch(sync.daemon, ["--json"], name: "watch-first")
        defer { first.stop() }

        // A receipt added with its expense: the create's answer leaves the
        // upload to send, so the expense is synced only after it.
        let receipt = sync.daemon.directory.at("scan.jpg")
        SampleReceipt.write(SampleReceipt.jpeg(), to: receipt)
        let scanned = try sync.daemon.ctlJSON(["add", "--receipt", receipt, "--merchant", "Scan", "--amount", "3.00", "--currency", "EUR",
                                               "--date", "2026-11-29"])
        let scan = try #require(scanned["transaction_id"]?.stringValue)
        let id = try Self.add(sync.daemon, "Blue Bottle")
        try sync.waitUntilDrained()
        try waitUntil(timeout: 20, "the receipt's upload") {
            Self.changes(first).contains { $0["transaction_id"]?.stringValue == scan && $0["to"] == "synced" }
        }
        let scanChanges = Self.changes(first).filter { $0["transaction_id"]?.stringValue == scan }
        #expect(scanChanges.filter { $0["to"] == "synced" }.count == 1, "synced once, when nothing is left: \(scanChanges)")
        #expect(scanChanges.last?["reason"] == "receipt applied", "\(scanChanges)")
        Self.expectInOrder(scanChanges, [(scan, nil, "queued", nil), (scan, "sending", "queued", "create applied"), (scan, "sending", "synced", "receipt applied")])

        #expect(try other.ctl(["sync", "--refresh", "--wait", "--timeout", "20"]).status == 0)
        try waitUntil(timeout: 20, "the refresh") { Self.changes(watching).contains { $0["transaction_id"]?.stringValue == id } }

        // Both change the currency: the first device's reaches the server first.
        sync.stopServer()
        try OfflineEditTests.edit(sync.daemon, id, ["--currency", "USD"])
        try OfflineEditTests.edit(other, id, ["--currency", "GBP", "--merchant", "Second"])
        other.stop()
        try sync.startServer()
        #expect(try sync.daemon.ctl(["sync", "--wait", "--timeout", "20"]).status == 0)
        // The other device's edit waits until its watch is back.
        sync.stopServer()
        try other.start()
        try waitUntil(timeout: 20, "watch to reconnect") { watching.standardError.contains("reconnected") }
        try sync.startServer()
        #expect(try other.ctl(["sync", "--wait", "--timeout", "20"]).status == 0)
        try waitUntil(timeout: 20, "the conflict") { Self.changes(watching).contains { $0["to"] == "conflict" } }
        #expect(try other.ctl(["resolve", id, "--take", "mine"]).status == 0)
        #expect(try other.ctl(["sync", "--wait", "--timeout", "20"]).status == 0)
        let otherReceipt = other.directory.at("later.jpg")
        SampleReceipt.write(SampleReceipt.jpeg(seed: 2), to: otherReceipt)
        try OfflineEditTests.edit(other, id, ["--receipt", otherReceipt])
        #expect(try other.ctl(["sync", "--wait", "--timeout", "20"]).status == 0)

        // A refresh first: the first device's cursor then asks only for what changed since.
        #expect(try sync.daemon.ctl(["sync", "--refresh", "--wait", "--timeout", "20"]).status == 0)
        _ = try sync.daemon.ctlJSON(["delete", id])
        try sync.waitUntilDrained()
        #expect(try other.ctl(["sync", "--refresh", "--wait", "--timeout", "20"]).status == 0)
        try waitUntil(timeout: 20, "the delete learned") { Self.changes(watching).contains { $0["to"] == "deleted" } }

        // The first device's refresh brings back its own delete: no line for it.
        #expect(try sync.daemon.ctl(["sync", "--refresh", "--wait", "--timeout", "20"]).status == 0)
        let seen = Self.changes(watching)
        Self.expectInOrder(seen, [
            (id, nil, "synced", "from the server"),
            (id, "synced", "queued", "edited: merchant, currency"),
            (id, "sending", "conflict", "conflict on currency: the server kept USD, not GBP"),
            (id, "conflict", "queued", "conflict resolved with this device's values"),
            (id, "sending", "synced", "edit applied"),
            (id, "synced", "queued", "receipt attached"),
            (id, "sending", "synced", "receipt applied"),
            (id, "synced", "deleted", "deleted on the server"),
        ])
        // The first device's own edit, applied: no line from the refresh of what it sent itself.
        Self.expectInOrder(Self.changes(first), [(id, "synced", "queued", "edited: currency"), (id, "sending", "synced", "edit applied"),
                                                 (id, "synced", "deleting", nil), (id, "deleting", "deleted", nil)])
        #expect(!Self.changes(first).contains { $0["from"] == "deleted" }, "\(first.standardOutput)")
        let text = try Self.watch(other, [], name: "watch-text")
        defer { text.stop() }
        let again = try Self.add(other, "Later")
        try waitUntil(timeout: 20, "the text line") { text.standardOutput.contains("\(again)  new → queued") }
    }

    /// The spool's intake and a late sidecar show as changes, and a
    /// discard shows the state the expense is left in: a deleting one is
    /// back to what the server has, a never-sent one is gone.
    @Test func spoolIntakeLateSidecarAndDiscard_showAsTheirLines() throws {
        let server = try Self.server(deleting: false)
        defer { server.stop() }
        let dir = TemporaryDirectory()
        SampleReceipt.write(Array("token\n".utf8), to: dir.at("token"))
        let daemon = DaemonHarness(arguments: ["--server", server.baseURL, "--token-file", dir.at("token"), "--drain-interval", "100ms",
                                               "--spool-settle", "100ms"], spool: true, directory: dir)
        try daemon.start()
        defer { daemon.stop() }
        let watching = try Self.watch(daemon, ["--json"], name: "watch-spool")
        defer { watching.stop() }
        try SpoolSourceTests.drop(SpoolDrop.receipt(.pdf, tag: 7), "scan.pdf", into: daemon)
        try waitUntil(timeout: 30, "the intake's line") { !Self.changes(watching).isEmpty }
        let scan = try #require(Self.changes(watching).first?["transaction_id"]?.stringValue)
        try SpoolSourceTests.drop(SpoolDrop.sidecar(SpoolSourceTests.fields), "scan.json", into: daemon)
        try waitUntil(timeout: 30, "the late sidecar's edit") {
            Self.changes(watching).contains { $0["reason"]?.stringValue?.hasPrefix("late sidecar 'scan.json': edited:") == true }
        }

        // A delete of a synced expense, discarded before it is sent: back to synced.
        let fine = try Self.add(daemon, "Fine")
        try waitUntil(timeout: 20, "its sync") { Self.changes(watching).contains { $0["transaction_id"]?.stringValue == fine && $0["to"] == "synced" } }
        _ = try daemon.ctlJSON(["delete", fine])
        try waitUntil(timeout: 20, "the delete tried") {
            Self.changes(watching).contains { $0["transaction_id"]?.stringValue == fine && $0["reason"]?.stringValue?.contains("retry in") == true }
        }
        let discarded = try daemon.ctl(["discard", fine, "--yes"])
        #expect(discarded.status == 0, "\(discarded.stderr)")
        // The watcher hears the discard after `discard` has answered: wait for its line.
        try waitUntil(timeout: 20, "the discard's line") {
            Self.changes(watching).contains { $0["transaction_id"]?.stringValue == fine && $0["reason"] == "pending work discarded" }
        }

        let seen = Self.changes(watching)
        Self.expectInOrder(seen, [(scan, nil, "queued", "from the spool")])
        #expect(seen.contains { $0["transaction_id"]?.stringValue == scan && $0["reason"]?.stringValue?.contains("edited: merchant") == true }, "\(seen)")
        Self.expectInOrder(seen, [(fine, nil, "queued", nil), (fine, "synced", "deleting", nil), (fine, "deleting", "synced", "pending work discarded")])
        #expect(!seen.contains { $0["to"] == "discarded" }, "something is left of it: what the server has")
    }

    /// Alice reads nothing while Bob and she add thousands: what she is told
    /// she missed counts her changes alone, never Bob's.
    @Test func aLaggingWatcherOfOneAccount_isToldWhatItMissedOfItsOwn() throws {
        let daemon = DaemonHarness(arguments: ["--control-idle-timeout", "1h"])
        let accounts = daemon.directory.at("accounts")
        try FileManager.default.createDirectory(atPath: accounts, withIntermediateDirectories: true)
        chmod(accounts, 0o700)
        for name in ["alice", "bob"] { try Data("token-\(name)\n".utf8).write(to: URL(fileURLWithPath: "\(accounts)/\(name)")) }
        daemon.arguments += ["--accounts-dir", accounts]
        try daemon.start()
        defer { daemon.stop() }
        let reader = try RawClient(path: daemon.socketPath)
        try reader.send(#"{"id":3,"op":"watch","changes":true,"account":"alice"}"# + "\n")
        #expect(try reader.readJSONLine()["ok"] == true, "the summary comes first")
        let writer = try RawClient(path: daemon.socketPath)
        let each = 5_000
        for n in 0..<each {
            for name in ["alice", "bob"] {
                try writer.send(#"{"op":"add","account":"\#(name)","expense":{"merchant":"Shop \#(n)","amount":"1.00","currency":"EUR","date":"2026-11-29"}}"# + "\n")
                let added = try writer.readJSONLine()
                #expect(added["ok"] == true, "\(added)")
            }
        }
        var changes = 0
        var missed: Int64 = 0
        while changes + Int(missed) < each, let line = try? reader.readJSONLine() {
            if let count = line["result"]?["missed"]?.intValue {
                missed += count
            } else {
                #expect(line["result"]?["account"] == "alice", "\(line)")
                changes += 1
            }
        }
        #expect(missed > 0, "the ring lapped her")
        #expect(changes + Int(missed) == each, "her \(each) changes, seen or missed: \(changes) seen, \(missed) missed")
        // Nothing more: Bob's changes were not counted as hers.
        try writer.send(#"{"op":"add","account":"alice","expense":{"merchant":"Last","amount":"1.00","currency":"EUR","date":"2026-11-29"}}"# + "\n")
        #expect(try writer.readJSONLine()["ok"] == true)
        let last = try reader.readJSONLine()
        #expect(last["result"]?["from"] == .null && last["result"]?["to"] == "queued", "the next line is her next change: \(last)")
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

        // Made on the server with alice's token, learnt by a refresh: hers, not the default account's.
        let made = try h.createOnServer(as: "alice", merchant: "From Elsewhere")
        let bobsToo = try h.createOnServer(as: "bob", merchant: "Bob Elsewhere")
        #expect(try h.ctl("alice", ["sync", "--refresh", "--wait", "--timeout", "20"]).status == 0)
        #expect(try h.ctl("bob", ["sync", "--refresh", "--wait", "--timeout", "20"]).status == 0)
        try waitUntil(timeout: 20, "alice's refresh") { Self.changes(watching).contains { $0["transaction_id"]?.stringValue == made } }
        let learnt = try #require(Self.changes(watching).first { $0["transaction_id"]?.stringValue == made })
        #expect(learnt["account"]?.stringValue == alice && learnt["from"] == .null && learnt["to"] == "synced"
                    && learnt["reason"] == "from the server", "\(learnt)")
        #expect(!Self.changes(watching).contains { $0["transaction_id"]?.stringValue == bobsToo }, "\(watching.standardOutput)")
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
