import ExpenseCore
@testable import OutboxStore
import ExpenseTestSupport
import Posix
import Testing

/// Where an expense came from, and which receipt a late sidecar finds:
/// the store's side, on a real database.
@Suite struct StoreSourceTests {
    let sidecar = ExpenseFields(merchant: "Late", amount: "3.00", currency: "EUR", date: "2026-06-01")

    /// Queues a receipt-only spool expense named `name` for `account`, taken at `now`.
    func takeReceipt(_ store: Store, _ name: String, account: String = AccountName.defaultName, now: Int64 = 1000) async throws -> String {
        let source = SourceRecord.spool(name: FileName(name)!, sidecar: nil, droppedMilliseconds: now - 10)
        return try await store.enqueueSpoolCreate(fields: ExpenseFields(), clientID: ClientID.make(), receipt: nil, files: [],
                                                  source: source, now: now, account: account).transactionID
    }

    func late(_ store: Store, _ name: String, account: String = AccountName.defaultName, since: Int64 = 0) async throws -> LateSidecarOutcome {
        try await store.enqueueLateSidecar(fields: sidecar, sidecarName: FileName(name)!, account: account, since: since, files: [], now: 2000)
    }

    @Test func aSpoolSource_withABinaryName_isShownEscaped_andALateSidecarFindsItByItsExactStem() async throws {
        let dir = TemporaryDirectory()
        let store = try Store(stateDirectory: dir.at("state"))
        let binary = FileName(bytes: [0x73, 0xFF, 0x0A] + Array(".JPG".utf8))!
        let id = try await store.enqueueSpoolCreate(fields: ExpenseFields(), clientID: ClientID.make(), receipt: nil, files: [],
                                                    source: .spool(name: binary, sidecar: nil, droppedMilliseconds: 990), now: 1000).transactionID
        #expect(try await store.view(ref: id).source == ExpenseSource(kind: .spool, name: #"s\xff\x0a.JPG"#, droppedMilliseconds: 990))
        #expect(try await late(store, "s.json") == .noReceipt, "another stem")
        let outcome = try await store.enqueueLateSidecar(fields: sidecar, sidecarName: FileName(bytes: [0x73, 0xFF, 0x0A] + Array(".json".utf8))!,
                                                         account: AccountName.defaultName, since: 0, files: [], now: 2000)
        #expect(outcome == .edited(transactionID: id, receiptName: binary, filled: ["merchant", "amount", "currency", "date"], kept: []))
        #expect(try await store.view(ref: id).fields == sidecar)
    }

    @Test func aLateSidecar_findsOnlyItsOwnersReceipt_takenWithinTheWindow_andNotBeingDeleted() async throws {
        let dir = TemporaryDirectory()
        let store = try Store(stateDirectory: dir.at("state"))
        _ = try await takeReceipt(store, "a.jpg", account: "alice")
        #expect(try await late(store, "a.json", account: "bob") == .noReceipt, "another owner's receipt is not this sidecar's")
        #expect(try await late(store, "a.json", account: "alice", since: 1001) == .noReceipt, "taken before the window")
        let deleted = try await takeReceipt(store, "d.jpg")
        _ = try await store.delete(ref: deleted, now: 1500)
        #expect(try await late(store, "d.json") == .noReceipt, "an expense no longer there")
        // One the server has, with its delete queued: still there, on its way out.
        let leaving = try await takeReceipt(store, "e.jpg")
        let create = try #require(try await store.claim(limit: 10, now: 1100).first { $0.transactionID == leaving })
        let synced = CanonicalExpense(transactionID: leaving, clientID: create.uuid, version: 1,
                                      createdAt: "2026-06-01T09:00:00.000Z", updatedAt: "2026-06-01T09:00:00.000Z")
        _ = try await store.complete([(create, .applied(synced), false)], now: 1200)
        _ = try await store.delete(ref: leaving, now: 1500)
        #expect(try await store.view(ref: leaving).state == .deleting)
        #expect(try await late(store, "e.json") == .noReceipt, "an expense being deleted")
        guard case .edited = try await late(store, "a.json", account: "alice", since: 1000) else {
            Issue.record("alice's own receipt, within the window, is found")
            return
        }
        #expect(try await late(store, "a.json", account: "alice") == .noReceipt, "once it has had its sidecar, never again")
    }

    @Test func anAddWithAReceiptPath_keepsIt_andOneWithoutAReceiptKeepsNothing() async throws {
        let dir = TemporaryDirectory()
        let store = try Store(stateDirectory: dir.at("state"))
        let path = dir.at("r.jpg")
        SampleReceipt.write(SampleReceipt.jpeg(), to: path)
        let staged = try store.receipts.stage(from: try FileDescriptor.open(path, .readOnly), jobUUID: ClientID.make(), maxBytes: 1 << 20)
        let withReceipt = try await store.enqueueCreate(fields: ExpenseFields(), clientID: ClientID.make(), receipt: staged, now: 5,
                                                        receiptPath: "/home/ann/r\n.jpg")
        let without = try await store.enqueueCreate(fields: sidecar, clientID: ClientID.make(), receipt: nil, now: 6, receiptPath: "/x.jpg")
        #expect(try await store.view(ref: withReceipt.transactionID).source == ExpenseSource(kind: .file, name: #"/home/ann/r\x0a.jpg"#))
        #expect(try await store.view(ref: without.transactionID).source == nil)
        #expect(try await store.views().map(\.source?.kind) == [.file, nil])
    }
}
