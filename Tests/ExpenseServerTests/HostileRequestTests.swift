import ExpenseTestSupport
import Foundation
import Testing

/// Hostile and broken input, much of it as raw bytes on a socket: each gets
/// the right answer, and the server stays healthy and writes nothing.
@Suite struct HostileRequestTests {
    enum Expected: CustomStringConvertible {
        /// A contract error body with this status and code (any of `codes`).
        case error(Int, [String])
        /// libmicrohttpd answers before the request reaches the API (its own
        /// HTML body), with one of these statuses, and closes.
        case httpLayer(Set<Int>)
        /// The connection is closed without an answer.
        case closed
        /// The web interface's answer to a browser that is not signed in:
        /// `303` to the sign-in page.
        case signIn

        var description: String {
            switch self {
            case .error(let status, let codes): "\(status) \(codes.joined(separator: "|"))"
            case .httpLayer(let statuses): "HTTP layer \(statuses.sorted())"
            case .closed: "closed"
            case .signIn: "303 to /sign-in"
            }
        }
    }

    struct Case: Sendable {
        let name: String
        let request: @Sendable (_ token: String, _ id: String) -> [UInt8]
        let expected: Expected
    }

    /// `text` with `{token}` and `{id}` replaced: braces are in neither a
    /// token (base64url) nor a transaction id, so neither replacement can
    /// touch what the other put in.
    static func raw(_ text: String) -> @Sendable (String, String) -> [UInt8] {
        { token, id in Array(text.replacingOccurrences(of: "{token}", with: token).replacingOccurrences(of: "{id}", with: id).utf8) }
    }

    /// A request with a valid token and key, and `headers`/`body` as given.
    static func api(_ method: String, _ path: String, key: Bool = true, contentType: String? = "application/json",
                    headers: [(String, String)] = [], body: [UInt8]? = nil) -> @Sendable (String, String) -> [UInt8] {
        let extra = headers
        return { token, id in
            var all = [("Authorization", "Bearer \(token)")]
            if key { all.append(("Idempotency-Key", TestServer.key())) }
            if let contentType { all.append(("Content-Type", contentType)) }
            all += extra
            return HTTPConnection.encode(method, path.replacingOccurrences(of: "{id}", with: id), headers: all, body: body)
        }
    }

    static func create(_ json: String) -> @Sendable (String, String) -> [UInt8] {
        api("POST", "/v1/expenses", body: Array(json.utf8))
    }

    static func create(bytes: [UInt8]) -> @Sendable (String, String) -> [UInt8] {
        api("POST", "/v1/expenses", body: bytes)
    }

    static let cases: [Case] = [
        // Routing, methods, authentication.
        Case(name: "unknown path", request: api("GET", "/v2/expenses"), expected: .error(404, ["not_found"])),
        Case(name: "trailing slash", request: api("GET", "/v1/expenses/"), expected: .error(404, ["not_found"])),
        Case(name: "path traversal", request: api("GET", "/v1/expenses/..%2F..%2Fetc%2Fpasswd"), expected: .error(404, ["expense_not_found"])),
        Case(name: "malformed transaction id", request: api("GET", "/v1/expenses/cp-XYZ"), expected: .error(404, ["expense_not_found"])),
        Case(name: "unknown method", request: api("BREW", "/v1/expenses"), expected: .error(405, ["method_not_allowed"])),
        Case(name: "lowercase method", request: raw("get /healthz HTTP/1.1\r\nHost: x\r\n\r\n"), expected: .error(405, ["method_not_allowed"])),
        Case(name: "DELETE on /healthz", request: raw("DELETE /healthz HTTP/1.1\r\nHost: x\r\n\r\n"), expected: .error(405, ["method_not_allowed"])),
        Case(name: "PUT on a collection", request: api("PUT", "/v1/expenses"), expected: .error(405, ["method_not_allowed"])),
        Case(name: "no token", request: raw("GET /v1/expenses HTTP/1.1\r\nHost: x\r\n\r\n"), expected: .error(401, ["unauthorized"])),
        // Outside /v1/, a request without a token is a browser's: the web interface's.
        Case(name: "unknown path without token", request: raw("GET /admin HTTP/1.1\r\nHost: x\r\n\r\n"), expected: .signIn),
        Case(name: "unknown path with a bad token", request: raw("GET /admin HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer nope\r\n\r\n"),
             expected: .error(401, ["unauthorized"])),
        Case(name: "wrong token", request: raw("GET /v1/expenses HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer esk_not-a-real-token\r\n\r\n"),
             expected: .error(401, ["unauthorized"])),
        Case(name: "Basic scheme", request: raw("GET /v1/expenses HTTP/1.1\r\nHost: x\r\nAuthorization: Basic YWxpY2U6cHc=\r\n\r\n"),
             expected: .error(401, ["unauthorized"])),
        Case(name: "token with spaces", request: raw("GET /v1/expenses HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer a b c\r\n\r\n"),
             expected: .error(401, ["unauthorized"])),
        Case(name: "two Authorization headers",
             request: raw("GET /v1/expenses HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {token}\r\nAuthorization: Bearer {token}\r\n\r\n"),
             expected: .error(401, ["unauthorized"])),
        Case(name: "HTTP/1.1 without Host", request: raw("GET /healthz HTTP/1.1\r\n\r\n"), expected: .error(400, ["invalid_request"])),
        // Idempotency keys.
        Case(name: "create without key", request: api("POST", "/v1/expenses", key: false, body: Array("{}".utf8)),
             expected: .error(400, ["idempotency_key_required"])),
        Case(name: "two keys", request: api("POST", "/v1/expenses", headers: [("Idempotency-Key", TestServer.key())], body: Array("{}".utf8)),
             expected: .error(400, ["idempotency_key_required"])),
        // Bodies.
        Case(name: "empty body", request: create(""), expected: .error(400, ["invalid_json"])),
        Case(name: "truncated JSON", request: create(#"{"merchant": "#), expected: .error(400, ["invalid_json"])),
        Case(name: "JSON null", request: create("null"), expected: .error(400, ["invalid_json"])),
        Case(name: "JSON array", request: create("[1, 2, 3]"), expected: .error(400, ["invalid_json"])),
        Case(name: "trailing garbage", request: create("{} {}"), expected: .error(400, ["invalid_json"])),
        Case(name: "invalid UTF-8", request: create(bytes: Array(#"{"merchant": ""#.utf8) + [0xC3, 0x28, 0xFF] + Array(#""}"#.utf8)),
             expected: .error(400, ["invalid_json"])),
        Case(name: "lone surrogate escape", request: create(#"{"merchant": "\ud800"}"#), expected: .error(400, ["invalid_json", "invalid_field"])),
        Case(name: "nesting 10 000 deep", request: create(String(repeating: "[", count: 10_000)), expected: .error(400, ["invalid_json"])),
        Case(name: "huge exponent", request: create(#"{"device_seq": 1e999999}"#), expected: .error(400, ["invalid_json", "invalid_field"])),
        Case(name: "huge integer", request: create(#"{"device_seq": 123456789012345678901234567890}"#),
             expected: .error(400, ["invalid_json", "invalid_field"])),
        Case(name: "negative sequence", request: create(#"{"device_seq": -1}"#), expected: .error(400, ["invalid_field"])),
        Case(name: "amount as a number", request: create(#"{"amount": 12.5, "currency": "EUR"}"#), expected: .error(400, ["invalid_field"])),
        Case(name: "amount with three decimals", request: create(#"{"amount": "12.505", "currency": "EUR"}"#), expected: .error(400, ["invalid_field"])),
        Case(name: "amount in exponent form", request: create(#"{"amount": "1e3", "currency": "EUR"}"#), expected: .error(400, ["invalid_field"])),
        Case(name: "amount without currency", request: create(#"{"amount": "12.50"}"#), expected: .error(400, ["invalid_field"])),
        Case(name: "unknown currency", request: create(#"{"amount": "1.00", "currency": "XYZ"}"#), expected: .error(400, ["invalid_field"])),
        Case(name: "impossible date", request: create(#"{"date": "2026-02-30"}"#), expected: .error(400, ["invalid_field"])),
        Case(name: "control character", request: create(#"{"merchant": "A\u0007B"}"#), expected: .error(400, ["invalid_field"])),
        Case(name: "merchant too long", request: create(#"{"merchant": "\#(String(repeating: "x", count: 201))"}"#),
             expected: .error(400, ["invalid_field"])),
        Case(name: "merchant as object", request: create(#"{"merchant": {"name": "x"}}"#), expected: .error(400, ["invalid_field"])),
        Case(name: "bad device timestamp", request: create(#"{"created_at_device": "yesterday"}"#), expected: .error(400, ["invalid_field"])),
        Case(name: "form body", request: api("POST", "/v1/expenses", contentType: "application/x-www-form-urlencoded", body: Array("a=b".utf8)),
             expected: .error(415, ["unsupported_media_type"])),
        Case(name: "Latin-1 JSON", request: api("POST", "/v1/expenses", contentType: "application/json; charset=iso-8859-1", body: Array("{}".utf8)),
             expected: .error(415, ["unsupported_media_type"])),
        Case(name: "announced body over the limit", request: api("POST", "/v1/expenses", headers: [("Content-Length", "70000")]),
             expected: .error(413, ["payload_too_large"])),
        Case(name: "chunked body over the limit", request: { token, id in
            var bytes = api("POST", "/v1/expenses", headers: [("Transfer-Encoding", "chunked")])(token, id)
            for _ in 0..<20 { bytes += Array("1000\r\n".utf8) + Array(repeating: 0x20, count: 4096) + Array("\r\n".utf8) }
            return bytes + Array("0\r\n\r\n".utf8)
        }, expected: .error(413, ["payload_too_large"])),
        // Query strings.
        Case(name: "bad percent escape", request: api("GET", "/v1/expenses?since=%G1"), expected: .error(400, ["invalid_parameter"])),
        Case(name: "forged cursor", request: api("GET", "/v1/expenses?since=c1-1;DROP%20TABLE"), expected: .error(400, ["invalid_cursor"])),
        Case(name: "limit out of range", request: api("GET", "/v1/expenses?limit=100000"), expected: .error(400, ["invalid_parameter"])),
        // Receipts.
        Case(name: "receipt without digest", request: api("PUT", "/v1/expenses/{id}/receipt", contentType: "image/png", body: TestServer.png()),
             expected: .error(400, ["digest_required"])),
        Case(name: "receipt as text", request: api("PUT", "/v1/expenses/{id}/receipt", contentType: "text/plain", body: Array("hi".utf8)),
             expected: .error(415, ["unsupported_media_type"])),
        Case(name: "PATCH with unknown field", request: api("PATCH", "/v1/expenses/{id}", body: Array(#"{"base_version":1,"set":{"owner":"me"}}"#.utf8)),
             expected: .error(400, ["invalid_field"])),
        // Malformed HTTP, answered by libmicrohttpd itself.
        Case(name: "binary garbage", request: { _, _ in (0..<1024).map { UInt8(truncatingIfNeeded: $0 &* 7) } }, expected: .httpLayer([400])),
        Case(name: "bare request line", request: raw("HELLO\r\n\r\n"), expected: .closed),
        Case(name: "header without colon", request: raw("GET /healthz HTTP/1.1\r\nHost: x\r\nJunk\r\n\r\n"), expected: .httpLayer([400])),
        Case(name: "Content-Length not a number", request: raw("POST /v1/expenses HTTP/1.1\r\nHost: x\r\nContent-Length: abc\r\n\r\n"),
             expected: .httpLayer([400])),
        Case(name: "Content-Length astronomic", request: raw("POST /v1/expenses HTTP/1.1\r\nHost: x\r\nContent-Length: 99999999999999999999999\r\n\r\n"),
             expected: .httpLayer([413])),
        Case(name: "broken chunk size", request: raw("POST /v1/expenses HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {token}\r\nIdempotency-Key: 1b4e28ba-2fa1-11d2-883f-0000f87d3b6e\r\nTransfer-Encoding: chunked\r\n\r\nZZ\r\nab\r\n0\r\n\r\n"),
             expected: .httpLayer([400])),
        // The head is answered before the body is read (libmicrohttpd calls
        // the handler once the headers are in, always before it parses a
        // body), so a request refused by its headers gets that answer
        // however its broken body arrives, and the connection closes.
        Case(name: "broken chunk size without token", request: raw("POST /v1/expenses HTTP/1.1\r\nHost: x\r\nIdempotency-Key: 1b4e28ba-2fa1-11d2-883f-0000f87d3b6e\r\nTransfer-Encoding: chunked\r\n\r\nZZ\r\nab\r\n0\r\n\r\n"),
             expected: .error(401, ["unauthorized"])),
        Case(name: "header section of 40 KiB", request: raw("GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: \(String(repeating: "a", count: 40_000))\r\n\r\n"),
             expected: .httpLayer([431])),
        Case(name: "URI of 40 KiB", request: raw("GET /\(String(repeating: "a", count: 40_000)) HTTP/1.1\r\nHost: x\r\n\r\n"),
             expected: .httpLayer([414, 431])),
        Case(name: "HTTP/2 preface", request: raw("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"), expected: .httpLayer([505])),
        Case(name: "HTTP/3.0 version", request: raw("GET /healthz HTTP/3.0\r\nHost: x\r\n\r\n"), expected: .httpLayer([505])),
    ]

    @Test(arguments: StorageEngine.allCases)
    func eachHostileRequest_getsTheRightAnswer_andTheServerStaysHealthy(_ engine: StorageEngine) throws {
        #expect(Self.cases.count >= 30)
        let server = try TestServer(engine, ["--connection-timeout", "5"])
        let id = try #require(try server.create(key: TestServer.key()).transactionID)
        let before = try server.scalar("SELECT count(*) FROM expenses")
        for hostile in Self.cases {
            let connection = try server.connect(timeout: 10)
            do {
                try connection.send(hostile.request(server.token, id))
            } catch HTTPConnectionError.closed {
                // The server may close while a long request is still arriving.
            }
            switch hostile.expected {
            case .error(let status, let codes):
                let response = try connection.readResponse()
                #expect(response.status == status, "\(hostile.name): got \(response.status) \(response.text)")
                #expect(codes.contains(response.errorCode ?? "none"), "\(hostile.name): \(response.text)")
                #expect(response.isJSONError, "\(hostile.name): \(response.headers) \(response.text)")
                if status == 405 { #expect(response.header("Allow") != nil, "\(hostile.name)") }
                if status == 401 { #expect(!response.text.contains(server.token)) }
            case .httpLayer(let statuses):
                let response = try connection.readResponse()
                #expect(statuses.contains(response.status), "\(hostile.name): got \(response.status)")
                #expect(connection.waitForClose(timeout: 5), "\(hostile.name): still open")
            case .closed:
                #expect(connection.waitForClose(timeout: 5), "\(hostile.name): still open")
            case .signIn:
                let response = try connection.readResponse()
                #expect(response.status == 303 && response.header("Location") == "/sign-in", "\(hostile.name): got \(response.status)")
            }
            #expect(server.isHealthy, "after \(hostile.name)")
        }
        // No hostile request wrote anything.
        #expect(try server.scalar("SELECT count(*) FROM expenses") == before)
        #expect(try server.scalar("SELECT version FROM expenses") == 1)
        #expect(try server.scalar("SELECT count(*) FROM idempotency_keys") == 1)
        #expect(server.stagedUploads.isEmpty)
        #expect(try server.storedReceiptCount() == 0)
        // The token never reached the log.
        #expect(!server.process.child.standardError.contains(server.token))
    }

    /// The cases are built from templates with the token and an expense's
    /// id put in; what is put in must arrive as it is. (A token is random
    /// base64url, so it can hold any two letters: a placeholder it may
    /// contain would be replaced inside it, and the request would carry a
    /// wrong token about once in a hundred runs.)
    @Test func everyCase_carriesTheTokenAndTheIDAsGiven() {
        let token = "esk_aIDbTOKENcIDd-_x"
        let id = "cp-0123456789abcdefID"
        for hostile in Self.cases {
            let text = String(decoding: hostile.request(token, id), as: UTF8.self)
            let other = String(decoding: hostile.request("esk_other", "cp-other"), as: UTF8.self)
            guard text != other else { continue }
            let sent = text.count(of: "Bearer \(token)\r\n") + text.count(of: "/\(id)")
            let sentOther = other.count(of: "Bearer esk_other\r\n") + other.count(of: "/cp-other")
            #expect(sent > 0 && sent == sentOther, "\(hostile.name): \(text.prefix(200))")
        }
    }
}

extension String {
    func count(of needle: String) -> Int { components(separatedBy: needle).count - 1 }
}
