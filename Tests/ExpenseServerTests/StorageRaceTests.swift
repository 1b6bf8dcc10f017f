import Digest
import ExpenseCore
import ExpenseTestSupport
import Foundation
import Posix
import Synchronization
import Testing
@testable import ServerAccounts
@testable import ServerAPI
import ServerStorage

/// The storage seam in process, on both engines, with no "in progress"
/// claims in front of it: the database alone decides every race.
@Suite struct StorageRaceTests {
    private struct Setup {
        let directory = TemporaryDirectory()
        let store: any ExpenseStorage
        let fixture: StorageFixture
        let alice: Int64
        let bob: Int64

        init(_ engine: StorageEngine) throws {
            (store, fixture) = try StoreTests.open(engine, in: directory)
            let accounts = Accounts(store)
            alice = try #require(try accounts.user(forToken: try accounts.add(named: "alice")))
            bob = try #require(try accounts.user(forToken: try accounts.add(named: "bob")))
        }
    }

    private func operation(_ user: Int64, _ key: String, _ method: String = "POST", _ path: String = "/v1/expenses",
                           body: String = "{}") -> IdempotentOperation {
        IdempotentOperation(user: user, key: key, method: method, path: path, bodyDigest: SHA256.hash(Array(body.utf8)))
    }

    @Test(arguments: StorageEngine.allCases)
    func racingCreatesWithOneKey_makeOneExpense_andEveryOtherAnswerReplaysIt(_ engine: StorageEngine) throws {
        let setup = try Setup(engine)
        let key = ClientID.make()
        let request = CreateRequest(fields: ExpenseFields(merchant: "M", amount: "1.00", currency: "EUR", date: "2026-01-01"))
        let store = setup.store, alice = setup.alice
        let outcomes = try together(12) { _ in try store.create(operation(alice, key), request) }.map { try $0.get() }
        #expect(outcomes.filter { if case .created = $0 { true } else { false } }.count == 1)
        #expect(outcomes.filter(\.isReplay).count == 11)
        #expect(outcomes.allSatisfy { $0.expense == outcomes[0].expense })
        #expect(try setup.store.changes(user: alice, after: 0, limit: 100).expenses.count == 1)
    }

    @Test(arguments: StorageEngine.allCases)
    func racingEditsWithDistinctKeys_eachApplyOnce_withDistinctVersions(_ engine: StorageEngine) throws {
        let setup = try Setup(engine)
        let store = setup.store, alice = setup.alice
        let created = try store.create(operation(alice, ClientID.make()), CreateRequest(fields: ExpenseFields(merchant: "M")))
        let id = created.expense.transactionID
        let outcomes = try together(10) { n in
            try store.edit(operation(alice, ClientID.make(), "PATCH", "/v1/expenses/\(id)", body: "\(n)"), transactionID: id,
                           PatchRequest(baseVersion: 1, changes: ["comment": "edit \(n)"]))
        }.map { try $0.get() }
        #expect(outcomes.allSatisfy { if case .applied = $0 { true } else { false } })
        #expect(Set(outcomes.map(\.expense.version)) == Set(2...11))
        #expect(try store.expense(id, user: alice)?.expense.version == 11)
    }

    @Test(arguments: StorageEngine.allCases)
    func racingEditsWithOneKey_applyOnce(_ engine: StorageEngine) throws {
        let setup = try Setup(engine)
        let store = setup.store, alice = setup.alice
        let id = try store.create(operation(alice, ClientID.make()), CreateRequest(fields: ExpenseFields())).expense.transactionID
        let key = ClientID.make()
        let outcomes = try together(8) { _ in
            try store.edit(operation(alice, key, "PATCH", "/v1/expenses/\(id)"), transactionID: id,
                           PatchRequest(baseVersion: 1, changes: ["comment": "once"]))
        }.map { try $0.get() }
        #expect(outcomes.filter(\.isReplay).count == 7)
        #expect(outcomes.allSatisfy { $0.expense.version == 2 && $0.expense.comment == "once" })
        #expect(try store.expense(id, user: alice)?.expense.version == 2)
    }

    @Test(arguments: StorageEngine.allCases)
    func anotherUsersKey_andAFailedWrite_leaveNoIdempotencyRecord(_ engine: StorageEngine) throws {
        let setup = try Setup(engine)
        let store = setup.store
        let key = ClientID.make()
        _ = try store.create(operation(setup.alice, key), CreateRequest(fields: ExpenseFields()))
        do {
            _ = try store.create(operation(setup.bob, key), CreateRequest(fields: ExpenseFields()))
            Issue.record("Bob's create with Alice's transaction id succeeded")
        } catch let error as StorageError {
            #expect(error.code == .idempotencyKeyReused)
        }
        #expect(try !store.hasIdempotencyRecord(user: setup.bob, key: key))
        let editKey = ClientID.make()
        #expect(throws: StorageError.self) {
            try store.edit(operation(setup.alice, editKey, "PATCH", "/v1/expenses/cp-00000000000000000000ff"),
                           transactionID: "cp-00000000000000000000ff", PatchRequest(baseVersion: 1, changes: [:]))
        }
        #expect(try !store.hasIdempotencyRecord(user: setup.alice, key: editKey))
    }

    /// Writers commit while a reader follows the feed with its cursor: the
    /// reader never steps over a change that commits after it looked.
    @Test(arguments: StorageEngine.allCases)
    func feedFollowedDuringConcurrentWrites_missesNothing(_ engine: StorageEngine) throws {
        let setup = try Setup(engine)
        let store = setup.store, alice = setup.alice
        let writing = Atomic<Int>(4)
        let seen = Mutex<[String]>([])
        let reader = DispatchGroup()
        reader.enter()
        Thread {
            var cursor: Int64 = 0
            func drain() {
                while let page = try? store.changes(user: alice, after: cursor, limit: 7) {
                    seen.withLock { $0 += page.expenses.map(\.transactionID) }
                    cursor = page.next
                    if !page.hasMore { break }
                }
            }
            while writing.load(ordering: .acquiring) > 0 { drain() }
            drain()
            reader.leave()
        }.start()
        let created = together(4) { _ in
            defer { writing.subtract(1, ordering: .releasing) }
            return try (0..<60).map { _ in
                try store.create(operation(alice, ClientID.make()), CreateRequest(fields: ExpenseFields())).expense.transactionID
            }
        }
        reader.wait()
        let all = try created.flatMap { try $0.get() }
        let read = seen.withLock { $0 }
        #expect(all.count == 240)
        #expect(read.count == Set(read).count, "no expense twice")
        let missed = Set(all).subtracting(read)
        #expect(missed.isEmpty, "the reader missed \(missed.count) of \(all.count) expenses")
        #expect(Set(read).isSubset(of: Set(all)))
    }

    @Test(arguments: StorageEngine.allCases)
    func receipt_storedWithTheRow_isReadBackWhole_andAReplacementDropsTheOld(_ engine: StorageEngine) throws {
        let setup = try Setup(engine)
        let store = setup.store, alice = setup.alice
        let id = try store.create(operation(alice, ClientID.make()), CreateRequest(fields: ExpenseFields())).expense.transactionID
        let first = TestServer.png(3 << 20, seed: 3)
        let second = TestServer.png(700_000, seed: 4)
        for (n, bytes) in [first, second].enumerated() {
            let outcome = try store.attachReceipt(operation(alice, ClientID.make(), "PUT", "/v1/expenses/\(id)/receipt"),
                                                  transactionID: id, try stage(bytes, in: store))
            #expect(outcome.expense.version == n + 2)
            let content = try store.receipt(of: id, user: alice)
            #expect(content.size == Int64(bytes.count))
            #expect(content.sha256 == Hex.encode(SHA256.hash(bytes)))
            #expect(try readAll(content.file) == bytes)
        }
        #expect(try setup.fixture.storedReceiptDigests() == [Hex.encode(SHA256.hash(second))])
        #expect(try FileManager.default.contentsOfDirectory(atPath: store.staging.directory).isEmpty, "nothing left staged")
    }

    private func stage(_ bytes: [UInt8], in store: any ExpenseStorage) throws -> StagedReceipt {
        let (file, path) = try store.staging.makeFile()
        try file.writeAll(bytes)
        return StagedReceipt(file: file, path: path, kind: .png, sha256: Hex.encode(SHA256.hash(bytes)), size: Int64(bytes.count))
    }

    private func readAll(_ file: FileDescriptor) throws -> [UInt8] {
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 1 << 16)
        while true {
            let n = try file.read(into: &buffer, at: Int64(bytes.count))
            if n == 0 { return bytes }
            bytes += buffer.prefix(n)
        }
    }
}
