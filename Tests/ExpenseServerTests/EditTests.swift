import ExpenseTestSupport
import Foundation
import Testing

/// `PATCH` (last writer wins, conflicts), `DELETE` (tombstones) and `GET` one.
@Suite struct EditTests {
    private func expense(_ server: TestServer, _ body: String = TestServer.lunch) throws -> String {
        try #require(try server.create(key: TestServer.key(), body).transactionID)
    }

    @Test(arguments: StorageEngine.allCases)
    func currentBaseVersion_appliesEveryFieldAndBumpsTheVersion(_ engine: StorageEngine) throws {
        let server = try TestServer(engine)
        let id = try expense(server)
        let before = try server.get("/v1/expenses/\(id)").expense
        let response = try server.patch(id, key: TestServer.key(), """
            {"base_version": 1, "set": {"amount": "13.00", "currency": "USD", "tax_tag": "VAT-19", "comment": null, "merchant": "Blue Bottle Coffee"}}
            """)
        #expect(response.status == 200)
        let e = response.expense
        #expect(e["version"] as? Int == 2)
        #expect(e["amount"] as? String == "13.00")
        #expect(e["currency"] as? String == "USD")
        #expect(e["tax_tag"] as? String == "VAT-19")
        #expect(e["comment"] is NSNull)
        #expect(e["merchant"] as? String == "Blue Bottle Coffee")
        #expect(e["category"] as? String == "Meals")
        #expect(e["conflict"] as? Bool == false)
        #expect((e["updated_at"] as? String ?? "") >= (before["updated_at"] as? String ?? "~"))
        #expect(e["created_at"] as? String == before["created_at"] as? String)
        #expect(try server.get("/v1/expenses/\(id)").body == response.body)
    }

    @Test(arguments: StorageEngine.allCases)
    func olderBaseVersion_lastWriterWinsForSafeFields(_ engine: StorageEngine) throws {
        let server = try TestServer(engine)
        let id = try expense(server)
        #expect(try server.patch(id, key: TestServer.key(), #"{"base_version": 1, "set": {"comment": "device A"}}"#).status == 200)
        // Device B edits from version 1 too.
        let stale = try server.patch(id, key: TestServer.key(), """
            {"base_version": 1, "set": {"comment": "device B", "merchant": "B's merchant", "amount": "20.00", "date": "2026-11-30", "category": "Travel"}}
            """)
        #expect(stale.status == 200)
        let e = stale.expense
        #expect(e["version"] as? Int == 3)
        #expect(e["comment"] as? String == "device B")
        #expect(e["merchant"] as? String == "B's merchant")
        #expect(e["amount"] as? String == "20.00")
        #expect(e["date"] as? String == "2026-11-30")
        #expect(e["category"] as? String == "Travel")
        #expect(e["conflict"] as? Bool == false)
    }

    @Test(arguments: StorageEngine.allCases)
    func olderBaseVersion_keepsTheServersCurrencyAndTaxTag_andRecordsTheConflict(_ engine: StorageEngine) throws {
        let server = try TestServer(engine)
        let id = try expense(server)
        #expect(try server.patch(id, key: TestServer.key(), #"{"base_version": 1, "set": {"tax_tag": "T1"}}"#).status == 200)
        let stale = try server.patch(id, key: TestServer.key(), """
            {"base_version": 1, "set": {"currency": "USD", "tax_tag": "T2", "amount": "13.00"}}
            """)
        #expect(stale.status == 200)
        let e = stale.expense
        #expect(e["currency"] as? String == "EUR")
        #expect(e["tax_tag"] as? String == "T1")
        #expect(e["amount"] as? String == "13.00")
        #expect(e["conflict"] as? Bool == true)
        #expect(e["version"] as? Int == 3)
        let conflicts = try #require(e["conflicts"] as? [String: [String: String]])
        #expect(conflicts["currency"] == ["server": "EUR", "client": "USD"])
        #expect(conflicts["tax_tag"] == ["server": "T1", "client": "T2"])
        #expect(conflicts.count == 2)
    }

    @Test(arguments: StorageEngine.allCases)
    func olderBaseVersion_sameValueAsTheServer_isNoConflict(_ engine: StorageEngine) throws {
        let server = try TestServer(engine)
        let id = try expense(server)
        #expect(try server.patch(id, key: TestServer.key(), #"{"base_version": 1, "set": {"comment": "x"}}"#).status == 200)
        let stale = try server.patch(id, key: TestServer.key(), #"{"base_version": 1, "set": {"currency": "EUR"}}"#)
        #expect(stale.expense["conflict"] as? Bool == false)
        #expect((stale.expense["conflicts"] as? [String: Any])?.isEmpty == true)
    }

    @Test(arguments: StorageEngine.allCases)
    func olderBaseVersion_amountTheKeptCurrencyCannotHold_isHeldBackToo(_ engine: StorageEngine) throws {
        let server = try TestServer(engine)
        let id = try expense(server, #"{"merchant": "Sushi", "amount": "1500", "currency": "JPY", "date": "2026-11-29"}"#)
        #expect(try server.patch(id, key: TestServer.key(), #"{"base_version": 1, "set": {"comment": "x"}}"#).status == 200)
        let stale = try server.patch(id, key: TestServer.key(), #"{"base_version": 1, "set": {"currency": "USD", "amount": "12.50"}}"#)
        #expect(stale.status == 200)
        let e = stale.expense
        #expect(e["currency"] as? String == "JPY")
        #expect(e["amount"] as? String == "1500")
        let conflicts = try #require(e["conflicts"] as? [String: [String: String]])
        #expect(conflicts["currency"] == ["server": "JPY", "client": "USD"])
        #expect(conflicts["amount"] == ["server": "1500", "client": "12.50"])
    }

    @Test(arguments: StorageEngine.allCases)
    func editFromTheCurrentVersion_resolvesTheConflictOfTheFieldsItSets(_ engine: StorageEngine) throws {
        let server = try TestServer(engine)
        let id = try expense(server)
        #expect(try server.patch(id, key: TestServer.key(), #"{"base_version": 1, "set": {"comment": "x"}}"#).status == 200)
        let stale = try server.patch(id, key: TestServer.key(), #"{"base_version": 1, "set": {"currency": "USD", "tax_tag": "T"}}"#)
        #expect(stale.expense["conflict"] as? Bool == true)
        // Resolve currency by taking the client's value, from version 3.
        let resolved = try server.patch(id, key: TestServer.key(), #"{"base_version": 3, "set": {"currency": "USD"}}"#)
        #expect(resolved.expense["currency"] as? String == "USD")
        #expect(resolved.expense["conflict"] as? Bool == true)
        #expect((resolved.expense["conflicts"] as? [String: Any])?.keys.sorted() == ["tax_tag"])
        // And tax_tag by keeping the server's.
        let done = try server.patch(id, key: TestServer.key(), #"{"base_version": 4, "set": {"tax_tag": null}}"#)
        #expect(done.expense["conflict"] as? Bool == false)
        #expect(done.expense["version"] as? Int == 5)
    }

    @Test(arguments: StorageEngine.allCases)
    func newerBaseVersion_is400(_ engine: StorageEngine) throws {
        let server = try TestServer(engine)
        let id = try expense(server)
        let response = try server.patch(id, key: TestServer.key(), #"{"base_version": 7, "set": {"comment": "x"}}"#)
        #expect(response.status == 400)
        #expect(response.errorCode == "invalid_field")
        #expect((response.json?["error"] as? [String: Any])?["field"] as? String == "base_version")
    }

    @Test(arguments: StorageEngine.allCases, [
        (#"{"set": {"comment": "x"}}"#, "base_version"),
        (#"{"base_version": "1", "set": {}}"#, "base_version"),
        (#"{"base_version": 0, "set": {}}"#, "base_version"),
        (#"{"base_version": 1.5, "set": {}}"#, "base_version"),
        (#"{"base_version": 1}"#, "set"),
        (#"{"base_version": 1, "set": []}"#, "set"),
        (#"{"base_version": 1, "set": {"assigned": true}}"#, "set.assigned"),
        (#"{"base_version": 1, "set": {"amount": 13}}"#, "set.amount"),
        (#"{"base_version": 1, "set": {"amount": "13.001"}}"#, "set.amount"),
        (#"{"base_version": 1, "set": {"currency": "usd"}}"#, "set.currency"),
        (#"{"base_version": 1, "set": {"date": "2026-13-01"}}"#, "set.date"),
        (#"{"base_version": 1, "set": {"merchant": ""}}"#, "set.merchant"),
        (#"{"base_version": 1, "set": {"currency": null}}"#, "amount"),
    ])
    func invalidEdit_is400NamingTheField(_ engine: StorageEngine, _ edit: (body: String, field: String)) throws {
        let (body, field) = edit
        let server = try TestServer(engine)
        let id = try expense(server)
        let response = try server.patch(id, key: TestServer.key(), body)
        #expect(response.status == 400, "\(body)")
        #expect(response.errorCode == "invalid_field", "\(body)")
        #expect((response.json?["error"] as? [String: Any])?["field"] as? String == field, "\(body): \(response.text)")
        #expect(try server.get("/v1/expenses/\(id)").expense["version"] as? Int == 1)
    }

    @Test(arguments: StorageEngine.allCases)
    func unknownOrDeleted_is404Or410(_ engine: StorageEngine) throws {
        let server = try TestServer(engine)
        let unknown = try server.patch("cp-00000000000000000000ff", key: TestServer.key(), #"{"base_version": 1, "set": {}}"#)
        #expect(unknown.status == 404)
        #expect(unknown.errorCode == "expense_not_found")
        let malformed = try server.patch("not-an-id", key: TestServer.key(), #"{"base_version": 1, "set": {}}"#)
        #expect(malformed.status == 404)
        let id = try expense(server)
        #expect(try server.delete(id, key: TestServer.key()).status == 200)
        let gone = try server.patch(id, key: TestServer.key(), #"{"base_version": 2, "set": {"comment": "x"}}"#)
        #expect(gone.status == 410)
        #expect(gone.errorCode == "expense_deleted")
    }

    @Test(arguments: StorageEngine.allCases)
    func delete_leavesATombstoneAndDeletingAgainIsAReplay(_ engine: StorageEngine) throws {
        let server = try TestServer(engine)
        let id = try expense(server)
        let deleted = try server.delete(id, key: TestServer.key())
        #expect(deleted.status == 200)
        #expect(!deleted.isReplay)
        #expect(deleted.expense["deleted"] as? Bool == true)
        #expect(deleted.expense["version"] as? Int == 2)
        let tombstone = try server.get("/v1/expenses/\(id)")
        #expect(tombstone.status == 200)
        #expect(tombstone.expense["deleted"] as? Bool == true)
        let again = try server.delete(id, key: TestServer.key())
        #expect(again.status == 200)
        #expect(again.isReplay)
        #expect(again.expense["version"] as? Int == 2)
        #expect(try server.delete("cp-00000000000000000000ff", key: TestServer.key()).status == 404)
        #expect(try server.scalar("SELECT count(*) FROM expenses") == 1)
    }

    @Test(arguments: StorageEngine.allCases)
    func getOne_unknownIs404_andHEADHasNoBody(_ engine: StorageEngine) throws {
        let server = try TestServer(engine)
        #expect(try server.get("/v1/expenses/cp-00000000000000000000ff").errorCode == "expense_not_found")
        let id = try expense(server)
        let connection = try server.connect()
        let head = try server.request(on: connection, "HEAD", "/v1/expenses/\(id)")
        #expect(head.status == 200)
        #expect(head.body.isEmpty)
        // The connection stays usable after a HEAD.
        #expect(try server.request(on: connection, "GET", "/v1/expenses/\(id)").transactionID == id)
    }

    @Test(arguments: StorageEngine.allCases)
    func receiptOnlyCreate_storesNullFields_andTheyCanBeFilledLater(_ engine: StorageEngine) throws {
        let server = try TestServer(engine)
        let created = try server.create(key: TestServer.key(), #"{"device_id": "scanner-1"}"#)
        #expect(created.status == 201)
        for field in ["merchant", "amount", "currency", "date", "category", "comment"] {
            #expect(created.expense[field] is NSNull, "\(field)")
        }
        let id = try #require(created.transactionID)
        let filled = try server.patch(id, key: TestServer.key(), """
            {"base_version": 1, "set": {"merchant": "Kiosk", "amount": "4.20", "currency": "CHF", "date": "2026-11-28"}}
            """)
        #expect(filled.status == 200)
        #expect(filled.expense["currency"] as? String == "CHF")
    }
}
