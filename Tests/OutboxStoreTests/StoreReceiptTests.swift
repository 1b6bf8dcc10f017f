import Digest
import ExpenseCore
@testable import OutboxStore
import ExpenseTestSupport
import Posix
import SQLite
import Testing

/// The digests `receipt` checks bytes against (`receipt_digests`): which
/// one vouches for the receipt while its upload waits, once it applied,
/// and when a change made elsewhere means none does.
@Suite struct StoreReceiptTests {
    let fields = ExpenseFields(merchant: "Blue Bottle", amount: "12.50", currency: "EUR", date: "2026-11-29")

    /// Stages `bytes` as the daemon does for `add --receipt` (digesting).
    func stage(_ bytes: [UInt8], _ store: Store, _ dir: TemporaryDirectory) throws -> StagedReceipt {
        let path = dir.at("in-\(ClientID.make()).jpg")
        SampleReceipt.write(bytes, to: path)
        return try store.receipts.stage(from: try FileDescriptor.open(path, .readOnly), jobUUID: ClientID.make(), maxBytes: 1 << 20, digesting: true)
    }

    func canonical(_ id: String, version: Int, receipt: Bool = true) -> CanonicalExpense {
        CanonicalExpense(transactionID: id, clientID: ClientID.make(), fields: fields,
                         receiptURL: receipt ? "http://127.0.0.1:1/v1/expenses/\(id)/receipt" : nil, version: version,
                         createdAt: "2026-11-29T09:15:02.123Z", updatedAt: "2026-11-29T09:15:0\(version).000Z")
    }

    /// Sends every due job and answers it with the expense at `version`.
    func answer(_ store: Store, _ id: String, version: Int, now: Int64) async throws {
        try await store.recordCopiesAsTheyAre()
        let jobs = try await store.claim(limit: 10, now: now)
        #expect(!jobs.isEmpty, "a job was due")
        let results = try await store.complete(jobs.map { ($0, JobUpdate.applied(canonical(id, version: version)), false) }, now: now)
        for result in results { _ = try result.get() }
    }

    func digestRows(_ store: Store) async throws -> Int64? {
        try await store.read { db in try db.scalarInt("SELECT count(*) FROM receipt_digests") }
    }

    /// An expense of this device's whose receipt upload applied at version 2.
    func uploaded(_ store: Store, _ dir: TemporaryDirectory) async throws -> (id: String, digest: [UInt8]) {
        let bytes = SampleReceipt.jpeg(seed: 3)
        let added = try await store.enqueueCreate(fields: fields, clientID: ClientID.make(), receipt: try stage(bytes, store, dir), now: 1)
        let id = added.transactionID
        let queued = try await store.receiptSource(ref: id)
        #expect(queued.sha256 == SHA256.hash(bytes), "the daemon's copy is checked against the bytes it took")
        guard case .queued = queued.location else { Issue.record("the upload waits: \(queued.location)"); return (id, []) }
        try await answer(store, id, version: 1, now: 2)  // the create
        try await answer(store, id, version: 2, now: 3)  // the upload
        let synced = try await store.receiptSource(ref: id)
        #expect(synced.location == .synced(receiptURL: canonical(id, version: 2).receiptURL!))
        #expect(synced.sha256 == SHA256.hash(bytes), "the server's copy is this device's upload")
        return (id, SHA256.hash(bytes))
    }

    @Test func refreshOfTheVersionItUploaded_keepsTheDigest() async throws {
        let dir = TemporaryDirectory()
        let store = try Store(stateDirectory: dir.at("state"))
        let (id, digest) = try await uploaded(store, dir)
        _ = try await store.storeRefreshPage([canonical(id, version: 2)], cursor: "c1", now: 4)
        #expect(try await store.receiptSource(ref: id).sha256 == digest)
        _ = try await store.storeRefreshPage([canonical(id, version: 1)], cursor: "c0", now: 5)
        #expect(try await store.receiptSource(ref: id).sha256 == digest, "an older version is not stored, and changes nothing")
    }

    @Test func refreshOfANewerVersion_dropsTheDigest_forTheReceiptMayBeAnotherDevices() async throws {
        let dir = TemporaryDirectory()
        let store = try Store(stateDirectory: dir.at("state"))
        let (id, _) = try await uploaded(store, dir)
        // Another device replaced the receipt: same URL, new version, other bytes.
        _ = try await store.storeRefreshPage([canonical(id, version: 3)], cursor: "c1", now: 4)
        let source = try await store.receiptSource(ref: id)
        #expect(source.location == .synced(receiptURL: canonical(id, version: 3).receiptURL!))
        #expect(source.sha256 == nil, "no digest this device recorded vouches for the server's receipt now")
        #expect(try await digestRows(store) == 0)
    }

    @Test func answerToAnOwnEdit_keepsTheDigest_unlessVersionsWentByElsewhere() async throws {
        let dir = TemporaryDirectory()
        let store = try Store(stateDirectory: dir.at("state"))
        let (id, digest) = try await uploaded(store, dir)
        _ = try await store.edit(ref: id, fields: ExpenseFields(comment: "team lunch"), now: 4)
        try await answer(store, id, version: 3, now: 5)
        #expect(try await store.receiptSource(ref: id).sha256 == digest, "the one step is this device's edit")
        _ = try await store.edit(ref: id, fields: ExpenseFields(comment: "team dinner"), now: 6)
        // Version 4 was another device's (a new receipt, perhaps), never refreshed here.
        try await answer(store, id, version: 5, now: 7)
        #expect(try await store.receiptSource(ref: id).sha256 == nil)
    }

    @Test func newUploadAfterAnotherDevices_isVouchedForAgain() async throws {
        let dir = TemporaryDirectory()
        let store = try Store(stateDirectory: dir.at("state"))
        let (id, _) = try await uploaded(store, dir)
        _ = try await store.storeRefreshPage([canonical(id, version: 3)], cursor: "c1", now: 4)
        let bytes = SampleReceipt.jpeg(seed: 9)
        _ = try await store.attachReceipt(ref: id, try stage(bytes, store, dir), fields: ExpenseFields(), now: 5)
        try await answer(store, id, version: 4, now: 6)
        #expect(try await store.receiptSource(ref: id).sha256 == SHA256.hash(bytes))
        #expect(try await digestRows(store) == 1)
    }

    @Test func uploadsThatNeverApply_takeTheirDigestsWithThem() async throws {
        let dir = TemporaryDirectory()
        let store = try Store(stateDirectory: dir.at("state"))
        let (id, digest) = try await uploaded(store, dir)
        // Replaced while queued: one upload waits, one digest with it, and the applied one stays.
        _ = try await store.attachReceipt(ref: id, try stage(SampleReceipt.jpeg(seed: 4), store, dir), fields: ExpenseFields(), now: 4)
        let newest = SampleReceipt.jpeg(seed: 5)
        _ = try await store.attachReceipt(ref: id, try stage(newest, store, dir), fields: ExpenseFields(), now: 5)
        #expect(try await digestRows(store) == 2)
        #expect(try await store.receiptSource(ref: id).sha256 == SHA256.hash(newest))
        // Discarded: the server's receipt is this device's upload again.
        _ = try await store.discard(ref: id)
        #expect(try await digestRows(store) == 1)
        #expect(try await store.receiptSource(ref: id).sha256 == digest)
        // An expense never sent, deleted: its chain and its digest go.
        let other = try await store.enqueueCreate(fields: fields, clientID: ClientID.make(),
                                                  receipt: try stage(SampleReceipt.jpeg(seed: 6), store, dir), now: 6)
        #expect(try await digestRows(store) == 2)
        _ = try await store.delete(ref: other.transactionID, now: 7)
        #expect(try await digestRows(store) == 1)
    }

    @Test func aNewerFile_landsAfterTheUploadOnItsWay_andSupersedesItWhenThatNeedsAttention() async throws {
        let dir = TemporaryDirectory()
        let store = try Store(stateDirectory: dir.at("state"))
        let (id, _) = try await uploaded(store, dir)
        _ = try await store.attachReceipt(ref: id, try stage(SampleReceipt.jpeg(seed: 4), store, dir), fields: ExpenseFields(), now: 4)
        try await store.recordCopiesAsTheyAre()
        let older = try #require(try await store.claim(limit: 10, now: 5).first)
        let newest = SampleReceipt.jpeg(seed: 5)
        _ = try await store.attachReceipt(ref: id, try stage(newest, store, dir), fields: ExpenseFields(), now: 6)
        try await store.recordCopiesAsTheyAre()
        #expect(try await store.claim(limit: 10, now: 7).isEmpty, "one job of an expense in flight at a time")
        // Rejected once, it backs off: the newer file waits for it rather than overtake it.
        let retry = JobUpdate.retry(nextAttemptAt: 100, attempts: 1, transientAttempts: 0, error: "503", errorClass: "server")
        for result in try await store.complete([(older, retry, false)], now: 8) { _ = try result.get() }
        #expect(try await store.claim(limit: 10, now: 9).isEmpty, "the newer file lands last")
        let again = try await store.claim(limit: 10, now: 100)
        #expect(again.map(\.uuid) == [older.uuid])
        // It needs attention now: the newer one no longer waits for it.
        try await store.markNeedsAttention(again[0], error: "its file is gone")
        let next = try await store.claim(limit: 10, now: 101)
        #expect(next.count == 1 && next.first?.uuid != older.uuid)
        let results = try await store.complete(next.map { ($0, JobUpdate.applied(canonical(id, version: 3)), false) }, now: 102)
        for result in results { _ = try result.get() }
        #expect(try await store.view(ref: id).jobs.isEmpty, "the superseded upload went with the newer one's answer: no retry puts it back")
        #expect(try await store.receiptSource(ref: id).sha256 == SHA256.hash(newest))
        #expect(try await digestRows(store) == 1)
    }
}
