import ExpenseCore
import Foundation
import Testing
@testable import ExpenseServer
@testable import ServerAPI

/// The server's parsers and policies, in process, without a socket.
@Suite struct ParsingTests {
    @Test(arguments: [
        ("\"1b4e28ba-2fa1-11d2-883f-0000f87d3b6e\"", "1b4e28ba-2fa1-11d2-883f-0000f87d3b6e"),
        ("1b4e28ba-2fa1-11d2-883f-0000f87d3b6e", "1b4e28ba-2fa1-11d2-883f-0000f87d3b6e"),
        ("  \"1B4E28BA-2FA1-11D2-883F-0000F87D3B6E\"  ", "1b4e28ba-2fa1-11d2-883f-0000f87d3b6e"),
    ])
    func idempotencyKey_acceptsQuotedBareAndAnyCase(_ header: String, _ key: String) throws {
        #expect(try IdempotencyKey.parse([header]) == key)
    }

    @Test(arguments: [[], [""], ["\"\""], ["1b4e28ba2fa111d2883f0000f87d3b6e"], ["1b4e28ba-2fa1-11d2-883f-0000f87d3b6g"],
                      ["\"1b4e28ba-2fa1-11d2-883f-0000f87d3b6e"], ["1b4e28ba-2fa1-11d2-883f-0000f87d3b6e", "1b4e28ba-2fa1-11d2-883f-0000f87d3b6e"]])
    func idempotencyKey_rejectsAnythingElse(_ headers: [String]) {
        #expect(throws: APIError.self) { try IdempotencyKey.parse(headers) }
    }

    @Test func reprDigest_findsSHA256AmongOtherMembers() throws {
        let digest = [UInt8](repeating: 7, count: 32)
        let value = ReprDigest.format(digest)
        #expect(try ReprDigest.sha256([value]) == digest)
        #expect(try ReprDigest.sha256(["sha-512=:AAAA:, \(value)"]) == digest)
        #expect(try ReprDigest.sha256(["sha-512=:AAAA:", value + ";param=1"]) == digest)
        #expect(throws: APIError.self) { try ReprDigest.sha256(["sha-512=:AAAA:"]) }
        #expect(throws: APIError.self) { try ReprDigest.sha256(["sha-256=:AAAA:"]) }
        #expect(throws: APIError.self) { try ReprDigest.sha256(["sha-256=\(Base64ForTest.zeros)"]) }
        #expect(throws: APIError.self) { try ReprDigest.sha256([value, "sha-256=:\(Base64ForTest.zeros):"]) }
    }

    @Test func cursor_roundTripsAndRejectsForgeries() throws {
        for sequence: Int64 in [0, 1, 42, 999_999_999_999] {
            #expect(try ListCursor(parsing: ListCursor(sequence: sequence).text).sequence == sequence)
        }
        for text in ["", "c1-", "c1--1", "c1-+5", "c1-0x10", "C1-5", "c1-007", "c1-5 ", "c1-99999999999999999999"] {
            #expect(throws: APIError.self, "\(text)") { try ListCursor(parsing: text) }
        }
    }

    @Test func query_isPercentDecodedAndValidated() throws {
        let target = RequestTarget("/v1/expenses?since=c1-5&limit=10&x=a%20b+c")
        #expect(target.path == "/v1/expenses")
        #expect(try target.parameter("since") == "c1-5")
        #expect(try target.parameter("x") == "a b c")
        #expect(try target.parameter("missing") == nil)
        #expect(throws: APIError.self) { try RequestTarget("/v1/expenses?since=%ff%fe").parameter("since") }
        #expect(throws: APIError.self) { try RequestTarget("/v1/expenses?a=1&a=2").parameter("a") }
    }

    @Test func routes_matchExactly() {
        #expect(Route(path: "/healthz") == .health)
        #expect(Route(path: "/v1/expenses") == .expenses)
        #expect(Route(path: "/v1/expenses/cp-1") == .expense("cp-1"))
        #expect(Route(path: "/v1/expenses/cp-1/receipt") == .receipt("cp-1"))
        for path in ["/", "/healthz/", "/v1/expenses/", "/v1/expenses//receipt", "/v1/expenses/a/b", "/v1/expenses/a/receipt/x", "/V1/expenses"] {
            #expect(Route(path: path) == nil, "\(path)")
        }
    }

    @Test func jsonBody_limitsDepthAndCanonicalizes() throws {
        #expect(try JSONBody.object(Array(#"{"a": "[[[[", "b": [{"c": []}]}"#.utf8)).count == 2)
        #expect(throws: APIError.self) { try JSONBody.object(Array((String(repeating: "[", count: 33) + String(repeating: "]", count: 33)).utf8)) }
        let a = try JSONBody.object(Array(#"{"b": 1, "a": {"y": null, "x": "\u00e9"}}"#.utf8))
        let b = try JSONBody.object(Array("{ \"a\" : { \"x\" : \"é\", \"y\" : null } , \"b\" : 1 }".utf8))
        #expect(JSONBody.canonical(a) == JSONBody.canonical(b))
        #expect(String(decoding: JSONBody.canonical(a), as: UTF8.self) == #"{"a":{"x":"é","y":null},"b":1}"#)
    }

    @Test(arguments: [
        (#"{"a": 1, "b": -0, "c": 1.5e3, "d": true, "e": null, "f": [], "g": {}}"#, true),
        (#"{"s": "\u00e9\ud83e\uddfe\n\"\\\/"}"#, true),
        (#" {} "#, true),
        (#"{"a": 01}"#, false), (#"{"a": 1.}"#, false), (#"{"a": .5}"#, false), (#"{"a": +1}"#, false),
        (#"{"a": 1e}"#, false), (#"{"a": NaN}"#, false), (#"{"a": Infinity}"#, false), (#"{"a": 1e999}"#, false),
        (#"{"a": "\ud800"}"#, false), (#"{"a": "\udc00\ud800"}"#, false), (#"{"a": "\x41"}"#, false), (#"{"a": "\u12"}"#, false),
        ("{\"a\": \"tab\there\"}", false), (#"{"a": 1, "a": 2}"#, false), (#"{"a": 1,}"#, false), (#"[1, 2,]"#, false),
        (#"{'a': 1}"#, false), (#"{a: 1}"#, false), (#"{"a" 1}"#, false), (#"{"a": tru}"#, false), (#"{} x"#, false),
        (#""#, false), (#"{"#, false), (#"{"a": "unterminated}"#, false),
    ])
    func jsonParser_acceptsExactlyRFC8259(_ text: String, _ valid: Bool) {
        let result = Result { () throws(JSONError) in try JSONParser.parse(Array(text.utf8)) }
        #expect(((try? result.get()) != nil) == valid, "\(text)")
    }

    @Test func jsonParser_readsValuesFaithfully() throws {
        let value = try JSONParser.parse(Array(#"{"i": 9007199254740993, "n": -12.5, "big": 123456789012345678901234567890, "s": "a\u0000b🧾"}"#.utf8))
        #expect(value["i"] == .integer(9_007_199_254_740_993))
        #expect(value["n"] == .number(-12.5))
        #expect(value["big"] == .number(123_456_789_012_345_678_901_234_567_890.0))
        #expect(value["s"] == .string("a\u{0}b🧾"))
        #expect(throws: JSONError.self) { try JSONParser.parse(Array(repeating: UInt8(ascii: "["), count: 33) + Array(repeating: UInt8(ascii: "]"), count: 33)) }
        #expect(throws: JSONError.self) { try JSONParser.parse([0x22, 0xC3, 0x28, 0x22]) }
    }

    @Test func jsonWriter_escapesEverythingJSONNeeds() throws {
        let tricky = "quote\" backslash\\ newline\n tab\t nul\u{0} bell\u{7} del\u{7f} é 🧾"
        var writer = JSONWriter()
        writer.beginObject()
        writer.member("s", tricky)
        writer.endObject()
        let parsed = try JSONSerialization.jsonObject(with: Data(writer.bytes)) as? [String: String]
        #expect(parsed?["s"] == tricky)
    }

    /// `expensectl --json`'s form: a member or an element a line, two
    /// spaces a level, `"name" : value` as it always was (scripts look for
    /// it), keys sorted, empty containers closed on their line; the same
    /// value when parsed back; separated from what came before it.
    @Test func prettyJSON_isIndentedSortedAndTheSameValue() throws {
        let value: JSONValue = ["b": ["x": [1, .number(2.5)], "empty": [], "none": [:]], "a": "q\"/\n", "c": .null, "d": [true, ["k": -3]]]
        let expected = """
            {
              "a" : "q\\"/\\n",
              "b" : {
                "empty" : [],
                "none" : {},
                "x" : [
                  1,
                  2.5
                ]
              },
              "c" : null,
              "d" : [
                true,
                {
                  "k" : -3
                }
              ]
            }
            """
        #expect(value.prettySerialized() == expected)
        #expect(try JSONValue.parse(Array(value.prettySerialized().utf8)) == value)
        #expect(JSONValue.array([]).prettySerialized() == "[]")
        #expect(JSONValue.string("é🧾").prettySerialized() == "\"é🧾\"")
        let parsed = try JSONSerialization.jsonObject(with: Data(value.prettySerialized().utf8)) as? [String: Any]
        #expect(parsed?.keys.sorted() == ["a", "b", "c", "d"], "Foundation's parser reads it too")
        // In a container written before it, a pretty value is one more element.
        var writer = JSONWriter()
        writer.beginArray()
        writer.pretty(["k": 1])
        writer.pretty(2)
        writer.endArray()
        #expect(String(decoding: writer.bytes, as: UTF8.self) == "[{\n  \"k\" : 1\n},2]")
    }

    @Test func bearerTokens_followRFC6750() {
        #expect(APIExchange.isToken68("esk_abc-DEF_123"))
        #expect(APIExchange.isToken68("abc=="))
        #expect(!APIExchange.isToken68(""))
        #expect(!APIExchange.isToken68("a b"))
        #expect(!APIExchange.isToken68("a=b"))
        #expect(!APIExchange.isToken68("é"))
        #expect(!APIExchange.isToken68(Substring(String(repeating: "a", count: 513))))
    }

    @Test func logText_escapesWhatCouldForgeALine() {
        #expect(AccessEntry.printable("/v1/a b\n%", limit: 100) == "/v1/a%20b%0A%25")
        #expect(AccessEntry.printable("", limit: 10) == "-")
        #expect(AccessEntry.printable(String(repeating: "a", count: 20), limit: 5) == "aaaaa...")
    }

    @Test func faults_areReproducibleAndHonourTheirProbabilities() {
        var options = FaultInjector.Options()
        #expect(FaultInjector(options).decide() == FaultInjector.Decision())
        options.dropResponse = 1
        options.seed = 99
        #expect((0..<100).allSatisfy { _ in FaultInjector(options).decide().dropResponse })
        options.dropResponse = 0.3
        let a = FaultInjector(options), b = FaultInjector(options)
        let first = (0..<1000).map { _ in a.decide() }
        #expect(first == (0..<1000).map { _ in b.decide() })
        let dropped = first.filter(\.dropResponse).count
        #expect((220...380).contains(dropped))
        #expect(!first.contains { $0.dropRequest || $0.error })
    }

    @Test func commandLine_parsesServeOptions() throws {
        let invocation = try CommandLineParser.parse([
            "serve", "--listen", "[::1]:9000", "--data-dir=/srv/data", "--receipt-max-bytes", "1024",
            "--fault-drop-response", "0.25", "--fault-seed", "7", "--connection-timeout", "5",
        ])
        guard case .serve(let c) = invocation else { Issue.record("not serve"); return }
        #expect(c.listen.description == "[::1]:9000")
        #expect(c.dataDirectory == "/srv/data")
        #expect(c.receiptMaxBytes == 1024)
        #expect(c.faults.dropResponse == 0.25)
        #expect(c.faults.seed == 7)
        #expect(c.connectionTimeoutSeconds == 5)
        #expect(c.requestTimeoutSeconds == 300)
        #expect(try CommandLineParser.parse(["user", "add", "bob", "--data-dir", "/d"]) == .userAdd(name: "bob", isAdmin: false, storage: .sqlite(dataDirectory: "/d", databasePath: nil)))
        #expect(try CommandLineParser.parse(["user", "add", "--admin", "root", "--data-dir", "/d"])
                == .userAdd(name: "root", isAdmin: true, storage: .sqlite(dataDirectory: "/d", databasePath: nil)))
        #expect(try CommandLineParser.parse(["user", "rotate", "bob", "--data-dir", "/d"])
                == .userChange(.rotate, name: "bob", storage: .sqlite(dataDirectory: "/d", databasePath: nil)))
        #expect(try CommandLineParser.parse(["export", "--format", "jsonl", "--since", "2026-01-31", "--user", "bob", "--data-dir", "/d"])
                == .export(ExportRequest(format: .jsonl, since: "2026-01-31", user: "bob"), storage: .sqlite(dataDirectory: "/d", databasePath: nil)))
        #expect(throws: UsageError.self) { try CommandLineParser.parse(["serve", "--data-dir", "/d", "--data-dir", "/e"]) }
    }
}

enum Base64ForTest {
    static let zeros = "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA="
}
