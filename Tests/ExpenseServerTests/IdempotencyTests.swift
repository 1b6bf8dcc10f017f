import ExpenseCore
import ExpenseTestSupport
import Foundation
import Testing

/// contract.md's idempotency table, row by row, against the running binary.
@Suite struct IdempotencyTests {
    @Test(arguments: StorageEngine.allCases)
    func firstRequest_creates201WithTheDerivedTransactionID(_ engine: StorageEngine) throws {
        let server = try TestServer(engine)
        let response = try server.create(key: "1b4e28ba-2fa1-11d2-883f-0000f87d3b6e")
        #expect(response.status == 201)
        #expect(response.header("Location") == "/v1/expenses/cp-0206e11a39722b8b0b0d34")
        #expect(response.header("Content-Type") == "application/json; charset=utf-8")
        #expect(!response.isReplay)
        let e = response.expense
        #expect(e["transaction_id"] as? String == "cp-0206e11a39722b8b0b0d34")
        #expect(e["client_id"] as? String == "1b4e28ba-2fa1-11d2-883f-0000f87d3b6e")
        #expect(e["merchant"] as? String == "Blue Bottle")
        #expect(e["amount"] as? String == "12.50")
        #expect(e["version"] as? Int == 1)
        #expect(e["deleted"] as? Bool == false)
        #expect(e["conflict"] as? Bool == false)
        #expect(e["assigned"] as? Bool == false)
        #expect(e["tax_tag"] is NSNull)
        #expect(e["receipt_url"] is NSNull)
        #expect((e["conflicts"] as? [String: Any])?.isEmpty == true)
        #expect(Timestamp.parse(e["created_at"] as? String ?? "") != nil)
        #expect(try server.scalar("SELECT count(*) FROM expenses") == 1)
    }

    @Test(arguments: StorageEngine.allCases)
    func sameKeySameBody_replays200WithTheExpenseAsItIsNow(_ engine: StorageEngine) throws {
        let server = try TestServer(engine)
        let key = TestServer.key()
        let first = try server.create(key: key)
        let id = try #require(first.transactionID)
        // An edit in between: the replay shows the expense as it is now.
        let edited = try server.patch(id, key: TestServer.key(), #"{"base_version": 1, "set": {"comment": "edited"}}"#)
        #expect(edited.status == 200)
        let replay = try server.create(key: key)
        #expect(replay.status == 200)
        #expect(replay.isReplay)
        #expect(replay.transactionID == id)
        #expect(replay.expense["comment"] as? String == "edited")
        #expect(replay.expense["version"] as? Int == 2)
        #expect(replay.expense["created_at"] as? String == first.expense["created_at"] as? String)
        #expect(try server.scalar("SELECT count(*) FROM expenses") == 1)
    }

    @Test(arguments: StorageEngine.allCases)
    func sameKeySameBodyInAnotherOrder_isStillAReplay(_ engine: StorageEngine) throws {
        let server = try TestServer(engine)
        let key = TestServer.key()
        #expect(try server.create(key: key, #"{"merchant":"A","amount":"1.00","currency":"EUR","date":"2026-01-02"}"#).status == 201)
        let replay = try server.create(key: key, #"{ "date": "2026-01-02", "currency": "EUR",  "amount": "1.00", "merchant": "A" }"#, quoted: false)
        #expect(replay.status == 200)
        #expect(replay.isReplay)
    }

    @Test(arguments: StorageEngine.allCases)
    func sameKeyOtherBody_is422AndChangesNothing(_ engine: StorageEngine) throws {
        let server = try TestServer(engine)
        let key = TestServer.key()
        let first = try server.create(key: key)
        let reused = try server.create(key: key, #"{"merchant": "Someone else", "amount": "99.00", "currency": "EUR", "date": "2026-11-29"}"#)
        #expect(reused.status == 422)
        #expect(reused.errorCode == "idempotency_key_reused")
        #expect(reused.isJSONError)
        let now = try server.get("/v1/expenses/\(try #require(first.transactionID))")
        #expect(now.expense["merchant"] as? String == "Blue Bottle")
        #expect(now.expense["version"] as? Int == 1)
        #expect(try server.scalar("SELECT count(*) FROM expenses") == 1)
    }

    @Test(arguments: StorageEngine.allCases)
    func sameKeyOnAnotherEndpoint_is422(_ engine: StorageEngine) throws {
        let server = try TestServer(engine)
        let createKey = TestServer.key()
        let id = try #require(try server.create(key: createKey).transactionID)
        let patchKey = TestServer.key()
        #expect(try server.patch(id, key: patchKey, #"{"base_version": 1, "set": {"comment": "x"}}"#).status == 200)
        // The PATCH's key on a DELETE, and the create's key on a PATCH.
        let delete = try server.delete(id, key: patchKey)
        #expect(delete.status == 422)
        #expect(delete.errorCode == "idempotency_key_reused")
        let patch = try server.patch(id, key: createKey, #"{"base_version": 2, "set": {"comment": "y"}}"#)
        #expect(patch.status == 422)
        #expect(try server.get("/v1/expenses/\(id)").expense["deleted"] as? Bool == false)
    }

    @Test(arguments: StorageEngine.allCases)
    func sameKeyWhileTheFirstIsInProgress_is409ThenReplays(_ engine: StorageEngine) throws {
        let server = try TestServer(engine)
        let key = TestServer.key()
        let body = Array(TestServer.lunch.utf8)
        // The first create sends its headers and waits. "100 Continue" says
        // the server has them, and with them the key.
        let slow = try server.connect()
        try slow.send(HTTPConnection.encode("POST", "/v1/expenses", headers: [
            ("Authorization", "Bearer \(server.token)"), ("Content-Type", "application/json"),
            ("Idempotency-Key", key), ("Content-Length", "\(body.count)"), ("Expect", "100-continue"),
        ]))
        #expect(try slow.readResponse(method: "POST").status == 100)
        let second = try server.create(key: key)
        #expect(second.status == 409)
        #expect(second.errorCode == "request_in_progress")
        #expect(second.isJSONError)
        try slow.send(body)
        let first = try slow.readResponse(method: "POST")
        #expect(first.status == 201)
        let third = try server.create(key: key)
        #expect(third.status == 200)
        #expect(third.isReplay)
        #expect(try server.scalar("SELECT count(*) FROM expenses") == 1)
    }

    @Test(arguments: StorageEngine.allCases)
    func receiptKeyWhileItsUploadIsInProgress_is409(_ engine: StorageEngine) throws {
        let server = try TestServer(engine)
        let id = try #require(try server.create(key: TestServer.key()).transactionID)
        let key = TestServer.key()
        let bytes = TestServer.png(100_000)
        let slow = try server.connect()
        try slow.send(HTTPConnection.encode("PUT", "/v1/expenses/\(id)/receipt", headers: [
            ("Authorization", "Bearer \(server.token)"), ("Content-Type", "image/png"), ("Idempotency-Key", key),
            ("Repr-Digest", TestServer.digest(of: bytes)), ("Content-Length", "\(bytes.count)"), ("Expect", "100-continue"),
        ]))
        #expect(try slow.readResponse(method: "PUT").status == 100)
        try slow.send(Array(bytes.prefix(5000)))
        // The second upload announces its body and waits for leave to send it:
        // the answer comes first.
        let probe = try server.connect()
        try probe.send(HTTPConnection.encode("PUT", "/v1/expenses/\(id)/receipt", headers: [
            ("Authorization", "Bearer \(server.token)"), ("Content-Type", "image/png"), ("Idempotency-Key", key),
            ("Repr-Digest", TestServer.digest(of: bytes)), ("Content-Length", "\(bytes.count)"), ("Expect", "100-continue"),
        ]))
        let second = try probe.readResponse(method: "PUT")
        #expect(second.status == 409)
        #expect(second.errorCode == "request_in_progress")
        try slow.send(Array(bytes.dropFirst(5000)))
        #expect(try slow.readResponse(method: "PUT").status == 200)
        let replay = try server.putReceipt(id, key: key, bytes: bytes)
        #expect(replay.status == 200)
        #expect(replay.isReplay)
        #expect(try server.storedReceiptCount() == 1)
    }

    @Test(arguments: StorageEngine.allCases)
    func twoUsersWithTheSameKey_secondIs422AndSeesNothing(_ engine: StorageEngine) throws {
        let server = try TestServer(engine)
        let bob = try server.addUser("bob")
        let key = TestServer.key()
        let alices = try server.create(key: key)
        #expect(alices.status == 201)
        let bobs = try server.create(key: key, #"{"merchant": "Bob's", "amount": "1.00", "currency": "EUR", "date": "2026-11-29"}"#, auth: .token(bob))
        #expect(bobs.status == 422)
        #expect(bobs.errorCode == "idempotency_key_reused")
        #expect(!bobs.text.contains("Blue Bottle"))
        #expect(!bobs.text.contains(try #require(alices.transactionID)))
        // Even the identical body: Bob never replays Alice's expense.
        let same = try server.create(key: key, auth: .token(bob))
        #expect(same.status == 422)
        #expect(!same.text.contains("Blue Bottle"))
        // And Bob cannot reach it any other way.
        let id = try #require(alices.transactionID)
        #expect(try server.get("/v1/expenses/\(id)", auth: .token(bob)).status == 404)
        #expect(try server.patch(id, key: TestServer.key(), #"{"base_version": 1, "set": {"comment": "x"}}"#, auth: .token(bob)).status == 404)
        #expect(try server.delete(id, key: TestServer.key(), auth: .token(bob)).status == 404)
        let bobsList = try server.get("/v1/expenses", auth: .token(bob))
        #expect((bobsList.json?["expenses"] as? [Any])?.isEmpty == true)
        #expect(try server.scalar("SELECT count(*) FROM expenses") == 1)
    }

    @Test(arguments: StorageEngine.allCases)
    func keysAreScopedPerUser_forEdits(_ engine: StorageEngine) throws {
        let server = try TestServer(engine)
        let bob = try server.addUser("bob")
        let alices = try #require(try server.create(key: TestServer.key()).transactionID)
        let bobs = try #require(try server.create(key: TestServer.key(), auth: .token(bob)).transactionID)
        let key = TestServer.key()
        let body = #"{"base_version": 1, "set": {"comment": "same key, two users"}}"#
        #expect(try server.patch(alices, key: key, body).status == 200)
        let bobsPatch = try server.patch(bobs, key: key, body, auth: .token(bob))
        #expect(bobsPatch.status == 200)
        #expect(!bobsPatch.isReplay)
    }

    @Test(arguments: StorageEngine.allCases, [
        ("missing", nil as String?),
        ("empty", ""),
        ("not a uuid", "abc"),
        ("too short", "1b4e28ba-2fa1-11d2-883f-0000f87d3b6"),
        ("braces", "{1b4e28ba-2fa1-11d2-883f-0000f87d3b6e}"),
        ("unterminated quote", "\"1b4e28ba-2fa1-11d2-883f-0000f87d3b6e"),
    ])
    func missingOrMalformedKey_is400(_ engine: StorageEngine, _ header: (name: String, key: String?)) throws {
        let (name, key) = header
        let server = try TestServer(engine)
        var headers = [("Content-Type", "application/json")]
        if let key { headers.append(("Idempotency-Key", key)) }
        let response = try server.request("POST", "/v1/expenses", headers: headers, body: Array(TestServer.lunch.utf8))
        #expect(response.status == 400, "\(name)")
        #expect(response.errorCode == "idempotency_key_required", "\(name)")
        #expect(try server.scalar("SELECT count(*) FROM expenses") == 0)
    }

    @Test(arguments: StorageEngine.allCases)
    func keyQuotedBareOrUppercase_isTheSameKey(_ engine: StorageEngine) throws {
        let server = try TestServer(engine)
        let key = TestServer.key()
        #expect(try server.create(key: key, quoted: true).status == 201)
        #expect(try server.create(key: key, quoted: false).status == 200)
        #expect(try server.create(key: key.uppercased(), quoted: false).status == 200)
        #expect(try server.scalar("SELECT count(*) FROM expenses") == 1)
    }

    @Test(arguments: StorageEngine.allCases)
    func everyMutationNeedsAKey(_ engine: StorageEngine) throws {
        let server = try TestServer(engine)
        let id = try #require(try server.create(key: TestServer.key()).transactionID)
        let patch = try server.request("PATCH", "/v1/expenses/\(id)", headers: [("Content-Type", "application/json")],
                                       body: Array(#"{"base_version":1,"set":{}}"#.utf8))
        #expect(patch.errorCode == "idempotency_key_required")
        #expect(try server.request("DELETE", "/v1/expenses/\(id)").errorCode == "idempotency_key_required")
        let put = try server.request("PUT", "/v1/expenses/\(id)/receipt", headers: [
            ("Content-Type", "image/png"), ("Repr-Digest", TestServer.digest(of: TestServer.png())),
        ], body: TestServer.png())
        #expect(put.errorCode == "idempotency_key_required")
    }

    @Test(arguments: StorageEngine.allCases)
    func replaysOfEditDeleteAndReceipt_answer200WithTheExpenseAsItIsNow(_ engine: StorageEngine) throws {
        let server = try TestServer(engine)
        let id = try #require(try server.create(key: TestServer.key()).transactionID)
        let receiptKey = TestServer.key()
        let bytes = TestServer.png()
        #expect(try server.putReceipt(id, key: receiptKey, bytes: bytes).status == 200)
        let patchKey = TestServer.key()
        let patchBody = #"{"base_version": 2, "set": {"comment": "changed"}}"#
        #expect(try server.patch(id, key: patchKey, patchBody).status == 200)
        let deleteKey = TestServer.key()
        #expect(try server.delete(id, key: deleteKey).status == 200)

        for replay in [try server.putReceipt(id, key: receiptKey, bytes: bytes),
                       try server.patch(id, key: patchKey, patchBody),
                       try server.delete(id, key: deleteKey)] {
            #expect(replay.status == 200)
            #expect(replay.isReplay)
            #expect(replay.expense["version"] as? Int == 4)
            #expect(replay.expense["deleted"] as? Bool == true)
            #expect(replay.expense["comment"] as? String == "changed")
        }
        #expect(try server.scalar("SELECT version FROM expenses") == 4)
    }
}
