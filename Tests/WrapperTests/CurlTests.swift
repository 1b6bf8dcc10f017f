import Curl
import Digest
import ExpenseTestSupport
import Foundation
import Posix
import Synchronization
import Testing

@Suite struct CurlTests {
    @Test func get_returnsStatusHeadersAndBody() async throws {
        let server = try LoopbackHTTPServer { _ in .respond(status: 200, headers: ["X-Thing": "yes"], body: Array("{\"status\":\"ok\"}".utf8)) }
        let client = HTTPClient()
        defer { client.shutdown() }
        let response = try await client.send(HTTPRequest(method: "GET", url: server.baseURL + "/healthz")).get()
        #expect(response.status == 200)
        #expect(response.header("x-thing") == "yes")
        #expect(response.header("X-Thing") == "yes")
        #expect(String(decoding: response.body, as: UTF8.self) == "{\"status\":\"ok\"}")
        #expect(server.requests.first?.path == "/healthz")
    }

    @Test(arguments: ["POST", "PATCH", "DELETE"])
    func bodyAndHeaders_arriveIntact(_ method: String) async throws {
        let server = try LoopbackHTTPServer { _ in .respond(status: 201, headers: [:], body: []) }
        let client = HTTPClient()
        defer { client.shutdown() }
        let body = Array(#"{"merchant":"Blue Bottle","amount":"12.50"}"#.utf8)
        let response = try await client.send(HTTPRequest(method: method, url: server.baseURL + "/v1/expenses",
            headers: [("Idempotency-Key", "\"1b4e28ba-2fa1-11d2-883f-0000f87d3b6e\""), ("Content-Type", "application/json")],
            body: .bytes(body))).get()
        #expect(response.status == 201)
        let request = try #require(server.requests.first)
        #expect(request.method == method)
        #expect(request.body == body)
        #expect(request.headers["idempotency-key"] == "\"1b4e28ba-2fa1-11d2-883f-0000f87d3b6e\"")
        #expect(request.headers["expect"] == nil)
    }

    @Test func fileUpload_streamsEveryByte() async throws {
        let dir = TemporaryDirectory()
        let bytes = (0..<3_000_000).map { UInt8(truncatingIfNeeded: $0 &* 131) }
        let path = dir.at("receipt.jpg")
        _ = FileManager.default.createFile(atPath: path, contents: Data(bytes))
        let server = try LoopbackHTTPServer { _ in .respond(status: 200, headers: [:], body: []) }
        let client = HTTPClient()
        defer { client.shutdown() }
        let response = try await client.send(HTTPRequest(method: "PUT", url: server.baseURL + "/r",
            headers: [("Content-Type", "image/jpeg")], body: .file(FileDescriptor.open(path, [.readOnly]), size: Int64(bytes.count)))).get()
        #expect(response.status == 200)
        let request = try #require(server.requests.first)
        #expect(request.method == "PUT")
        #expect(request.headers["content-length"] == "3000000")
        #expect(SHA256.hash(request.body) == SHA256.hash(bytes))
    }

    @Test func closedPort_isATransportError() async throws {
        let server = try LoopbackHTTPServer { _ in .close }
        let url = server.baseURL
        server.stop()
        let client = HTTPClient()
        defer { client.shutdown() }
        let result = await client.send(HTTPRequest(method: "GET", url: url + "/healthz", connectTimeoutMilliseconds: 2000))
        guard case .failure(let error) = result else {
            Issue.record("expected a transport error")
            return
        }
        #expect(error.code == 7, "\(error)")
        #expect(!error.requestSent, "a refused connection sent nothing")
    }

    @Test func hungServer_timesOutWithinTheTotalTimeout() async throws {
        let server = try LoopbackHTTPServer { _ in .hang }
        let client = HTTPClient()
        defer { client.shutdown() }
        let result = await client.send(HTTPRequest(method: "GET", url: server.baseURL + "/x", totalTimeoutMilliseconds: 500))
        guard case .failure(let error) = result else {
            Issue.record("expected a timeout")
            return
        }
        // The server never answers: only the total timeout ends the request.
        #expect(error.isTimeout, "\(error)")
    }

    @Test func closedWithoutAnswer_isATransportError() async throws {
        let server = try LoopbackHTTPServer { _ in .close }
        let client = HTTPClient()
        defer { client.shutdown() }
        let result = await client.send(HTTPRequest(method: "POST", url: server.baseURL + "/x", body: .bytes([1, 2, 3])))
        guard case .failure(let error) = result else {
            Issue.record("expected a transport error")
            return
        }
        #expect(error.requestSent, "the request went out; the server may have acted on it")
    }

    @Test func concurrentRequests_allComplete() async throws {
        let server = try LoopbackHTTPServer { request in .respond(status: 200, headers: [:], body: Array(request.path.utf8)) }
        let client = HTTPClient(maxConnections: 4)
        defer { client.shutdown() }
        let paths = try await withThrowingTaskGroup(of: String.self) { group in
            for i in 0..<40 {
                group.addTask { String(decoding: try await client.send(HTTPRequest(method: "GET", url: server.baseURL + "/\(i)")).get().body, as: UTF8.self) }
            }
            return try await group.reduce(into: Set<String>()) { $0.insert($1) }
        }
        #expect(paths == Set((0..<40).map { "/\($0)" }))
        // A request handed over alone, with nothing else pending or in
        // flight, still wakes the client's thread (it would wait forever).
        for i in 0..<20 {
            let body = try await client.send(HTTPRequest(method: "GET", url: server.baseURL + "/alone/\(i)")).get().body
            #expect(String(decoding: body, as: UTF8.self) == "/alone/\(i)")
        }
    }

    @Test func requestsHandedOverFromACompletion_goWithoutAWakeUp() throws {
        // A completion runs on the client's thread, which wakes itself for
        // nothing: the request it hands over must be taken before that
        // thread sleeps (with nothing in flight, it would sleep for good).
        let server = try LoopbackHTTPServer { request in .respond(status: 200, headers: [:], body: Array(request.path.utf8)) }
        let client = HTTPClient(maxConnections: 1)
        defer { client.shutdown() }
        final class Chain: Sendable {
            let done = Atomic<Int>(0), wrong = Atomic<Int>(0)
        }
        let chain = Chain()
        @Sendable func send(_ i: Int) {
            client.start(HTTPRequest(method: "GET", url: server.baseURL + "/\(i)")) { result in
                if (try? result.get().body) != Array("/\(i)".utf8) { chain.wrong.add(1, ordering: .relaxed) }
                chain.done.add(1, ordering: .relaxed)
                if i < 29 { send(i + 1) }
            }
        }
        send(0)
        try waitUntil(timeout: 10, "thirty requests, each handed over by the last one's completion") { chain.done.load(ordering: .relaxed) == 30 }
        #expect(chain.wrong.load(ordering: .relaxed) == 0)
    }

    @Test func tokenNeverAppearsInErrors() async throws {
        let client = HTTPClient()
        defer { client.shutdown() }
        let token = "secret-token-\(UUID().uuidString)"
        let result = await client.send(HTTPRequest(method: "GET", url: "http://127.0.0.1:1/x", headers: [("Authorization", "Bearer \(token)")], connectTimeoutMilliseconds: 1000))
        guard case .failure(let error) = result else {
            Issue.record("expected a failure")
            return
        }
        #expect(!error.description.contains(token))
    }

    @Test func otherSchemes_areRefused() async throws {
        let client = HTTPClient()
        defer { client.shutdown() }
        let result = await client.send(HTTPRequest(method: "GET", url: "file:///etc/passwd"))
        guard case .failure = result else {
            Issue.record("file:// must not be fetched")
            return
        }
    }
}
