import ExpenseTestSupport
import Foundation
import Testing

/// Slow and idle clients against a live server: the silence, head and body
/// timeouts, and the connection limit, with other clients served throughout.
@Suite struct SlowClientTests {
    @Test(arguments: StorageEngine.allCases)
    func trickledHeads_areClosedAtTheHeadDeadline_whileOthersAreServed(_ engine: StorageEngine) throws {
        let server = try TestServer(engine, ["--header-timeout", "2", "--connection-timeout", "30"])
        // A keep-alive connection idle after its answer waits for its next head.
        let idle = try server.connect()
        #expect(try server.request(on: idle, "GET", "/healthz", auth: .none).status == 200)
        let idleSince = Date()
        // A request whose head is complete and whose body is slow is the
        // request timeout's business, not the head's.
        let slowBody = try server.connect()
        let body = Array(TestServer.lunch.utf8)
        try slowBody.send(HTTPConnection.encode("POST", "/v1/expenses", headers: [
            ("Authorization", "Bearer \(server.token)"), ("Content-Type", "application/json"),
            ("Idempotency-Key", TestServer.key()), ("Content-Length", "\(body.count)"), ("Expect", "100-continue"),
        ]))
        #expect(try slowBody.readResponse().status == 100)

        let tricklers = (0..<4).map { _ in Trickler(port: server.port) }
        for trickler in tricklers { trickler.start() }
        defer { for trickler in tricklers { #expect(trickler.stop()) } }
        var probes = 0
        try waitUntil(timeout: 30, "the trickled heads to be closed") {
            #expect(server.isHealthy, "while the heads trickle")
            probes += 1
            return tricklers.allSatisfy { !$0.visits.isEmpty }
        }
        #expect(probes > 0)
        for visit in tricklers.flatMap(\.visits) {
            #expect(visit.closedByServer)
            #expect(!visit.answered)
            // Not before the deadline; the client's clock started first.
            #expect(visit.seconds >= 2, "closed after \(visit.seconds) s")
        }
        #expect(idle.waitForClose(timeout: 20))
        #expect(Date().timeIntervalSince(idleSince) >= 2)
        try slowBody.send(body)
        #expect(try slowBody.readResponse().status == 201)
        try waitUntil(timeout: 10, "an access line for each trickled head") {
            server.process.accessLog.filter { $0.hasPrefix("- /healthz 000 ") && $0.hasSuffix(" closed=head-timeout") }.count == 4
        }
        #expect(server.isHealthy)
    }

    @Test(arguments: StorageEngine.allCases)
    func slowClientsOverTheConnectionLimit_cannotStarveOthers(_ engine: StorageEngine) throws {
        let server = try TestServer(engine, ["--max-connections", "8", "--header-timeout", "2"])
        // Twice as many as there are slots, each coming back a second after
        // it was closed.
        let tricklers = (0..<16).map { _ in Trickler(port: server.port, reconnectAfter: 1) }
        for trickler in tricklers { trickler.start() }
        try waitUntil(timeout: 20, "every slow client to connect") { tricklers.allSatisfy { $0.connections > 0 } }
        // Well past a head deadline, every other request is served: at least
        // ten probes, over at least 5 s, however long each takes.
        let until = Date().addingTimeInterval(5)
        var probes = 0
        while Date() < until || probes < 10 {
            let response = Result { try server.request("GET", "/healthz", auth: .none) }
            #expect((try? response.get().status) == 200, "probe \(probes): \(response)")
            probes += 1
            Thread.sleep(forTimeInterval: 0.1)
        }
        for trickler in tricklers { #expect(trickler.stop()) }
        let visits = tricklers.flatMap(\.visits)
        #expect(visits.allSatisfy { !$0.answered })
        #expect(visits.filter(\.closedByServer).count >= tricklers.count)
        #expect(server.process.accessLog.contains { $0.hasPrefix("- /healthz 000 ") && $0.hasSuffix(" closed=evicted") })
        #expect(server.isHealthy)
    }

    @Test(arguments: StorageEngine.allCases)
    func atTheConnectionLimit_busyConnectionsKeepTheirSlot_andAnIdleOneMakesRoom(_ engine: StorageEngine) throws {
        let server = try TestServer(engine, ["--max-connections", "4"])
        // Heads complete (100 Continue says the server read them), bodies pending.
        let held = try (0..<4).map { _ in try server.connect() }
        for connection in held {
            try connection.send(HTTPConnection.encode("POST", "/v1/expenses", headers: [
                ("Authorization", "Bearer \(server.token)"), ("Content-Type", "application/json"),
                ("Idempotency-Key", TestServer.key()), ("Content-Length", "2"), ("Expect", "100-continue"),
            ]))
        }
        for connection in held { #expect(try connection.readResponse().status == 100) }
        let extra = try server.connect()
        #expect(extra.waitForClose(timeout: 10))
        for (index, connection) in held.enumerated() {
            try connection.send("{}")
            #expect(try connection.readResponse(method: "POST").status == 201)
            // The server begins a connection's wait for its next head when
            // the exchange completes, after the answer went out, and logs
            // the exchange right after that: waiting for the line makes the
            // waits begin in this order even when a thread is slow to run.
            try waitUntil(timeout: 10, "the access line of answer \(index + 1)") {
                server.process.accessLog.filter { $0.hasPrefix("POST /v1/expenses 201 ") }.count == index + 1
            }
        }
        // All four now wait for their next head; a newcomer takes the place
        // of the one that has waited longest, and the others stay.
        #expect(server.isHealthy)
        #expect(held[0].waitForClose(timeout: 10))
        for connection in held.dropFirst() {
            #expect(try server.request(on: connection, "GET", "/healthz", auth: .none).status == 200)
        }
    }

    @Test(arguments: StorageEngine.allCases)
    func silentClient_isDisconnectedAfterTheConnectionTimeout(_ engine: StorageEngine) throws {
        // A head deadline far away, so that only silence can close them:
        // no bound on how long the closing took is needed (or timed).
        let server = try TestServer(engine, ["--connection-timeout", "1", "--header-timeout", "3600"])
        let idle = try server.connect()
        let partial = try server.connect()
        try partial.send("GET /v1/expenses HTTP/1.1\r\nHost: x\r\nAuthor")
        #expect(idle.waitForClose(timeout: 20))
        #expect(partial.waitForClose(timeout: 20))
        #expect(server.isHealthy)
    }

    @Test(arguments: StorageEngine.allCases)
    func slowBody_isCutOffAtTheRequestTimeout(_ engine: StorageEngine) throws {
        let server = try TestServer(engine, ["--request-timeout", "1", "--connection-timeout", "5"])
        let connection = try server.connect()
        let body = Array(TestServer.lunch.utf8)
        try connection.send(HTTPConnection.encode("POST", "/v1/expenses", headers: [
            ("Authorization", "Bearer \(server.token)"), ("Content-Type", "application/json"),
            ("Idempotency-Key", TestServer.key()), ("Content-Length", "\(body.count)"),
        ]))
        // One byte every 300 ms: never silent long enough for the idle
        // timeout, but far slower than the request timeout allows.
        var closed = false
        for byte in body.prefix(40) {
            do { try connection.send([byte]) } catch { closed = true; break }
            Thread.sleep(forTimeInterval: 0.3)
        }
        #expect(closed || connection.waitForClose(timeout: 5))
        #expect(try server.scalar("SELECT count(*) FROM expenses") == 0)
        #expect(server.process.accessLog.contains { $0.hasPrefix("POST /v1/expenses 000 ") && $0.hasSuffix("closed=request-timeout") })
        #expect(server.isHealthy)
    }
}
