import Curl
import ExpenseTestSupport
import Foundation
import Synchronization
import Testing

/// The fault proxy against a fake backend on loopback that records what
/// reached it: each fate does what it says, to the backend and to the client.
@Suite struct FaultProxyTests {
    static func ok(_ request: LoopbackHTTPServer.Request) -> LoopbackHTTPServer.Reply {
        .respond(status: request.method == "POST" ? 201 : 200, headers: ["Content-Type": "application/json", "X-Backend": "yes"],
                 body: Array(#"{"path":"\#(request.path)","bytes":\#(request.body.count)}"#.utf8))
    }

    @Test func forwarded_requestsAndAnswersArriveIntact_onOneKeptAliveConnection() throws {
        let backend = try LoopbackHTTPServer(respond: Self.ok)
        let proxy = try FaultProxy(backendPort: backend.port)
        let connection = try HTTPConnection(port: proxy.port)
        let big = (0..<1_000_000).map { UInt8(truncatingIfNeeded: $0 &* 7) }
        let get = try connection.request("GET", "/api/projects/household/bills?x=1", headers: [("Authorization", "Basic aG91c2Vob2xkOmNvZGU=")])
        let post = try connection.request("POST", "/api/projects/household/bills", headers: [("Content-Type", "application/x-www-form-urlencoded")],
                                          body: Array("what=Lunch&amount=12.50".utf8))
        let put = try connection.request("PUT", "/upload", headers: [("X-Thing", "kept")], body: big)
        #expect(get.status == 200 && post.status == 201 && put.status == 200)
        #expect(post.header("X-Backend") == "yes")
        #expect(put.text == #"{"path":"/upload","bytes":1000000}"#)
        let seen = backend.requests
        #expect(seen.map(\.method) == ["GET", "POST", "PUT"])
        #expect(seen[0].path == "/api/projects/household/bills?x=1")
        #expect(seen[0].headers["authorization"] == "Basic aG91c2Vob2xkOmNvZGU=")
        #expect(seen[1].body == Array("what=Lunch&amount=12.50".utf8))
        #expect(seen[1].headers["content-type"] == "application/x-www-form-urlencoded")
        #expect(seen[2].body == big && seen[2].headers["x-thing"] == "kept")
        #expect(seen.allSatisfy { $0.headers["connection"] == "close" }, "one backend connection per request")
        #expect(proxy.log.map(\.action) == [.forwarded, .forwarded, .forwarded])
        #expect(proxy.log.map(\.connection) == [1, 1, 1], "the client's connection was kept alive")
        #expect(proxy.log.map(\.requestOnConnection) == [1, 2, 3])
        #expect(proxy.log.map(\.backendStatus) == [200, 201, 200])
    }

    @Test func chunkedRequest_reachesTheBackendWhole() throws {
        let backend = try LoopbackHTTPServer(respond: Self.ok)
        let proxy = try FaultProxy(backendPort: backend.port)
        let connection = try HTTPConnection(port: proxy.port)
        try connection.send("POST /bills HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n7;ext=1\r\n, world\r\n0\r\n\r\n")
        #expect(try connection.readResponse().status == 201)
        #expect(backend.requests.first?.body == Array("hello, world".utf8))
        #expect(backend.requests.first?.headers["content-length"] == "12")
        #expect(backend.requests.first?.headers["transfer-encoding"] == nil)
    }

    @Test(arguments: [
        "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nContent-Type: text/plain\r\n\r\n3\r\nabc\r\n2\r\nde\r\n0\r\n\r\n",
        "HTTP/1.0 200 OK\r\nContent-Type: text/plain\r\n\r\nabcde",
        "HTTP/1.1 200 OK\r\nContent-Length: 5\r\nConnection: close\r\n\r\nabcde",
    ])
    func backendAnswers_chunkedOrToClose_arePassedOnFramedByLength(_ raw: String) throws {
        let backend = try LoopbackHTTPServer { _ in .raw(Array(raw.utf8)) }
        let proxy = try FaultProxy(backendPort: backend.port)
        let connection = try HTTPConnection(port: proxy.port)
        for _ in 0..<2 {
            let answer = try connection.request("GET", "/x")
            #expect(answer.status == 200 && answer.text == "abcde")
            #expect(answer.header("Content-Length") == "5")
            #expect(answer.header("Transfer-Encoding") == nil && answer.header("Connection") == nil)
        }
        #expect(proxy.log.map(\.connection) == [1, 1])
    }

    @Test func dropAfterCommit_backendGetsTheRequest_clientGetsNoByteOfTheAnswer() throws {
        let backend = try LoopbackHTTPServer(respond: Self.ok)
        let proxy = try FaultProxy(backendPort: backend.port, odds: FaultProxy.Odds(dropAfterCommit: 1))
        let connection = try HTTPConnection(port: proxy.port)
        try connection.send(HTTPConnection.encode("POST", "/bills", body: Array("what=Lunch".utf8)))
        #expect(throws: HTTPConnectionError.self) { try connection.readResponse() }
        #expect(backend.requests.count == 1, "the backend committed it")
        #expect(proxy.log.map(\.action) == [.droppedAfterCommit])
        #expect(proxy.log.first?.backendStatus == 201)
        #expect(Self.endOfStream(connection) == 0, "closed, not reset")
    }

    @Test func resetAfterCommit_clientSeesAReset() throws {
        let backend = try LoopbackHTTPServer(respond: Self.ok)
        let proxy = try FaultProxy(backendPort: backend.port, odds: FaultProxy.Odds(resetAfterCommit: 1))
        let connection = try HTTPConnection(port: proxy.port)
        try connection.send(HTTPConnection.encode("POST", "/bills", body: Array("what=Lunch".utf8)))
        #expect(Self.endOfStream(connection) == ECONNRESET)
        #expect(backend.requests.count == 1)
        #expect(proxy.log.map(\.action) == [.resetAfterCommit])
    }

    @Test func unavailable_answers503_withoutForwarding_andKeepsTheConnection() throws {
        let backend = try LoopbackHTTPServer(respond: Self.ok)
        let proxy = try FaultProxy(backendPort: backend.port, odds: FaultProxy.Odds(unavailable: 1))
        let connection = try HTTPConnection(port: proxy.port)
        let answer = try connection.request("POST", "/bills", body: Array("what=Lunch".utf8))
        #expect(answer.status == 503)
        #expect(backend.requests.isEmpty)
        proxy.setOdds(.none)
        #expect(try connection.request("POST", "/bills", body: Array("what=Lunch".utf8)).status == 201)
        #expect(proxy.log.map(\.action) == [.unavailable, .forwarded])
        #expect(backend.requests.count == 1)
    }

    @Test func sameSeed_sameFates_andTheOddsHold() throws {
        let backend = try LoopbackHTTPServer(respond: Self.ok)
        let odds = FaultProxy.Odds(dropAfterCommit: 0.2, resetAfterCommit: 0.1, unavailable: 0.05)
        func fates(seed: UInt64) throws -> [FaultProxy.Action] {
            let proxy = try FaultProxy(backendPort: backend.port, odds: odds, seed: seed)
            for i in 0..<400 {
                // A new connection each time: a dropped one is gone.
                let connection = try HTTPConnection(port: proxy.port)
                _ = try? connection.request("POST", "/bills/\(i)", body: [1])
            }
            return proxy.log.map(\.action)
        }
        let first = try fates(seed: 42), again = try fates(seed: 42), other = try fates(seed: 43)
        #expect(first == again)
        #expect(first != other)
        let counts = Dictionary(grouping: first, by: { $0 }).mapValues(\.count)
        // 400 draws: each share within five standard deviations of its odds.
        #expect((50...110).contains(counts[.droppedAfterCommit] ?? 0), "\(counts)")
        #expect((17...63).contains(counts[.resetAfterCommit] ?? 0), "\(counts)")
        #expect((2...42).contains(counts[.unavailable] ?? 0), "\(counts)")
        // What reached the backend is exactly what the log says was forwarded.
        #expect(backend.requests.count == (first + again + other).count { $0 != .unavailable })
    }

    @Test func faultable_limitsFaultsToTheRequestsItChooses() throws {
        let backend = try LoopbackHTTPServer(respond: Self.ok)
        let proxy = try FaultProxy(backendPort: backend.port, odds: FaultProxy.Odds(unavailable: 1), faultable: { $0.method == "POST" })
        let connection = try HTTPConnection(port: proxy.port)
        #expect(try connection.request("GET", "/bills").status == 200)
        #expect(try connection.request("POST", "/bills", body: [1]).status == 503)
        #expect(proxy.log.map(\.action) == [.forwarded, .unavailable])
    }

    @Test func backendDown_answers502() throws {
        let backend = try LoopbackHTTPServer(respond: Self.ok)
        let port = backend.port
        backend.stop()
        let proxy = try FaultProxy(backendPort: port)
        let connection = try HTTPConnection(port: proxy.port)
        #expect(try connection.request("GET", "/bills").status == 502)
        #expect(proxy.log.map(\.action) == [.backendFailed])
    }

    @Test(arguments: ["GARBAGE\r\n\r\n", "GET /x HTTP/1.1\r\nno colon here\r\n\r\n", "POST /x HTTP/1.1\r\nContent-Length: -4\r\n\r\n",
                      "POST /x HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n"])
    func malformedRequest_answers400_andTheProxyCarriesOn(_ garbage: String) throws {
        let backend = try LoopbackHTTPServer(respond: Self.ok)
        let proxy = try FaultProxy(backendPort: backend.port)
        let bad = try HTTPConnection(port: proxy.port)
        try bad.send(garbage)
        #expect(try bad.readResponse().status == 400)
        #expect(backend.requests.isEmpty)
        #expect(try HTTPConnection(port: proxy.port).request("GET", "/fine").status == 200)
        #expect(proxy.log.map(\.action) == [.malformed, .forwarded])
    }

    /// What a replay-unsafe create through the proxy does: however the
    /// answers are lost, each call reached the backend at most once. The
    /// same creates sent replay-safe are sent twice by libcurl now and then.
    @Test(arguments: [false, true])
    func curlCreatesThroughTheProxy_replayUnsafeReachTheBackendAtMostOnceEach(_ isReplaySafe: Bool) async throws {
        let perCall = Mutex<[String: Int]>([:])
        let backend = try LoopbackHTTPServer { request in
            perCall.withLock { $0[String(decoding: request.body, as: UTF8.self), default: 0] += 1 }
            return Self.ok(request)
        }
        let proxy = try FaultProxy(backendPort: backend.port, odds: FaultProxy.Odds(dropAfterCommit: 0.2, resetAfterCommit: 0.1, unavailable: 0.05), seed: 7)
        let client = HTTPClient(maxConnections: 4)
        defer { client.shutdown() }
        var answered = 0
        for call in 0..<200 {
            var request = HTTPRequest(method: "POST", url: proxy.baseURL + "/bills", body: .bytes(Array("call-\(call)".utf8)))
            request.isReplaySafe = isReplaySafe
            if case .success(let response) = await client.send(request), response.status == 201 { answered += 1 }
            // A GET between creates keeps connections alive for the next one to reuse.
            _ = await client.send(HTTPRequest(method: "GET", url: proxy.baseURL + "/bills"))
        }
        let counts = perCall.withLock { $0 }.filter { $0.key.hasPrefix("call-") }
        let forwardedPosts = proxy.log.count { $0.method == "POST" && $0.action != .unavailable }
        #expect(counts.values.reduce(0, +) == forwardedPosts, "the backend saw what the proxy forwarded")
        if isReplaySafe {
            #expect(counts.values.contains { $0 > 1 }, "libcurl resent some creates by itself")
        } else {
            #expect(counts.values.allSatisfy { $0 == 1 }, "one call, at most one request: \(counts.filter { $0.value > 1 })")
            #expect(proxy.log.count { $0.method == "POST" } == 200)
            #expect(answered == proxy.log.count { $0.method == "POST" && $0.action == .forwarded })
        }
    }

    /// 0 when the peer closed the connection, its errno when it reset it.
    static func endOfStream(_ connection: HTTPConnection) -> Int32 {
        var byte: UInt8 = 0
        while true {
            let n = recv(connection.descriptor, &byte, 1, 0)
            if n == 0 { return 0 }
            if n < 0 && errno != EINTR { return errno }
        }
    }
}
