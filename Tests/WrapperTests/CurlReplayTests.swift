import Curl
import ExpenseTestSupport
import Foundation
import Synchronization
import Testing

/// libcurl resends a request by itself when a connection it reused closes
/// or resets without answering. Against a backend without idempotency keys
/// that is a second record the caller never hears of; `isReplaySafe = false`
/// must make one call one request.
@Suite struct CurlReplayTests {
    /// How a server drops a POST it has read (and, for a real backend, committed).
    enum Drop: String, CaseIterable, Sendable {
        case close, reset
        var reply: LoopbackHTTPServer.Reply { self == .close ? .close : .reset }
    }

    /// A server that answers every GET and drops POSTs as `drop` says
    /// (from the `answerFrom`-th POST on it answers 201), plus a client
    /// whose `idle` connections to it are open and idle, as after a drain
    /// pass's earlier requests.
    final class Counts: Sendable {
        let posts = Atomic<Int>(0), gets = Atomic<Int>(0)
    }

    struct Scene {
        let server: LoopbackHTTPServer
        let client: HTTPClient
        let counts = Counts()

        init(drop: Drop, idle: Int, answerFrom: Int = .max) async throws {
            let counts = counts
            server = try LoopbackHTTPServer { request in
                guard request.method == "POST" else {
                    // Hold every warm-up answer until all have arrived, so
                    // that each came on a connection of its own.
                    counts.gets.add(1, ordering: .relaxed)
                    try? waitUntil(timeout: 20, "\(idle) warm-up requests") { counts.gets.load(ordering: .relaxed) >= idle }
                    return .respond(status: 200, headers: [:], body: Array("ok".utf8))
                }
                let n = counts.posts.add(1, ordering: .relaxed).newValue
                return n >= answerFrom ? .respond(status: 201, headers: [:], body: Array("created".utf8)) : drop.reply
            }
            client = HTTPClient(maxConnections: idle)
            let (client, url) = (client, server.baseURL)
            try await withThrowingTaskGroup(of: Void.self) { group in
                for i in 0..<idle {
                    group.addTask { _ = try await client.send(HTTPRequest(method: "GET", url: url + "/warm/\(i)")).get() }
                }
                try await group.waitForAll()
            }
        }

        func create(isReplaySafe: Bool) async -> Result<HTTPResponse, TransportError> {
            var request = HTTPRequest(method: "POST", url: server.baseURL + "/bills", body: .bytes(Array("what=Lunch".utf8)))
            request.isReplaySafe = isReplaySafe
            return await client.send(request)
        }

        var postsReceived: Int { counts.posts.load(ordering: .relaxed) }
    }

    static let drops: [(Drop, Int)] = Drop.allCases.flatMap { drop in [1, 4].map { (drop, $0) } }

    @Test(arguments: drops)
    func replayUnsafeCreate_reachesTheServerOnce_whenAReusedConnectionDropsIt(_ drop: Drop, idle: Int) async throws {
        let scene = try await Scene(drop: drop, idle: idle)
        defer { scene.client.shutdown() }
        let result = await scene.create(isReplaySafe: false)
        #expect(scene.postsReceived == 1, "one call must be one request")
        guard case .failure(let error) = result else {
            Issue.record("a dropped answer must be a transport error, got \(result)")
            return
        }
        #expect(error.requestSent, "the request went out; the server may have committed it")
    }

    @Test func replayUnsafeCreate_reportsTheDrop_notALaterAnswer() async throws {
        // The server would answer a second attempt: without the option the
        // caller sees that 201 and never learns that two records exist.
        let scene = try await Scene(drop: .close, idle: 1, answerFrom: 2)
        defer { scene.client.shutdown() }
        let result = await scene.create(isReplaySafe: false)
        #expect(scene.postsReceived == 1)
        #expect((try? result.get()) == nil, "the only attempt had no answer")
    }

    /// The behaviour the option exists for, as libcurl 7.88.1 has it: a
    /// replay-safe request dropped on a reused connection is sent again,
    /// once per idle connection it can reuse and once more on a new one,
    /// and the call reports the last attempt. If libcurl stops doing this,
    /// this test says so and docs/backends.md needs updating.
    @Test(arguments: drops)
    func replaySafeRequest_isResentByLibcurl_whenAReusedConnectionDropsIt(_ drop: Drop, idle: Int) async throws {
        let scene = try await Scene(drop: drop, idle: idle)
        defer { scene.client.shutdown() }
        _ = await scene.create(isReplaySafe: true)
        #expect(scene.postsReceived == idle + 1)
    }

    @Test func replaySafeRequest_answeredOnTheSecondAttempt_hidesTheFirst() async throws {
        let scene = try await Scene(drop: .close, idle: 1, answerFrom: 2)
        defer { scene.client.shutdown() }
        let response = try await scene.create(isReplaySafe: true).get()
        #expect(response.status == 201)
        #expect(scene.postsReceived == 2, "two creates behind one 201")
    }

    @Test func replayUnsafeRequests_stillWorkOnAServerThatAnswers() async throws {
        let scene = try await Scene(drop: .close, idle: 2, answerFrom: 1)
        defer { scene.client.shutdown() }
        for _ in 0..<5 {
            #expect(try await scene.create(isReplaySafe: false).get().status == 201)
        }
        #expect(scene.postsReceived == 5)
        // Connections opened for them go back to the pool for other requests.
        let get = try await scene.client.send(HTTPRequest(method: "GET", url: scene.server.baseURL + "/after")).get()
        #expect(get.status == 200)
    }
}
