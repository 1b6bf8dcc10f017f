import Digest
import ExpenseCore
import ExpenseTestSupport
import Foundation
import Testing
import PostgresStorage
@testable import ServerAccounts
@testable import ServerAPI
import ServerStorage
@testable import SQLiteStorage

/// The store in process, on a real SQLite file in a temporary directory,
/// and on a real PostgreSQL database of the tests' own cluster.
@Suite struct StoreTests {
    private func operation(_ user: Int64, _ key: String, body: String = "{}") -> IdempotentOperation {
        IdempotentOperation(user: user, key: key, method: "POST", path: "/v1/expenses", bodyDigest: SHA256.hash(Array(body.utf8)))
    }

    /// A store on `engine` in `directory`, and the view of its data from outside.
    static func open(_ engine: StorageEngine, in directory: TemporaryDirectory) throws -> (any ExpenseStorage, StorageFixture) {
        let fixture = try StorageFixture(engine, dataDirectory: directory.at("data"))
        guard let url = fixture.database else { return (try SQLiteStore(directory: fixture.dataDirectory), fixture) }
        var options = PostgresStore.Options()
        options.stagingDirectory = "\(fixture.dataDirectory)/tmp"
        return (try PostgresStore(url: url, options: options), fixture)
    }

    private func makeStore(_ engine: StorageEngine) throws -> (any ExpenseStorage, Accounts, TemporaryDirectory, alice: Int64, bob: Int64) {
        let directory = TemporaryDirectory()
        let store = try Self.open(engine, in: directory).0
        let accounts = Accounts(store)
        let alice = try #require(try accounts.user(forToken: try accounts.add(named: "alice")))
        let bob = try #require(try accounts.user(forToken: try accounts.add(named: "bob")))
        return (store, accounts, directory, alice, bob)
    }

    @Test(arguments: StorageEngine.allCases)
    func afterIdempotencyRecordsExpire_aCreateRetryStillReplaysThroughTheUniqueID(_ engine: StorageEngine) throws {
        let (store, _, _, alice, bob) = try makeStore(engine)
        let key = ClientID.make()
        let request = try CreateRequest(["merchant": "A"])
        guard case .created(let created) = try store.create(operation(alice, key), request) else { Issue.record("not created"); return }
        #expect(try store.purgeIdempotencyRecords(retentionMilliseconds: -1000) == 1)
        guard case .replayed(let replayed) = try store.create(operation(alice, key), request) else { Issue.record("not a replay"); return }
        #expect(replayed == created)
        // The record is back, so a different body with the key is caught again.
        #expect(throws: StorageError.self) { try store.create(operation(alice, key, body: "{\"x\":1}"), request) }
        // And the key still never reaches another user's expense.
        #expect(throws: StorageError.self) { try store.create(operation(bob, key), request) }
    }

    @Test(arguments: StorageEngine.allCases)
    func purge_keepsRecordsYoungerThanTheRetention(_ engine: StorageEngine) throws {
        let (store, _, _, alice, _) = try makeStore(engine)
        _ = try store.create(operation(alice, ClientID.make()), try CreateRequest([:]))
        #expect(try store.purgeIdempotencyRecords(retentionMilliseconds: 24 * 3_600_000) == 0)
    }

    @Test(arguments: StorageEngine.allCases)
    func users_tokensAreDistinctAndOnlyTheirHashIsKept(_ engine: StorageEngine) throws {
        let (_, accounts, directory, alice, bob) = try makeStore(engine)
        #expect(alice != bob)
        #expect(try accounts.user(forToken: "esk_nobody") == nil)
        #expect(throws: UserError.self) { try accounts.add(named: "alice") }
        #expect(throws: UserError.self) { try accounts.add(named: "") }
        #expect(throws: UserError.self) { try accounts.add(named: "a/b") }
        #expect(try accounts.list().map(\.name) == ["alice", "bob"])
        _ = directory
    }

    @Test(arguments: StorageEngine.allCases)
    func tokenLifecycle_rotateRevokeDeactivate_takeEffectAtTheNextLookup(_ engine: StorageEngine) throws {
        let (store, accounts, _, _, _) = try makeStore(engine)
        let rootToken = try accounts.add(named: "root", isAdmin: true)
        #expect(try accounts.account(forToken: rootToken)?.isAdmin == true)
        let first = try accounts.add(named: "carol")
        let carol = try #require(try accounts.account(forToken: first))
        #expect(carol.isAdmin == false && carol.name == "carol")
        _ = try store.create(operation(carol.id, ClientID.make()), try CreateRequest(["merchant": "A"]))

        let second = try accounts.rotate(named: "carol")
        #expect(second != first)
        #expect(try accounts.account(forToken: first) == nil)
        #expect(try accounts.account(forToken: second) == carol)

        try accounts.revoke(named: "carol")
        #expect(try accounts.account(forToken: second) == nil)
        #expect(try accounts.list().first { $0.name == "carol" }?.state == .revoked)
        let third = try accounts.rotate(named: "carol")
        #expect(try accounts.account(forToken: third) == carol)

        try accounts.deactivate(named: "carol")
        #expect(try accounts.account(forToken: third) == nil)
        #expect(throws: UserError.deactivated("carol")) { try accounts.rotate(named: "carol") }
        #expect(throws: UserError.deactivated("carol")) { try accounts.revoke(named: "carol") }
        #expect(throws: UserError.deactivated("carol")) { try accounts.deactivate(named: "carol") }
        #expect(throws: UserError.notFound("nobody")) { try accounts.rotate(named: "nobody") }
        #expect(throws: UserError.notFound("nobody")) { try accounts.revoke(named: "nobody") }
        // The expenses stay.
        #expect(try store.changes(user: carol.id, after: 0, limit: 10).expenses.count == 1)
        let listed = try accounts.list().map { "\($0.name) \($0.isAdmin) \($0.state)" }
        #expect(listed == ["alice false active", "bob false active", "carol false deactivated", "root true active"])
    }

    /// The running totals the list shows equal the sum of the rows, after
    /// creates, edits of amount and currency, and deletes.
    @Test(arguments: StorageEngine.allCases)
    func runningTotals_matchTheRows_throughEditsAndDeletes(_ engine: StorageEngine) throws {
        let (store, _, _, alice, bob) = try makeStore(engine)
        var ids: [String] = []
        for (index, (amount, currency)) in [("12.50", "EUR"), ("3.25", "EUR"), ("1200", "JPY"), ("7.00", "USD")].enumerated() {
            let fields: [String: JSONValue] = ["merchant": .string("M\(index)"), "amount": .string(amount), "currency": .string(currency), "date": .string("2026-01-0\(index + 1)")]
            guard case .created(let e) = try store.create(operation(index == 3 ? bob : alice, ClientID.make()), try CreateRequest(fields)) else {
                Issue.record("not created"); return
            }
            ids.append(e.transactionID)
        }
        _ = try store.create(operation(alice, ClientID.make()), try CreateRequest(["merchant": "no amount"]))
        _ = try store.edit(operation(alice, ClientID.make()), transactionID: ids[0], PatchRequest(baseVersion: 1, changes: ["amount": "20.00"]))
        _ = try store.edit(operation(alice, ClientID.make()), transactionID: ids[1], PatchRequest(baseVersion: 1, changes: ["currency": "USD"]))
        _ = try store.delete(operation(alice, ClientID.make()), transactionID: ids[2])
        func rowTotals(_ user: Int64?) throws -> [CurrencyTotal] {
            var sums: [String: (Int, Int64)] = [:]
            try store.forEachExpense(ExpenseFilter(user: user)) { listed in
                let e = listed.stored.expense
                let minor = Int64((e.amount ?? "0").replacingOccurrences(of: ".", with: "")) ?? 0
                let current = sums[e.currency ?? "", default: (0, 0)]
                sums[e.currency ?? ""] = (current.0 + 1, current.1 + minor)
            }
            return sums.keys.sorted().map { CurrencyTotal(currency: $0, count: sums[$0]!.0, minorUnits: sums[$0]!.1) }
        }
        #expect(try store.totals(ExpenseFilter(user: alice)) == rowTotals(alice))
        #expect(try store.totals(ExpenseFilter(user: alice)) == [CurrencyTotal(currency: "", count: 1, minorUnits: 0),
                                                                  CurrencyTotal(currency: "EUR", count: 1, minorUnits: 2000),
                                                                  CurrencyTotal(currency: "USD", count: 1, minorUnits: 325)])
        #expect(try store.totals(ExpenseFilter()) == rowTotals(nil))
        // A filter reads the rows instead, and agrees.
        #expect(try store.totals(ExpenseFilter(user: alice, since: "2026-01-01")) == rowTotals(alice).filter { !$0.currency.isEmpty })
    }

    @Test func sweep_removesOnlyOldUnreferencedFilesOfOurs() throws {
        let directory = TemporaryDirectory()
        let files = try ReceiptFiles(directory: directory.at("receipts"))
        let staging = try UploadStaging(directory: directory.at("tmp"))
        let manager = FileManager.default
        for name in ["cp-0000000000000000000000-aa.png", "cp-1111111111111111111111-bb.png", "cp-2222222222222222222222-cc.png", "README"] {
            #expect(manager.createFile(atPath: "\(files.directory)/\(name)", contents: Data([1])))
        }
        #expect(manager.createFile(atPath: "\(staging.directory)/abc.part", contents: Data([1])))
        let old = Date().addingTimeInterval(-3600)
        for name in ["cp-0000000000000000000000-aa.png", "cp-1111111111111111111111-bb.png", "README"] {
            try manager.setAttributes([.modificationDate: old], ofItemAtPath: "\(files.directory)/\(name)")
        }
        try manager.setAttributes([.modificationDate: old], ofItemAtPath: "\(staging.directory)/abc.part")
        let now = Int64(Date().timeIntervalSince1970 * 1e9)
        let removed = try staging.sweep(graceNanoseconds: 600_000_000_000, now: now)
            + files.sweep(referenced: ["cp-0000000000000000000000-aa.png"], graceNanoseconds: 600_000_000_000, now: now)
        #expect(Set(removed) == ["receipts/cp-1111111111111111111111-bb.png", "tmp/abc.part"])
        #expect(Set(try manager.contentsOfDirectory(atPath: files.directory))
                == ["cp-0000000000000000000000-aa.png", "cp-2222222222222222222222-cc.png", "README"])
    }

    @Test func editMerge_followsTheContractsTable() throws {
        let expense = CanonicalExpense(transactionID: "cp-0206e11a39722b8b0b0d34", clientID: "k",
                                       fields: ExpenseFields(merchant: "M", amount: "1.00", currency: "EUR", date: "2026-01-01", taxTag: "T"),
                                       version: 3, createdAt: "", updatedAt: "")
        func merge(_ json: String) throws -> EditMerge.Result {
            try EditMerge.apply(try PatchRequest(try JSONBody.object(Array(json.utf8))), to: expense)
        }
        let current = try merge(#"{"base_version": 3, "set": {"currency": "USD", "tax_tag": null, "merchant": "N"}}"#)
        #expect(current.fields.currency == "USD")
        #expect(current.fields.taxTag == nil)
        #expect(current.conflicts.isEmpty)
        let stale = try merge(#"{"base_version": 2, "set": {"currency": "USD", "tax_tag": "U", "merchant": "N", "amount": "2.00"}}"#)
        #expect(stale.fields.currency == "EUR")
        #expect(stale.fields.taxTag == "T")
        #expect(stale.fields.merchant == "N")
        #expect(stale.fields.amount == "2.00")
        #expect(stale.conflicts == ["currency": ConflictValues(server: "EUR", client: "USD"), "tax_tag": ConflictValues(server: "T", client: "U")])
        #expect(throws: StorageError.self) { try merge(#"{"base_version": 4, "set": {}}"#) }
    }
}
