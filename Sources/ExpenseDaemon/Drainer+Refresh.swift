import Curl
import ExpenseCore
import Posix

extension Drainer {
    /// One page of `GET /v1/expenses?since=`.
    struct Page {
        let expenses: [CanonicalExpense]
        let nextCursor: String?
        let hasMore: Bool

        /// Reads a page; nil when it is not contract.md's shape.
        init?(body: [UInt8]) {
            guard let value = try? JSONValue.parse(body), case .array(let items)? = value["expenses"] else { return nil }
            let expenses = items.compactMap(CanonicalExpense.init(json:))
            guard expenses.count == items.count else { return nil }
            self.expenses = expenses
            nextCursor = value["next_cursor"]?.stringValue
            hasMore = value["has_more"]?.boolValue ?? false
        }
    }

    /// Fetches what changed on the server since the stored cursor and
    /// upserts it (tombstones included), page by page, storing the cursor
    /// with each page. Runs inside a pass, so refreshes never overlap.
    /// - Returns: why the pass must stop (unreachable, refused credentials), or nil.
    func refresh() async -> Stop? {
        state.withLock { $0.refreshRequested = false }
        var cursor = try? await store.refreshCursor()
        var fetched = 0
        for _ in 0..<10_000 where !isStopping {
            var url = baseURL + "/v1/expenses?limit=500"
            if let cursor { url += "&since=" + Self.percentEncoded(cursor) }
            var headers: [(String, String)] = []
            let (token, _, generation) = tokens.current()
            if let token { headers.append(("Authorization", "Bearer \(token)")) }
            let response: HTTPResponse
            switch await client.send(HTTPRequest(method: "GET", url: url, headers: headers,
                                                 connectTimeoutMilliseconds: configuration.connectTimeoutMilliseconds,
                                                 totalTimeoutMilliseconds: configuration.requestTimeoutMilliseconds)) {
            case .failure(let error):
                noteUnreachable("Server unreachable (\(error)); refresh and sending wait for it", reason: "\(error)")
                return .unreachable
            case .success(let r):
                response = r
            }
            markProgress()
            let now = Clock.wallMilliseconds
            if Sent.isRefusal(response.status) {
                noteAnswer { $0.answered(at: now) }
                return pauseForCredentials(refusedGeneration: generation, status: response.status) ? .credentials : nil
            }
            guard (200..<300).contains(response.status) else {
                let error = ServerError(body: response.body)
                let summary = error.summary(status: response.status)
                noteAnswer { $0.failed(Outcome.classify(status: response.status, errorCode: error.code).className, "refresh: \(summary)", at: now) }
                logger.warning("Refresh failed: server answered \(summary); trying again at the next refresh")
                state.withLock { $0.lastRefresh = Clock.monotonicNanoseconds }
                return nil
            }
            noteAnswer { $0.succeeded(at: now) }
            guard let page = Page(body: response.body) else {
                logger.warning("Refresh failed: the server's listing is not what contract.md describes; trying again at the next refresh")
                state.withLock { $0.lastRefresh = Clock.monotonicNanoseconds }
                return nil
            }
            do {
                _ = try await store.storeRefreshPage(page.expenses, cursor: page.nextCursor, now: Clock.wallMilliseconds)
            } catch {
                logger.error("Failed to store refreshed expenses: \(error)")
                return nil
            }
            fetched += page.expenses.count
            cursor = page.nextCursor ?? cursor
            if !page.hasMore || page.nextCursor == nil { break }
        }
        state.withLock { $0.lastRefresh = Clock.monotonicNanoseconds }
        if fetched > 0 {
            logger.info("Refreshed \(fetched) expense(s) from the server")
            publisher.markChanged()
        }
        return nil
    }

    /// Percent-encodes everything but RFC 3986's unreserved characters.
    static func percentEncoded(_ text: String) -> String {
        var out = ""
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
                 UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "~"):
                out.unicodeScalars.append(Unicode.Scalar(byte))
            default:
                out += "%" + String(byte, radix: 16, uppercase: true).leftPadded(2)
            }
        }
        return out
    }
}
