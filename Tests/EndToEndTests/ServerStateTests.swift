import ExpenseCore
import ExpenseTestSupport
import Foundation
import Testing

/// What `status` says of the server is true now, without a command to
/// make it so; and the command a refusal names does what it says.
@Suite struct ServerStateTests {
    static func status(_ sync: SyncHarness) throws -> JSONValue {
        try sync.daemon.ctlJSON(["status"])
    }

    @Test func serverThatComesBack_isOkInStatusWithoutAnyCommand_andItsErrorIsCleared() throws {
        let sync = try SyncHarness(startServer: false)
        try sync.daemon.start()
        defer { sync.daemon.stop() }
        // Down from the start: the first refresh finds nothing.
        try waitUntil(timeout: 20, "the server to be found unreachable") { try Self.status(sync)["server"] == "unreachable" }
        let down = try Self.status(sync)
        let downText = try sync.daemon.ctl(["status"]).stdout

        try sync.startServer()
        try waitUntil(timeout: 20, "status to say the server is back, with nothing queued and nothing asked") {
            try Self.status(sync)["server"] == "ok"
        }
        // While it was down: the error, with its time; no contact yet.
        #expect(down["last_error_class"] == "transport")
        let failedAt = down["last_error_at"]?.stringValue.flatMap(Timestamp.parse)
        #expect(failedAt.map { abs($0 - Int64(Date().timeIntervalSince1970 * 1000)) < 60_000 } == true, "\(down.serialized())")
        #expect(down["last_contact_at"] == .null)
        #expect(downText.contains("(unreachable)") && downText.contains("Last contact:     never"), "\(downText)")
        #expect(downText.contains("Last error:       transport at "), "\(downText)")
        // Now: ok, the error cleared by the success, the contact recent.
        let status = try Self.status(sync)
        #expect(status["last_error_class"] == .null && status["last_error_at"] == .null, "cleared by the success: \(status.serialized())")
        #expect(status["last_contact_at"]?.stringValue.flatMap(Timestamp.parse) != nil)
        let back = try sync.daemon.ctl(["status"]).stdout
        #expect(back.contains("(ok)") && back.contains(" ago)") && !back.contains("Last error"), "\(back)")

        // Down again while something was queued, which is then discarded:
        // the outage still ends on its own once the server returns.
        sync.stopServer()
        let id = try sync.daemon.ctl(["add"] + CommandLineTests.complete).stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        try waitUntil(timeout: 20, "the send to find the server unreachable") { try Self.status(sync)["server"] == "unreachable" }
        #expect(try sync.daemon.ctl(["discard", id]).status == 0)
        try sync.startServer()
        try waitUntil(timeout: 20, "status to say the server is back after the queue emptied") { try Self.status(sync)["server"] == "ok" }
        #expect(sync.daemon.log.contains("Server reachable again"))
    }

    @Test func serverThatAnswersWithAFailure_isReachable_andTheErrorHasItsTime() throws {
        let sync = try SyncHarness(serverArguments: ["--fault-error-rate", "1"])
        try sync.daemon.start()
        defer { sync.daemon.stop() }
        _ = try sync.daemon.ctl(["add"] + CommandLineTests.complete)
        try waitUntil(timeout: 20, "the 503 to be the last error") { try Self.status(sync)["last_error_class"] == "transient" }
        let status = try Self.status(sync)
        #expect(status["server"] == "ok", "it answers: \(status.serialized())")
        #expect(status["last_error"]?.stringValue?.contains("503") == true, "\(status.serialized())")
        #expect(status["last_error_at"]?.stringValue != nil && status["last_contact_at"]?.stringValue != nil)
    }

    /// The refusal's message says to fix the token file and run `sync`;
    /// `sync --wait` then waits for the queue instead of reporting the old
    /// refusal at once. While the token is still wrong it reports it.
    @Test func syncWaitAfterTheTokenFileIsFixed_waitsAndDrains() throws {
        // A long drain interval: only `sync` starts a pass, so nothing else
        // reads the fixed file first.
        let sync = try SyncHarness(daemonArguments: ["--drain-interval", "1h"])
        sync.writeToken("not-the-token")
        try sync.daemon.start()
        defer { sync.daemon.stop() }
        for _ in 0..<3 { _ = try sync.daemon.ctl(["add"] + CommandLineTests.complete) }
        try waitUntil(timeout: 20, "credentials to be needed") { try Self.status(sync)["server"] == "needs_credentials" }
        #expect(try sync.daemon.ctl(["status"]).stdout.contains("Credentials:      needed"))

        let stillWrong = try sync.daemon.ctl(["sync", "--wait", "--timeout", "30"])
        #expect(stillWrong.status == 77, "the token is still wrong: \(stillWrong.stderr)")
        #expect(stillWrong.stderr.contains("refused the credentials; fix the token file, then run 'expensectl sync'"))

        sync.writeToken(sync.token)
        let fixed = try sync.daemon.ctl(["sync", "--wait", "--timeout", "30"])
        #expect(fixed.status == 0, "\(fixed.status): \(fixed.stderr)")
        #expect(fixed.stdout.contains("everything is synced"))
        #expect(try sync.serverExpenses().count == 3)
        #expect(try Self.status(sync)["server"] == "ok")
    }

    /// `sync` ends the pause before it answers: a status read right after
    /// it on the same connection never shows the refusal of a token the
    /// file no longer holds.
    @Test func statusRightAfterSync_neverShowsTheStaleRefusal() throws {
        let sync = try SyncHarness(daemonArguments: ["--drain-interval", "1h"])
        sync.writeToken("not-the-token")
        try sync.daemon.start()
        defer { sync.daemon.stop() }
        _ = try sync.daemon.ctl(["add"] + CommandLineTests.complete)
        try waitUntil(timeout: 20, "credentials to be needed") { try Self.status(sync)["server"] == "needs_credentials" }
        sync.writeToken(sync.token)
        let client = try RawClient(path: sync.daemon.socketPath)
        try client.send(#"{"id":1,"op":"sync"}"# + "\n" + #"{"id":2,"op":"status"}"# + "\n")
        #expect(try client.readJSONLine()["ok"] == true)
        let status = try client.readJSONLine()
        #expect(status["id"] == 2)
        #expect(status["result"]?["server"] != "needs_credentials", "\(status.serialized())")
        try sync.waitUntilDrained()
    }

    /// systemd never sets CREDENTIALS_DIRECTORY empty; if something does,
    /// there is no token file, and the daemon says so rather than reading
    /// "/token".
    @Test func emptyCredentialsDirectory_meansNoTokenFile_andIsSaid() throws {
        let daemon = DaemonHarness(arguments: ["--server", "http://127.0.0.1:9"], environment: ["CREDENTIALS_DIRECTORY": ""])
        try daemon.start()
        defer { daemon.stop() }
        try waitUntil(timeout: 20, "the daemon to say why it has no token") {
            daemon.log.contains("CREDENTIALS_DIRECTORY is set but empty, so there is no token file")
        }
        #expect(!daemon.log.contains("'/token'"), "\(daemon.log)")
    }
}
