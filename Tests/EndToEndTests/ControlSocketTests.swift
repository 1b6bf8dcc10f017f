import ExpenseCore
import ExpenseTestSupport
import Foundation
import Posix
import Synchronization
import Testing

/// The control socket against raw bytes `expensectl` would never send.
@Suite struct ControlSocketTests {
    static let good = #"{"id":"ok","op":"status"}"# + "\n"

    static let badLines: [(String, [UInt8], String)] = {
        func line(_ s: String) -> [UInt8] { Array((s + "\n").utf8) }
        let valid = #""merchant":"A","amount":"1.00","currency":"EUR","date":"2026-01-01""#
        var cases: [(String, [UInt8], String)] = [
            ("not JSON", line("garbage"), "invalid_json"),
            ("unterminated object", line("{"), "invalid_json"),
            ("array", line("[]"), "not_an_object"),
            ("number", line("42"), "not_an_object"),
            ("string", line("\"add\""), "not_an_object"),
            ("null", line("null"), "not_an_object"),
            ("empty object", line("{}"), "missing_field"),
            ("op not a string", line(#"{"op":7}"#), "invalid_field"),
            ("unknown op", line(#"{"op":"fly"}"#), "unknown_op"),
            ("show without ref", line(#"{"op":"show"}"#), "missing_field"),
            ("ref not a string", line(#"{"op":"show","ref":5}"#), "invalid_field"),
            ("ref with a path", line(#"{"op":"show","ref":"../../etc/passwd"}"#), "invalid_field"),
            ("unknown transaction id", line(#"{"op":"show","ref":"cp-ffffffffffffffffffffff"}"#), "not_found"),
            ("retry unknown", line(#"{"op":"retry","ref":"0000"}"#), "not_found"),
            ("discard unknown", line(#"{"op":"discard","ref":"cp-0"}"#), "not_found"),
            ("expense not an object", line(#"{"op":"add","expense":"lunch"}"#), "invalid_field"),
            ("amount as a number", line(#"{"op":"add","expense":{"merchant":"A","amount":12.5,"currency":"EUR","date":"2026-01-01"}}"#), "invalid_field"),
            ("misspelled field", line(#"{"op":"add","expense":{"amout":"1.00"}}"#), "unknown_field"),
            ("three fraction digits", line(#"{"op":"add","expense":{"merchant":"A","amount":"1.005","currency":"EUR","date":"2026-01-01"}}"#), "invalid_field"),
            ("impossible date", line(#"{"op":"add","expense":{"merchant":"A","amount":"1.00","currency":"EUR","date":"2026-02-30"}}"#), "invalid_field"),
            ("unknown currency", line(#"{"op":"add","expense":{"merchant":"A","amount":"1.00","currency":"XYZ","date":"2026-01-01"}}"#), "invalid_field"),
            ("merchant too long", line(#"{"op":"add","expense":{"merchant":""# + String(repeating: "m", count: 300) + #"","amount":"1.00","currency":"EUR","date":"2026-01-01"}}"#), "invalid_field"),
            ("control character in merchant", line(#"{"op":"add","expense":{"merchant":"A\u0001B","amount":"1.00","currency":"EUR","date":"2026-01-01"}}"#), "invalid_field"),
            ("missing date without receipt", line(#"{"op":"add","expense":{"merchant":"A","amount":"1.00","currency":"EUR"}}"#), "missing_field"),
            ("add without expense or receipt", line(#"{"op":"add"}"#), "missing_field"),
            ("negative zero", line(#"{"op":"add","expense":{"merchant":"A","amount":"-0","currency":"EUR","date":"2026-01-01"}}"#), "invalid_field"),
            ("receipt promised, none passed", line(#"{"op":"add","receipt":true}"#), "receipt_missing"),
            ("client id not a UUID", line(#"{"op":"add","client_id":"nope","expense":{"# + valid + "}}"), "invalid_field"),
            ("client id upper case", line(#"{"op":"add","client_id":"1B4E28BA-2FA1-11D2-883F-0000F87D3B6E","expense":{"# + valid + "}}"), "invalid_field"),
            ("id is an array", line(#"{"id":[1],"op":"status"}"#), "invalid_field"),
            ("id is a boolean", line(#"{"id":true,"op":"status"}"#), "invalid_field"),
            ("id is an object", line(#"{"id":{"n":1},"op":"status"}"#), "invalid_field"),
            ("refresh is a number", line(#"{"op":"sync","refresh":1}"#), "invalid_field"),
            ("receipt is a string", line(#"{"op":"add","receipt":"true"}"#), "invalid_field"),
            ("unknown field on list", line(#"{"op":"list","extra":1}"#), "unknown_field"),
            ("trailing garbage", line(#"{"op":"status"}}}"#), "invalid_json"),
            ("number out of range", line(#"{"id":1e400,"op":"status"}"#), "invalid_json"),
            ("resolve with a bad take", line(#"{"op":"resolve","ref":"cp-1","take":"both"}"#), "invalid_field"),
            ("very long op", line(#"{"op":""# + String(repeating: "x", count: 100_000) + #""}"#), "unknown_op"),
            ("deep nesting", line(String(repeating: "[", count: 100_000) + String(repeating: "]", count: 100_000)), "invalid_json"),
        ]
        cases.append(("invalid UTF-8", [0x7B, 0x22, 0x6F, 0x70, 0x22, 0x3A, 0x22, 0xFF, 0xFE, 0x22, 0x7D, 0x0A], "invalid_utf8"))
        cases.append(("NUL inside the line", [0x7B, 0x00, 0x7D, 0x0A], "invalid_json"))
        cases.append(("line longer than the limit", [UInt8](repeating: 0x61, count: 300_000) + [0x0A], "line_too_long"))
        return cases
    }()

    @Test func badInputTable_eachAnsweredThenAGoodRequestSucceeds() throws {
        #expect(Self.badLines.count >= 30)
        let daemon = DaemonHarness(arguments: ["--control-line-max", "200000"])
        try daemon.start()
        defer { daemon.stop() }
        for (name, bytes, code) in Self.badLines {
            let client = try RawClient(path: daemon.socketPath)
            try client.send(bytes)
            let answer = try client.readJSONLine()
            #expect(answer["ok"] == false, "\(name)")
            #expect(answer["error"]?["code"]?.stringValue == code, "\(name): \(answer.serialized().prefix(300))")
            #expect(answer["error"]?["message"]?.stringValue?.isEmpty == false, "\(name)")
            try client.send(Self.good)
            let next = try client.readJSONLine()
            #expect(next["ok"] == true, "good request after \(name): \(next.serialized().prefix(300))")
            #expect(next["id"] == "ok")
        }
        #expect(try daemon.list().isEmpty, "no bad input stored anything")
    }

    @Test func descriptorWithRequestThatTakesNone_isRefused() throws {
        let daemon = DaemonHarness()
        try daemon.start()
        defer { daemon.stop() }
        let file = daemon.directory.at("r.jpg")
        SampleReceipt.write(SampleReceipt.jpeg(), to: file)
        let client = try RawClient(path: daemon.socketPath)
        try client.send(#"{"id":1,"op":"list"}"# + "\n", passingFileAt: file)
        #expect(try client.readJSONLine()["error"]?["code"] == "unexpected_descriptor")
        try client.send(Self.good)
        #expect(try client.readJSONLine()["ok"] == true)
    }

    @Test(arguments: [
        ("not an image", Array("hello, this is text".utf8), "receipt_invalid"),
        ("empty file", [], "receipt_invalid"),
        ("too large", SampleReceipt.jpeg(size: 5000), "receipt_too_large"),
    ] as [(String, [UInt8], String)])
    func badReceipts_areRefusedAndLeaveNoFile(_ name: String, bytes: [UInt8], code: String) throws {
        let daemon = DaemonHarness(arguments: ["--receipt-max-bytes", "4096"])
        try daemon.start()
        defer { daemon.stop() }
        let file = daemon.directory.at("receipt")
        SampleReceipt.write(bytes, to: file)
        let client = try RawClient(path: daemon.socketPath)
        try client.send(#"{"id":1,"op":"add","receipt":true}"# + "\n", passingFileAt: file)
        let answer = try client.readJSONLine()
        #expect(answer["error"]?["code"]?.stringValue == code, "\(name): \(answer.serialized())")
        try client.send(Self.good)
        #expect(try client.readJSONLine()["ok"] == true)
        #expect(daemon.receiptFiles().isEmpty, "\(name) left \(daemon.receiptFiles())")
        #expect(try daemon.list().isEmpty)
    }

    @Test(arguments: [("write-only", O_WRONLY), ("O_PATH", 0o10000000)] as [(String, Int32)])
    func receiptDescriptorNotOpenForReading_isRefusedAndTheDaemonCarriesOn(_ name: String, flags: Int32) throws {
        let daemon = DaemonHarness()
        try daemon.start()
        defer { daemon.stop() }
        let file = daemon.directory.at("r.jpg")
        SampleReceipt.write(SampleReceipt.jpeg(), to: file)
        let fd = open(file, flags | O_CLOEXEC)
        #expect(fd >= 0)
        let client = try RawClient(path: daemon.socketPath)
        try client.send(#"{"id":1,"op":"add","receipt":true}"# + "\n", passing: .init(owning: fd))
        #expect(try client.readJSONLine()["error"]?["code"] == "receipt_invalid", "\(name)")
        try client.send(Self.good)
        #expect(try client.readJSONLine()["ok"] == true)
        #expect(daemon.process?.isRunning == true)
    }

    @Test func receiptThatIsAPipe_isRefusedWithoutBlocking() throws {
        let daemon = DaemonHarness()
        try daemon.start()
        defer { daemon.stop() }
        var fds: [Int32] = [0, 0]
        #expect(pipe(&fds) == 0)
        defer { close(fds[1]) }
        let client = try RawClient(path: daemon.socketPath, timeout: 10)
        try client.send(#"{"id":1,"op":"add","receipt":true}"# + "\n", passing: .init(owning: fds[0]))
        #expect(try client.readJSONLine()["error"]?["code"] == "receipt_invalid")
    }

    @Test func silentClient_isClosedAfterTheIdleTimeout() throws {
        let daemon = DaemonHarness(arguments: ["--control-idle-timeout", "300ms"])
        try daemon.start()
        defer { daemon.stop() }
        // The client says nothing: only the idle timeout makes the daemon speak.
        let client = try RawClient(path: daemon.socketPath, timeout: 60)
        let answer = try client.readJSONLine()
        #expect(answer["error"]?["code"] == "idle_timeout")
        #expect(client.isClosedByPeer())
        #expect(try daemon.request(["op": "status"])["ok"] == true)
    }

    @Test func clientThatWritesButNeverReads_isDroppedAndTheDaemonStaysIdle() throws {
        let daemon = DaemonHarness(arguments: ["--control-idle-timeout", "500ms"])
        try daemon.start()
        defer { daemon.stop() }
        let pid = try #require(daemon.process?.pid)
        let client = try RawClient(path: daemon.socketPath, timeout: 10)
        var tv = timeval(tv_sec: 5, tv_usec: 0)
        setsockopt(client.fd, SOL_SOCKET, SO_SNDTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
        // Requests until the daemon stops reading (its unread answers pass
        // the high-water mark) and the socket fills, or it hangs up.
        let batch = String(repeating: Self.good, count: 1000)
        var sent = 0
        while sent < 200_000, (try? client.send(batch)) != nil { sent += 1000 }
        #expect(sent < 200_000, "the daemon stops taking requests whose answers go unread")
        // Neither reading nor closing: the daemon must not spin while it
        // waits out its idle timeout (500 ms) before it drops the client.
        let before = try cpuSeconds(pid)
        try waitUntil("the daemon to log the dropped connection") { daemon.log.contains("it read none of") }
        let used = try cpuSeconds(pid) - before
        #expect(used < 0.4, "daemon used \(used) s of CPU waiting out a 500 ms idle timeout with one stalled client")
        #expect(try daemon.request(["op": "status"])["ok"] == true, "other clients are served")
        // What was written before the hang-up is still readable, then the end.
        var answers = 0
        while let line = try? client.readLine() {
            #expect(try JSONValue.parse(line)["ok"] == true)
            answers += 1
        }
        #expect(answers > 0 && answers < sent)
    }

    @Test func socketThatNeverAnswers_expensectlGivesUpWithAReason() throws {
        // Connections wait in the backlog and nothing answers, as with an
        // activation socket whose daemon keeps failing to start.
        let dir = TemporaryDirectory()
        let path = dir.at("silent.sock")
        let listener = try UnixSocket.listen(path: path)
        defer { _ = listener }
        let result = try runCommand(BuiltProducts.path("expensectl"), ["--socket", path, "status"],
                                    environment: ["EXPENSECTL_ANSWER_TIMEOUT": "1"], timeout: 60)
        #expect(result.status == 75, "\(result.stderr)")
        #expect(result.stderr.contains("no answer from expensed at '\(path)' within 1.0 s"), "\(result.stderr)")
        // An add may still be stored: the way to retry it safely is named.
        let clientID = ClientID.make()
        let add = try runCommand(BuiltProducts.path("expensectl"),
                                 ["--socket", path, "add", "--merchant", "M", "--amount", "1.00", "--currency", "EUR",
                                  "--date", "2026-11-29", "--client-id", clientID],
                                 environment: ["EXPENSECTL_ANSWER_TIMEOUT": "0.5"], timeout: 30)
        #expect(add.status == 75, "\(add.stderr)")
        #expect(add.stderr.contains("run the same command again with --client-id \(clientID)"), "\(add.stderr)")
        for garbage in ["soon", "0", "-3", "1e9", ""] {
            let bad = try runCommand(BuiltProducts.path("expensectl"), ["--socket", path, "status"],
                                     environment: ["EXPENSECTL_ANSWER_TIMEOUT": garbage], timeout: 30)
            #expect(bad.status == 64, "'\(garbage)': \(bad.stderr)")
            let why = garbage.isEmpty ? "EXPENSECTL_ANSWER_TIMEOUT is set but empty" : "EXPENSECTL_ANSWER_TIMEOUT must be a number of seconds"
            #expect(bad.stderr.contains(why), "'\(garbage)': \(bad.stderr)")
        }
    }

    @Test func addWhoseRetryGoesUnanswered_stillNamesItsClientID() throws {
        // The first connection takes the add and hangs up unanswered (the
        // client retries with the same client id); the second never answers.
        let dir = TemporaryDirectory()
        let path = dir.at("flaky.sock")
        let listener = try UnixSocket.listen(path: path)
        let kept = Mutex<[FileDescriptor]>([])
        let server = Thread {
            // The sockets do not block: wait for each step.
            func accepted() -> FileDescriptor? {
                _ = try? Poll.wait([(listener, .readable)], timeoutMilliseconds: 10_000)
                return try? UnixSocket.accept(listener)
            }
            if let first = accepted() {
                _ = try? Poll.wait([(first, .readable)], timeoutMilliseconds: 10_000)
                var buffer = [UInt8](repeating: 0, count: 4096)
                _ = try? UnixSocket.receive(first, into: &buffer)
            }
            if let second = accepted() { kept.withLock { $0.append(second) } }
        }
        server.start()
        let add = try runCommand(BuiltProducts.path("expensectl"),
                                 ["--socket", path, "add", "--merchant", "M", "--amount", "1.00", "--currency", "EUR", "--date", "2026-11-29"],
                                 environment: ["EXPENSECTL_ANSWER_TIMEOUT": "0.5"], timeout: 30)
        #expect(add.status == 75, "\(add.stderr)")
        #expect(add.stderr.contains("run the same command again with --client-id "), "\(add.stderr)")
        #expect(kept.withLock { $0.count } == 1, "the add was tried again on a second connection")
    }

    @Test func clientThatLeavesWhileItsRequestIsHandled_costsNoCPU() throws {
        // The handler holds this add for 2 s after copying its receipt.
        let daemon = DaemonHarness(environment: ["EXPENSED_FAULT": "after-receipt-staged:sleep=2000"])
        try daemon.start()
        defer { daemon.stop() }
        let pid = try #require(daemon.process?.pid)
        let file = daemon.directory.at("r.jpg")
        SampleReceipt.write(SampleReceipt.jpeg(), to: file)
        do {
            let client = try RawClient(path: daemon.socketPath)
            try client.send(#"{"id":1,"op":"add","receipt":true,"expense":{"merchant":"M","amount":"1.00","currency":"EUR","date":"2026-11-29"}}"# + "\n",
                            passingFileAt: file)
        }  // hung up while the add is in the handler's hands
        // The handler pauses 2 s at the fault point; the hung-up connection
        // must not make the daemon spin meanwhile.
        let before = try cpuSeconds(pid)
        try waitUntil("the add to be stored all the same") { daemon.log.contains("Queued expense with receipt") }
        let used = try cpuSeconds(pid) - before
        #expect(used < 0.5, "daemon used \(used) s of CPU waiting 2 s on one handler")
        #expect(try daemon.list().count == 1)
        #expect(try daemon.request(["op": "status"])["ok"] == true)
    }

    @Test func clientThatDribblesBytes_isStillClosedAfterTheIdleTimeout() throws {
        let daemon = DaemonHarness(arguments: ["--control-idle-timeout", "300ms"])
        try daemon.start()
        defer { daemon.stop() }
        let client = try RawClient(path: daemon.socketPath, timeout: 10)
        // A byte every 50 ms, never a whole line, until the daemon hangs up
        // (a deadline of a minute only stops a daemon that never would).
        let deadline = Date().addingTimeInterval(60)
        var closed = false
        while !closed && Date() < deadline {
            do { try client.send("{") } catch { closed = true }
            usleep(50_000)
        }
        #expect(closed, "a byte now and then does not keep a connection open")
        #expect(try client.readJSONLine()["error"]?["code"] == "idle_timeout", "what the daemon said before it hung up")
    }

    @Test func manyDescriptorsWithoutALine_closeTheConnection() throws {
        let daemon = DaemonHarness()
        try daemon.start()
        defer { daemon.stop() }
        let file = daemon.directory.at("r.jpg")
        SampleReceipt.write(SampleReceipt.jpeg(), to: file)
        let client = try RawClient(path: daemon.socketPath)
        for _ in 0..<10 { try? client.send("x", passingFileAt: file) }
        let answer = try client.readJSONLine()
        #expect(answer["error"]?["code"] == "unexpected_descriptor")
        #expect(client.isClosedByPeer())
        #expect(try daemon.request(["op": "status"])["ok"] == true)
    }

    @Test func pipelinedLineThenReceipt_eachGetsItsOwn() throws {
        let daemon = DaemonHarness()
        try daemon.start()
        defer { daemon.stop() }
        let file = daemon.directory.at("r.jpg")
        SampleReceipt.write(SampleReceipt.jpeg(), to: file)
        let client = try RawClient(path: daemon.socketPath)
        for _ in 0..<20 {
            try client.send(Self.good)
            try client.send(#"{"id":"r","op":"add","receipt":true}"# + "\n", passingFileAt: file)
        }
        for _ in 0..<20 {
            #expect(try client.readJSONLine()["ok"] == true)
            let added = try client.readJSONLine()
            #expect(added["ok"] == true, "\(added.serialized())")
        }
        #expect(try daemon.list().count == 20)
    }

    @Test func clientThatLeavesMidRequest_doesNotDisturbTheDaemon() throws {
        let daemon = DaemonHarness()
        try daemon.start()
        defer { daemon.stop() }
        for _ in 0..<20 {
            let client = try RawClient(path: daemon.socketPath)
            try client.send(#"{"id":1,"op":"add","expense":{"merchant":"Hal"#)
        }
        // An add whose answer nobody reads still commits: durable first.
        let clientID = ClientID.make()
        do {
            let client = try RawClient(path: daemon.socketPath)
            try client.send(#"{"id":1,"op":"add","client_id":""# + clientID + #"","expense":{"merchant":"A","amount":"1.00","currency":"EUR","date":"2026-01-01"}}"# + "\n")
        }
        try waitUntil(timeout: 10, "the unread add to be stored") {
            try daemon.list().contains { $0["client_id"]?.stringValue == clientID }
        }
        #expect(try daemon.request(["op": "status"])["ok"] == true)
    }

    @Test func connectionsBeyondTheLimit_areRefusedWithAReason() throws {
        let daemon = DaemonHarness(arguments: ["--control-max-connections", "3"])
        try daemon.start()
        defer { daemon.stop() }
        // Hold three connections, each proven served. The harness's own
        // start-up probe may still count for a moment: retry a refused slot.
        var held: [RawClient] = []
        try waitUntil(timeout: 10, "three served connections") {
            let client = try RawClient(path: daemon.socketPath)
            try? client.send(Self.good)
            if (try? client.readJSONLine())?["ok"] == true { held.append(client) }
            return held.count == 3
        }
        let extra = try RawClient(path: daemon.socketPath)
        #expect(try extra.readJSONLine()["error"]?["code"] == "too_many_connections")
        withExtendedLifetime(held) {}
    }

    @Test func pipelinedRequests_areAnsweredInOrder() throws {
        let daemon = DaemonHarness()
        try daemon.start()
        defer { daemon.stop() }
        let client = try RawClient(path: daemon.socketPath)
        var batch = ""
        for i in 0..<50 {
            batch += #"{"id":\#(i),"op":"add","expense":{"merchant":"M\#(i)","amount":"\#(i).00","currency":"EUR","date":"2026-01-01"}}"# + "\n"
        }
        try client.send(batch)
        for i in 0..<50 {
            let answer = try client.readJSONLine()
            #expect(answer["id"] == .integer(Int64(i)))
            #expect(answer["ok"] == true)
        }
        #expect(try daemon.list().count == 50)
    }

    @Test func watch_streamsTheNewestSummary() throws {
        let daemon = DaemonHarness()
        try daemon.start()
        defer { daemon.stop() }
        let watcher = try RawClient(path: daemon.socketPath)
        try watcher.send(#"{"id":"w","op":"watch"}"# + "\n")
        let first = try watcher.readJSONLine()
        #expect(first["id"] == "w")
        #expect(first["result"]?["queued"] == 0)
        _ = try daemon.ctl(["add", "--merchant", "A", "--amount", "1.00", "--currency", "EUR", "--date", "2026-01-01"])
        var latest = try watcher.readJSONLine()
        while latest["result"]?["queued"] != 1 { latest = try watcher.readJSONLine() }
        #expect(latest["id"] == "w")
    }

    @Test func slowWatcher_neverBlocksTheDaemon() throws {
        let daemon = DaemonHarness()
        try daemon.start()
        defer { daemon.stop() }
        let watcher = try RawClient(path: daemon.socketPath)
        try watcher.send(#"{"id":"w","op":"watch"}"# + "\n")
        // Never read: 300 adds each change the summary; the daemon keeps only the newest for it.
        let client = try RawClient(path: daemon.socketPath)
        for i in 0..<300 {
            try client.send(#"{"id":\#(i),"op":"add","expense":{"merchant":"M","amount":"1.00","currency":"EUR","date":"2026-01-01"}}"# + "\n")
            #expect(try client.readJSONLine()["ok"] == true)
        }
        // The watcher then catches up straight to the newest state.
        var last = try watcher.readJSONLine()
        var lines = 1
        while last["result"]?["queued"] != 300 {
            last = try watcher.readJSONLine()
            lines += 1
        }
        #expect(lines < 300, "a slow watcher skips intermediate states")
    }
}
