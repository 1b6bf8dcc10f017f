import ExpenseTestSupport
import Foundation
import Synchronization
import Testing

/// `GET /v1/expenses?since=<cursor>&limit=<n>`: the change feed.
@Suite struct ListingTests {
    private struct Page {
        let ids: [String]
        let expenses: [[String: Any]]
        let next: String
        let hasMore: Bool
    }

    private func page(_ server: TestServer, since: String? = nil, limit: Int? = nil, auth: TestServer.Auth = .alice) throws -> Page {
        var query: [String] = []
        if let since { query.append("since=\(since)") }
        if let limit { query.append("limit=\(limit)") }
        let response = try server.get("/v1/expenses" + (query.isEmpty ? "" : "?" + query.joined(separator: "&")), auth: auth)
        #expect(response.status == 200, "\(response.text)")
        let json = try #require(response.json)
        let expenses = try #require(json["expenses"] as? [[String: Any]])
        return Page(ids: expenses.compactMap { $0["transaction_id"] as? String }, expenses: expenses,
                    next: try #require(json["next_cursor"] as? String), hasMore: try #require(json["has_more"] as? Bool))
    }

    @Test(arguments: StorageEngine.allCases)
    func cursorPagingOver2500Expenses_returnsEachExactlyOnce(_ engine: StorageEngine) throws {
        let server = try TestServer(engine)
        let created = Mutex<[String]>([])
        let done = DispatchGroup()
        for worker in 0..<16 {
            done.enter()
            Thread {
                defer { done.leave() }
                guard let connection = try? server.connect() else { return }
                for i in stride(from: worker, to: 2500, by: 16) {
                    let body = #"{"merchant": "M\#(i)", "amount": "1.00", "currency": "EUR", "date": "2026-11-29"}"#
                    guard let response = try? server.request(on: connection, "POST", "/v1/expenses", headers: [
                        ("Content-Type", "application/json"), ("Idempotency-Key", TestServer.key()),
                    ], body: Array(body.utf8)), response.status == 201, let id = response.transactionID else { continue }
                    created.withLock { $0.append(id) }
                }
            }.start()
        }
        #expect(done.wait(timeout: .now() + 120) == .success)
        let all = created.withLock { $0 }
        try #require(all.count == 2500)

        var seen: [String] = []
        var cursor: String?
        var pages = 0
        while true {
            let p = try page(server, since: cursor, limit: 100)
            seen += p.ids
            pages += 1
            #expect(p.ids.count == (p.hasMore ? 100 : p.ids.count))
            cursor = p.next
            if !p.hasMore { break }
            try #require(pages < 100)
        }
        #expect(pages == 25)
        #expect(seen.count == 2500)
        #expect(Set(seen).count == 2500)
        #expect(Set(seen) == Set(all))
        // Nothing new: an empty page, the same cursor.
        let tail = try page(server, since: cursor)
        #expect(tail.ids.isEmpty)
        #expect(!tail.hasMore)
        #expect(tail.next == cursor)
        // The default page is 100, the largest 1000.
        #expect(try page(server).ids.count == 100)
        #expect(try page(server, limit: 1000).ids.count == 1000)
    }

    @Test(arguments: StorageEngine.allCases)
    func changesAndTombstones_appearInTheFeedAfterTheCursor(_ engine: StorageEngine) throws {
        let server = try TestServer(engine)
        let a = try #require(try server.create(key: TestServer.key()).transactionID)
        let b = try #require(try server.create(key: TestServer.key()).transactionID)
        let c = try #require(try server.create(key: TestServer.key()).transactionID)
        let first = try page(server)
        #expect(first.ids == [a, b, c])
        #expect(!first.hasMore)

        #expect(try server.delete(a, key: TestServer.key()).status == 200)
        #expect(try server.patch(c, key: TestServer.key(), #"{"base_version": 1, "set": {"comment": "later"}}"#).status == 200)
        let changes = try page(server, since: first.next)
        #expect(changes.ids == [a, c])
        #expect(changes.expenses[0]["deleted"] as? Bool == true)
        #expect(changes.expenses[1]["comment"] as? String == "later")
        // The full feed still lists each expense once, in its latest state, tombstones included.
        let everything = try page(server)
        #expect(everything.ids == [b, a, c])
    }

    @Test(arguments: StorageEngine.allCases)
    func theFeedIsPerUser(_ engine: StorageEngine) throws {
        let server = try TestServer(engine)
        let bob = try server.addUser("bob")
        _ = try server.create(key: TestServer.key())
        let bobs = try #require(try server.create(key: TestServer.key(), auth: .token(bob)).transactionID)
        #expect(try page(server, auth: .token(bob)).ids == [bobs])
        #expect(try page(server).ids.count == 1)
    }

    @Test(arguments: StorageEngine.allCases, ["limit=0", "limit=1001", "limit=-1", "limit=abc", "limit=1.5", "limit=", "limit=10&limit=20",
                      "since=abc", "since=c1-", "since=c1-01", "since=c2-5", "since=%ZZ", "since=c1-99999999999999999999"]) func badParameters_are400(_ engine: StorageEngine, _ query: String) throws {
        let server = try TestServer(engine)
        let response = try server.get("/v1/expenses?\(query)")
        #expect(response.status == 400, "\(query)")
        #expect(["invalid_parameter", "invalid_cursor"].contains(response.errorCode ?? ""), "\(query): \(response.text)")
        #expect(response.isJSONError)
    }

    @Test(arguments: StorageEngine.allCases)
    func emptySinceAndUnknownParameters_areIgnored(_ engine: StorageEngine) throws {
        let server = try TestServer(engine)
        _ = try server.create(key: TestServer.key())
        #expect(try page(server, since: "").ids.count == 1)
        #expect(try server.get("/v1/expenses?foo=bar&since=").status == 200)
    }
}
