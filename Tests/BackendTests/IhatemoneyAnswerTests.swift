import ExpenseCore
import ExpenseTestSupport
import Foundation
import Synchronization
import Testing

/// Answers ihatemoney 7.2.1 does not give (a proxy's HTML page, a
/// truncated body, a bill without its marker) from a fake on loopback,
/// and refused credentials from the real one: each classified as
/// docs/backends.md says, with a reason in `show`, and nothing lost.
/// Serialized: each test drives the real ihatemoney (Python) from a daemon; one at a time bounds the load the Python backends put on the machine while the other suites run.
@Suite(.serialized) struct IhatemoneyAnswerTests {
    static let members = Array(#"[{"id": 1, "name": "Alice", "weight": 1.0, "activated": true}]"#.utf8)

    /// A daemon sending to a fake ihatemoney whose create answers are `create`.
    static func daemon(fake: LoopbackHTTPServer) throws -> DaemonHarness {
        let dir = TemporaryDirectory(prefix: "ihm-fake")
        SampleReceipt.write(Array("code".utf8), to: dir.at("token"))
        SampleReceipt.write(Array("""
            backend = ihatemoney
            server = \(fake.baseURL)/api/projects/household
            token_file = \(dir.at("token"))
            ihatemoney_payer = Alice
            max_attempts = 2
            """.utf8), to: dir.at("expensed.conf"))
        let daemon = DaemonHarness(arguments: ["--drain-interval", "200ms", "--backoff-base", "50ms", "--backoff-cap", "200ms"], directory: dir)
        try daemon.start()
        return daemon
    }

    static func json(_ status: Int, _ body: String) -> LoopbackHTTPServer.Reply {
        .respond(status: status, headers: ["Content-Type": "application/json"], body: Array(body.utf8))
    }

    static func add(_ daemon: DaemonHarness) throws -> String {
        let result = try daemon.ctl(["add", "--merchant", "Shop", "--amount", "3.00", "--currency", "EUR", "--date", "2026-11-29", "--json"])
        return try #require(try JSONValue.parse(Array(result.stdout.utf8))["transaction_id"]?.stringValue)
    }

    static func lastError(_ daemon: DaemonHarness, _ id: String) throws -> (error: String, errorClass: String)? {
        guard let job = try daemon.ctlJSON(["show", id])["jobs"]?.arrayValue?.first,
              let error = job["last_error"]?.stringValue, let errorClass = job["last_error_class"]?.stringValue else { return nil }
        return (error, errorClass)
    }

    /// A 200 HTML page (a captive portal, a proxy) or invalid JSON as a
    /// create's answer: the create may or may not have been committed, so
    /// it is transient, and the next send looks the marker up first.
    @Test(arguments: [
        ("text/html", "<html><body>Welcome to the hotel network</body></html>", "an HTML page"),
        ("application/json", "{\"id\": 12", "invalid JSON"),
    ])
    func unreadableCreateAnswer_isTransientAndLooksUpBeforeSendingAgain(_ type: String, _ body: String, _ reason: String) throws {
        let posts = Mutex(0)
        let fake = try LoopbackHTTPServer { request in
            if request.path.hasSuffix("/members") { return .respond(status: 200, headers: ["Content-Type": "application/json"], body: Self.members) }
            if request.method == "GET" { return Self.json(200, "[]") }
            posts.withLock { $0 += 1 }
            return .respond(status: 200, headers: ["Content-Type": type], body: Array(body.utf8))
        }
        defer { fake.stop() }
        let daemon = try Self.daemon(fake: fake)
        defer { daemon.stop() }
        let id = try Self.add(daemon)
        try waitUntil(timeout: 30, "the create to be tried twice") { posts.withLock { $0 } >= 2 }
        let last = try #require(try Self.lastError(daemon, id))
        #expect(last.errorClass == "transient")
        #expect(last.error.contains(reason), "\(last.error)")
        #expect(last.error.contains("marker is looked up"), "\(last.error)")
        let requests = fake.requests.map { "\($0.method) \($0.path)" }
        let firstPost = try #require(requests.firstIndex(of: "POST /api/projects/household/bills"))
        let secondPost = try #require(requests[(firstPost + 1)...].firstIndex(of: "POST /api/projects/household/bills"))
        #expect(requests[firstPost..<secondPost].contains("GET /api/projects/household/bills"), "a lookup between the two sends: \(requests)")
        #expect(try daemon.list().count == 1, "nothing lost")
    }

    /// A listing where a bill lacks `external_link`, or carries someone
    /// else's link: those bills are not ours; the lookup finds nothing and
    /// the create is sent, and a refresh skips them.
    @Test func billsWithoutOurMarker_areNotAdopted() throws {
        let posts = Mutex(0)
        let fake = try LoopbackHTTPServer { request in
            if request.path.hasSuffix("/members") { return .respond(status: 200, headers: ["Content-Type": "application/json"], body: Self.members) }
            if request.method == "GET" {
                return Self.json(200, """
                    [{"id": 1, "payer_id": 1, "owers": [{"id": 1, "name": "Alice"}], "amount": 3.0, "date": "2026-11-29",
                      "what": "Shop", "bill_type": "Expense", "original_currency": "EUR", "converted_amount": 3.0},
                     {"id": 2, "payer_id": 1, "owers": [], "amount": 3.0, "date": "2026-11-29", "what": "Shop",
                      "external_link": "https://example.com/t/cp-0206e11a39722b8b0b0d34", "original_currency": "EUR"}]
                    """)
            }
            let n = posts.withLock { $0 += 1; return $0 }
            // The first create's answer is lost (reset), so the second send looks first.
            return n == 1 ? .reset : Self.json(201, "3")
        }
        defer { fake.stop() }
        let daemon = try Self.daemon(fake: fake)
        defer { daemon.stop() }
        let id = try Self.add(daemon)
        try waitUntil(timeout: 30, "the create to be applied") { try daemon.ctlJSON(["show", id])["state"] == "synced" }
        #expect(posts.withLock { $0 } == 2, "sent again: no bill carried our marker")
        #expect(try daemon.ctl(["sync", "--refresh", "--wait"]).status == 0)
        #expect(try daemon.list().count == 1, "the refresh shows no bill without our marker")
    }

    /// A bill list that is HTML or not ihatemoney's shape: the lookup
    /// cannot decide, so the create is not sent (transient), and says why.
    @Test func unreadableBillList_holdsTheResendWithAReason() throws {
        let posts = Mutex(0)
        let fake = try LoopbackHTTPServer { request in
            if request.path.hasSuffix("/members") { return .respond(status: 200, headers: ["Content-Type": "application/json"], body: Self.members) }
            if request.method == "GET" { return Self.json(200, #"[{"id": 1}]"#) }
            posts.withLock { $0 += 1 }
            return .close
        }
        defer { fake.stop() }
        let daemon = try Self.daemon(fake: fake)
        defer { daemon.stop() }
        let id = try Self.add(daemon)
        try waitUntil(timeout: 30, "the lookup to fail") { try Self.lastError(daemon, id)?.error.contains("bill list") == true }
        let last = try #require(try Self.lastError(daemon, id))
        #expect(last.errorClass == "transient")
        #expect(last.error.contains("not what ihatemoney 7.2.1 sends"), "\(last.error)")
        #expect(posts.withLock { $0 } == 1, "no second create without a lookup that could answer")
    }

    /// A 400 with ihatemoney's field errors: rejected, the fields named.
    @Test func fieldErrors_areRejectedNamingTheFields() throws {
        let fake = try LoopbackHTTPServer { request in
            if request.path.hasSuffix("/members") { return .respond(status: 200, headers: ["Content-Type": "application/json"], body: Self.members) }
            if request.method == "GET" { return Self.json(200, "[]") }
            return Self.json(400, #"{"original_currency": ["Not a valid choice."]}"#)
        }
        defer { fake.stop() }
        let daemon = try Self.daemon(fake: fake)
        defer { daemon.stop() }
        let id = try Self.add(daemon)
        try waitUntil(timeout: 30, "the create to need attention") { try daemon.ctlJSON(["show", id])["state"] == "needs_attention" }
        let last = try #require(try Self.lastError(daemon, id))
        #expect(last.errorClass == "rejected")
        #expect(last.error == "400 ihatemoney refused original_currency: Not a valid choice.", "\(last.error)")
    }

    /// The real ihatemoney refusing a wrong private code: sending pauses
    /// for credentials, the job is kept, and a right code resumes it.
    @Test func wrongPrivateCode_pausesForCredentials_thenResumes() throws {
        let h = try IhatemoneyHarness(privateCode: "not-the-code")
        try h.daemon.start()
        let id = try h.add(merchant: "Shop", amount: "1.00")
        try waitUntil(timeout: 30, "the daemon to report the refusal") {
            try h.daemon.ctlJSON(["status"])["server"] == "needs_credentials"
        }
        // No job is blamed for refused credentials (contract.md): the
        // create waits, unattempted, and the log says why.
        let job = try #require(try h.show(id)["jobs"]?.arrayValue?.first)
        #expect(job["state"] == "queued" && job["attempts"] == 0)
        #expect(h.daemon.log.contains("Server refused the credentials (401)"), "\(h.daemon.log)")
        #expect(!h.daemon.log.contains("not-the-code"), "the code never appears in the log")
        #expect(try h.bills().isEmpty)
        SampleReceipt.write(Array(h.project.privateCode.utf8), to: h.directory.at("token"))
        #expect(try h.daemon.ctl(["sync"]).status == 0)
        try h.waitUntilDrained()
        #expect(try h.bills(for: id).count == 1)
    }
}
