import Digest
import ExpenseTestSupport
import Foundation
import Glibc
import Testing

/// Resumable receipt uploads (contract.md, "Resumable uploads"), on both
/// engines: creation, offset retrieval, appends, completion, cancellation,
/// expiry, and what a hostile or careless client gets.
@Suite struct ResumableUploadTests {
    /// An expense of alice's, and a receipt for it.
    private struct Fixture {
        let server: TestServer
        let id: String
        let bytes: [UInt8]
        let key = TestServer.key()

        init(_ engine: StorageEngine, size: Int = 600_000, _ arguments: [String] = []) throws {
            server = try TestServer(engine, arguments)
            id = try #require(try server.create(key: TestServer.key()).transactionID)
            bytes = TestServer.png(size, seed: 5)
        }

        func create(complete: Bool = false, length: Int? = nil, body: [UInt8] = [], key: String? = nil,
                    digest: String? = nil, auth: TestServer.Auth = .alice) throws -> HTTPMessage {
            var headers = [("Content-Type", "image/png"), ("Idempotency-Key", "\"\(key ?? self.key)\""),
                           ("Repr-Digest", digest ?? TestServer.digest(of: bytes)),
                           ("Upload-Complete", complete ? "?1" : "?0")]
            headers.append(("Upload-Length", String(length ?? bytes.count)))
            return try server.request("POST", "/v1/expenses/\(id)/receipt", headers: headers, body: body, auth: auth)
        }

        /// A new upload's path.
        func location() throws -> String {
            let created = try create()
            #expect(created.status == 201)
            return try #require(created.header("Location"))
        }

        func append(_ path: String, offset: Int, _ body: ArraySlice<UInt8>, complete: Bool,
                    extra: [(String, String)] = [], auth: TestServer.Auth = .alice) throws -> HTTPMessage {
            try server.request("PATCH", path, headers: [
                ("Content-Type", "application/partial-upload"), ("Upload-Offset", String(offset)),
                ("Upload-Complete", complete ? "?1" : "?0"),
            ] + extra, body: Array(body), auth: auth)
        }

        func offset(_ path: String, auth: TestServer.Auth = .alice) throws -> Int? {
            let head = try server.request("HEAD", path, auth: auth)
            guard head.status == 204 else { return nil }
            #expect(head.header("Cache-Control") == "no-store")
            #expect(head.header("Upload-Length") == String(bytes.count))
            return head.header("Upload-Offset").flatMap { Int($0) }
        }

        /// Sends an append's head and `sent` bytes of its body, then closes
        /// the connection (a link that drops), and waits until the server
        /// ended that request: it logs it once it kept the bytes and let go
        /// of the upload. (The new offset shows a moment before the upload
        /// is let go; an append in that moment is `409 request_in_progress`.)
        func cutAppend(_ path: String, offset: Int, sent: Int) throws {
            func appendsLogged() -> Int { server.process.accessLog.count { $0.hasPrefix("PATCH \(path) ") } }
            let before = appendsLogged()
            do {
                // The connection closes as it goes out of scope.
                let connection = try server.connect()
                try connection.send(HTTPConnection.encode("PATCH", path, headers: [
                    ("Authorization", "Bearer \(server.token)"), ("Content-Type", "application/partial-upload"),
                    ("Upload-Offset", String(offset)), ("Upload-Complete", "?1"),
                    ("Content-Length", String(bytes.count - offset)),
                ]))
                try connection.send(Array(bytes[offset..<(offset + sent)]))
            }
            try waitUntil(timeout: 30, "the server ends the cut append") { appendsLogged() > before }
            #expect(try self.offset(path) == offset + sent, "the server keeps the \(sent) bytes of the cut append")
        }

        func uploads() throws -> Int64 { try server.scalar("SELECT count(*) FROM uploads") ?? -1 }
        func parts() throws -> Int64 { try server.scalar("SELECT count(*) FROM upload_parts") ?? -1 }

        /// The expense's receipt is `bytes`, and nothing of the upload is left.
        func expectAttached() throws {
            let get = try server.get("/v1/expenses/\(id)/receipt")
            #expect(get.status == 200)
            #expect(get.body == bytes)
            #expect(try uploads() == 0)
            #expect(try parts() == 0)
            #expect(try server.storedReceiptCount() == 1)
            #expect(server.stagedUploads.isEmpty)
        }
    }

    @Test(arguments: StorageEngine.allCases)
    func appendsInParts_attachTheReceiptByteIdentical_andLeaveNothingBehind(_ engine: StorageEngine) throws {
        let f = try Fixture(engine, size: 2_500_000)
        let created = try f.create()
        #expect(created.status == 201)
        #expect(created.header("Upload-Offset") == "0")
        #expect(created.header("Upload-Limit")?.contains("max-size=26214400") == true)
        let path = try #require(created.header("Location"))
        #expect(path.hasPrefix("/v1/uploads/"))

        let first = try f.append(path, offset: 0, f.bytes[0..<1_000_000], complete: false)
        #expect(first.status == 204)
        #expect(first.header("Upload-Offset") == "1000000")
        #expect(try f.offset(path) == 1_000_000)
        #expect(try f.append(path, offset: 1_000_000, f.bytes[1_000_000..<1_000_001], complete: false).status == 204)
        let last = try f.append(path, offset: 1_000_001, f.bytes[1_000_001...], complete: true)
        #expect(last.status == 200)
        #expect(last.expense["receipt_url"] as? String == "/v1/expenses/\(f.id)/receipt")
        #expect(last.expense["version"] as? Int == 2)
        try f.expectAttached()
        // The upload is gone: its path answers 404, its creation again is a replay.
        #expect(try f.server.request("HEAD", path).status == 404)
        let again = try f.create()
        #expect(again.status == 200)
        #expect(again.isReplay)
        #expect(again.expense["version"] as? Int == 2)
        // A PUT of the same bytes with the same key is the same operation.
        #expect(try f.server.putReceipt(f.id, key: f.key, bytes: f.bytes).isReplay)
    }

    @Test(arguments: StorageEngine.allCases)
    func cutAppends_keepWhatArrived_andTheRestCompletesIt(_ engine: StorageEngine) throws {
        let f = try Fixture(engine, size: 900_000)
        let path = try f.location()
        try f.cutAppend(path, offset: 0, sent: 300_000)
        try f.cutAppend(path, offset: 300_000, sent: 1)
        try f.cutAppend(path, offset: 300_001, sent: 400_000)
        #expect(try f.append(path, offset: 700_001, f.bytes[700_001...], complete: true).status == 200)
        try f.expectAttached()
    }

    @Test(arguments: StorageEngine.allCases)
    func creationWithTheWholeBody_isAPut_andARepeatedCreationIsTheSameUpload(_ engine: StorageEngine) throws {
        let f = try Fixture(engine)
        let created = try f.create()
        let repeated = try f.create()
        #expect(repeated.status == 201)
        #expect(repeated.isReplay)
        #expect(repeated.header("Location") == created.header("Location"))
        #expect(try f.uploads() == 1)

        let other = try Fixture(engine)
        let whole = try other.create(complete: true, body: other.bytes)
        #expect(whole.status == 200)
        try other.expectAttached()
    }

    @Test(arguments: StorageEngine.allCases)
    func aMismatchedOffset_is409WithTheServersOffset_andChangesNothing(_ engine: StorageEngine) throws {
        let f = try Fixture(engine)
        let path = try f.location()
        #expect(try f.append(path, offset: 0, f.bytes[0..<1000], complete: false).status == 204)
        for offset in [0, 999, 1001, 500_000] {
            let wrong = try f.append(path, offset: offset, f.bytes[offset..<(offset + 10)], complete: false)
            #expect(wrong.status == 409)
            #expect(wrong.errorCode == "mismatching_upload_offset")
            #expect(wrong.header("Upload-Offset") == "1000")
            #expect(wrong.json?["error"].flatMap { ($0 as? [String: Any])?["expected_offset"] as? Int } == 1000)
        }
        #expect(try f.offset(path) == 1000)
        #expect(try f.append(path, offset: 1000, f.bytes[1000...], complete: true).status == 200)
        try f.expectAttached()
    }

    @Test(arguments: StorageEngine.allCases)
    func bytesPastTheDeclaredLength_orACompletionShortOfIt_are400(_ engine: StorageEngine) throws {
        let f = try Fixture(engine, size: 10_000)
        let path = try f.location()
        let past = try f.append(path, offset: 0, f.bytes[...] + [0x41], complete: false)
        #expect(past.status == 400)
        #expect(past.errorCode == "inconsistent_upload_length")
        let short = try f.append(path, offset: 0, f.bytes[0..<5000], complete: true)
        #expect(short.errorCode == "inconsistent_upload_length")
        let otherLength = try f.append(path, offset: 0, f.bytes[0..<5000], complete: false, extra: [("Upload-Length", "20000")])
        #expect(otherLength.errorCode == "inconsistent_upload_length")
        #expect(try f.offset(path) == 0)
        #expect(try f.parts() == 0)
        // A creation longer than the receipt limit is 413 before any byte.
        let big = try f.create(length: 26_214_401, key: TestServer.key())
        #expect(big.status == 413)
        #expect(big.errorCode == "payload_too_large")
        #expect(try f.uploads() == 1)
    }

    @Test(arguments: StorageEngine.allCases)
    func wrongBytesAtCompletion_areRefusedAsAPutsAre_andTheUploadGoes(_ engine: StorageEngine) throws {
        let f = try Fixture(engine, size: 50_000)
        let path = try f.location()
        var tampered = f.bytes
        tampered[40_000] ^= 0xFF
        #expect(try f.append(path, offset: 0, tampered[0..<20_000], complete: false).status == 204)
        let done = try f.append(path, offset: 20_000, tampered[20_000...], complete: true)
        #expect(done.status == 400)
        #expect(done.errorCode == "digest_mismatch")
        #expect(try f.uploads() == 0)
        #expect(try f.parts() == 0)
        #expect(try f.server.storedReceiptCount() == 0)
        #expect(f.server.stagedUploads.isEmpty)

        // Bytes that are not the declared type: 415, as for a PUT.
        let jpeg = try Fixture(engine, size: 1000)
        let created = try jpeg.server.request("POST", "/v1/expenses/\(jpeg.id)/receipt", headers: [
            ("Content-Type", "image/jpeg"), ("Idempotency-Key", "\"\(jpeg.key)\""),
            ("Repr-Digest", TestServer.digest(of: jpeg.bytes)), ("Upload-Complete", "?0"), ("Upload-Length", String(jpeg.bytes.count)),
        ], body: [])
        let location = try #require(created.header("Location"))
        let typed = try jpeg.append(location, offset: 0, jpeg.bytes[...], complete: true)
        #expect(typed.status == 415)
        #expect(try jpeg.uploads() == 0)
    }

    @Test(arguments: StorageEngine.allCases)
    func anotherUsersUpload_isNotFound_forEveryMethod_andStaysIntact(_ engine: StorageEngine) throws {
        let f = try Fixture(engine)
        let path = try f.location()
        #expect(try f.append(path, offset: 0, f.bytes[0..<100], complete: false).status == 204)
        let bob = TestServer.Auth.token(try f.server.addUser("bob"))
        #expect(try f.server.request("HEAD", path, auth: bob).status == 404)
        let patch = try f.append(path, offset: 100, f.bytes[100..<200], complete: false, auth: bob)
        #expect(patch.status == 404)
        #expect(patch.errorCode == "upload_not_found")
        #expect(try f.server.request("DELETE", path, auth: bob).status == 404)
        // Bob cannot create one on alice's expense either.
        #expect(try f.create(key: TestServer.key(), auth: bob).errorCode == "expense_not_found")
        #expect(try f.offset(path) == 100)
        for garbage in ["/v1/uploads/zz", "/v1/uploads/" + String(repeating: "0", count: 32), path.uppercased(), path + "/x"] {
            #expect(try f.server.request("HEAD", garbage).status == 404)
        }
        #expect(try f.server.request("GET", path).status == 405)
    }

    @Test(arguments: StorageEngine.allCases)
    func twoAppendsAtOnce_theSecondIs409_andTheFirstCompletes(_ engine: StorageEngine) throws {
        let f = try Fixture(engine, size: 200_000)
        let path = try f.location()
        func startFirst() throws -> HTTPConnection {
            let first = try f.server.connect()
            try first.send(HTTPConnection.encode("PATCH", path, headers: [
                ("Authorization", "Bearer \(f.server.token)"), ("Content-Type", "application/partial-upload"),
                ("Upload-Offset", "0"), ("Upload-Complete", "?1"), ("Content-Length", String(f.bytes.count)),
            ]))
            // Refused at its head, it may be closed before its body is sent.
            try? first.send(Array(f.bytes[0..<50_000]))
            return first
        }
        var first = try startFirst()
        // Once the server has the first's head, the first holds the upload
        // until it ends, whenever its bytes arrive. An empty append changes
        // nothing: it goes through only while the first is not yet there.
        // It holds the upload too while it is answered: a first that meets
        // it is refused in its turn (it is the second of two then), and
        // another first is sent.
        try waitUntil(timeout: 30, "the second append is refused as in progress") {
            if first.hasAnswered { first = try startFirst() }
            let second = try f.append(path, offset: 0, [], complete: false)
            #expect(second.status == 409 || second.status == 204, "status \(second.status)")
            return second.errorCode == "request_in_progress"
        }
        let late = try f.append(path, offset: 0, f.bytes[0..<10], complete: false)
        #expect(late.errorCode == "request_in_progress")
        try first.send(Array(f.bytes[50_000...]))
        let answer = try first.readResponse(method: "PATCH")
        #expect(answer.status == 200)
        try f.expectAttached()
    }

    @Test(arguments: StorageEngine.allCases)
    func cancellation_removesTheUploadAndItsBytes(_ engine: StorageEngine) throws {
        let f = try Fixture(engine)
        let path = try f.location()
        #expect(try f.append(path, offset: 0, f.bytes[0..<300_000], complete: false).status == 204)
        #expect(try f.parts() > 0)
        #expect(try f.server.request("DELETE", path).status == 204)
        #expect(try f.server.request("HEAD", path).status == 404)
        #expect(try f.append(path, offset: 300_000, f.bytes[300_000...], complete: true).status == 404)
        #expect(try f.uploads() == 0)
        #expect(try f.parts() == 0)
        #expect(try f.server.request("DELETE", path).status == 404)
    }

    @Test(arguments: StorageEngine.allCases)
    func anExpiredUpload_isNotFound_andItsBytesAreRemoved(_ engine: StorageEngine) throws {
        let f = try Fixture(engine, ["--upload-expiry", "5"])
        let path = try f.location()
        #expect(try f.append(path, offset: 0, f.bytes[0..<1000], complete: false).status == 204)
        try waitUntil(timeout: 30, "the upload expires") { try f.server.request("HEAD", path).status == 404 }
        #expect(try f.append(path, offset: 1000, f.bytes[1000...], complete: true).errorCode == "upload_not_found")
        #expect(try f.uploads() == 0)
        #expect(try f.parts() == 0)
        // Its creation again starts a new one from 0.
        let again = try f.create()
        #expect(again.status == 201)
        #expect(again.header("Upload-Offset") == "0")
        #expect(again.header("Location") != path)
    }

    @Test(arguments: StorageEngine.allCases)
    func garbageInTheUploadFields_is400_415_or411(_ engine: StorageEngine) throws {
        let f = try Fixture(engine)
        let path = try f.location()
        let patch: [(String, [(String, String)], Int, String?)] = [
            ("no offset", [("Content-Type", "application/partial-upload"), ("Upload-Complete", "?0")], 400, "invalid_upload_field"),
            ("negative", [("Content-Type", "application/partial-upload"), ("Upload-Offset", "-1"), ("Upload-Complete", "?0")], 400, "invalid_upload_field"),
            ("text", [("Content-Type", "application/partial-upload"), ("Upload-Offset", "abc"), ("Upload-Complete", "?0")], 400, "invalid_upload_field"),
            ("huge", [("Content-Type", "application/partial-upload"), ("Upload-Offset", "9999999999999999"), ("Upload-Complete", "?0")], 400, "invalid_upload_field"),
            ("twice", [("Content-Type", "application/partial-upload"), ("Upload-Offset", "0"), ("Upload-Offset", "0"), ("Upload-Complete", "?0")], 400, "invalid_upload_field"),
            ("boolean", [("Content-Type", "application/partial-upload"), ("Upload-Offset", "0"), ("Upload-Complete", "true")], 400, "invalid_upload_field"),
            ("no complete", [("Content-Type", "application/partial-upload"), ("Upload-Offset", "0")], 400, "invalid_upload_field"),
            ("type", [("Content-Type", "image/png"), ("Upload-Offset", "0"), ("Upload-Complete", "?0")], 415, "unsupported_media_type"),
        ]
        for (what, headers, status, code) in patch {
            let answer = try f.server.request("PATCH", path, headers: headers, body: [1, 2, 3])
            #expect(answer.status == status, "\(what)")
            #expect(answer.errorCode == code, "\(what)")
        }
        let chunked = try f.server.request("PATCH", path, headers: [
            ("Content-Type", "application/partial-upload"), ("Upload-Offset", "0"), ("Upload-Complete", "?0"),
            ("Transfer-Encoding", "chunked"),
        ], body: Array("3\r\nabc\r\n0\r\n\r\n".utf8))
        #expect(chunked.status == 411)
        #expect(try f.offset(path) == 0)
        let creations: [(String, [(String, String)], String)] = [
            ("no length", [("Upload-Complete", "?0")], "invalid_upload_field"),
            ("no complete", [("Upload-Length", "10")], "invalid_upload_field"),
            ("bad length", [("Upload-Complete", "?0"), ("Upload-Length", "1e6")], "invalid_upload_field"),
            ("body past length", [("Upload-Complete", "?0"), ("Upload-Length", "1")], "inconsistent_upload_length"),
        ]
        for (what, extra, code) in creations {
            let answer = try f.server.request("POST", "/v1/expenses/\(f.id)/receipt", headers: [
                ("Content-Type", "image/png"), ("Idempotency-Key", "\"\(TestServer.key())\""),
                ("Repr-Digest", TestServer.digest(of: f.bytes)),
            ] + extra, body: [0x89, 0x50])
            #expect(answer.status == 400, "\(what)")
            #expect(answer.errorCode == code, "\(what)")
        }
        #expect(try f.uploads() == 1)
    }
}
