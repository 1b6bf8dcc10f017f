import ExpenseCore
import Glibc
@testable import OutboxStore
import ExpenseTestSupport
import Posix
import SQLite
import Synchronization
import Testing

/// The store's side of the bounded outbox (docs/sync.md, "A bounded
/// outbox"): the receipt bytes it counts, the limits checked in the add's
/// transaction, a full disk refusing an add with nothing left of it, and
/// the headroom the drain gives up and takes back.
@Suite struct StoreRoomTests {
    let directory = TemporaryDirectory(prefix: "store-room")

    func stage(_ store: Store, size: Int, label: String = ClientID.make()) throws -> StagedReceipt {
        let path = directory.at("in-\(ClientID.make()).jpg")
        SampleReceipt.write(ReceiptBytes.make(.jpeg, size: size, label: label), to: path)
        return try store.receipts.stage(from: try FileDescriptor.open(path, .readOnly), jobUUID: ClientID.make(), maxBytes: 1 << 20, digesting: true)
    }

    @discardableResult
    func add(_ store: Store, receiptSize: Int? = nil, clientID: String = ClientID.make()) async throws -> EnqueueResult {
        let staged = try receiptSize.map { try stage(store, size: $0) }
        return try await store.enqueueCreate(fields: ExpenseFields(merchant: "Room"), clientID: clientID, receipt: staged, now: 1)
    }

    /// The counter against a count of the rows it stands for.
    func receiptBytes(_ store: Store) async throws -> (counted: Int64, scanned: Int64) {
        try await store.read { db in
            let counted = try db.scalarInt("SELECT value FROM counters WHERE name = 'receipt_bytes'") ?? -1
            let scanned = (try db.scalarInt("SELECT coalesce(sum(receipt_size), 0) FROM jobs") ?? 0)
                + (try db.scalarInt("SELECT coalesce(sum(size), 0) FROM receipt_copies WHERE file IS NOT NULL") ?? 0)
            return (counted, scanned)
        }
    }

    @Test func receiptBytes_followUploadsAndCopies_untilSent() async throws {
        let store = try Store(stateDirectory: directory.at("state"))
        let first = try await add(store, receiptSize: 3000)
        try await add(store, receiptSize: 5000)
        try await add(store)
        #expect(try await receiptBytes(store) == (8000, 8000))
        // A legible copy made of the first counts too, beside its original.
        let pending = try #require(try await store.pendingCopies().first { $0.transactionID == first.transactionID })
        let copy = ReceiptBytes.make(.jpeg, size: 700, label: "copy")
        let copyName = "\(ClientID.make()).jpg"
        try store.receipts.write(copy, as: copyName)
        try await store.recordCopy(pending, .copy(fileName: copyName, kind: .jpeg, size: 700, sha256: [1]), now: 2)
        try await store.recordCopiesAsTheyAre()
        #expect(try await receiptBytes(store) == (8700, 8700))
        let use = try await store.roomState().use
        #expect(use.jobs == 5 && use.receiptBytes == 8700)
        // The file system's free space as statvfs says it (other tests write beside this one: no exact figure).
        let space = try FileSystem.space(of: directory.at("state"))
        #expect(use.diskFreeBytes.map { $0 > 0 && $0 <= space.totalBytes } == true, "\(use)")
        // Sent: the upload's job goes, and its copy's row with it; the kept original is no longer the outbox's.
        while true {
            let jobs = try await store.claim(limit: 10, now: 3)
            if jobs.isEmpty { break }
            _ = try await store.complete(jobs.map { ($0, JobUpdate.applied(nil), false) }, now: 4)
        }
        #expect(try await receiptBytes(store) == (0, 0))
        #expect(try await store.originals(of: first.transactionID).count == 1)
        // A discard takes its bytes too.
        let discarded = try await add(store, receiptSize: 4000)
        #expect(try await receiptBytes(store) == (4000, 4000))
        _ = try await store.discard(ref: discarded.transactionID)
        #expect(try await receiptBytes(store) == (0, 0))
    }

    @Test func theMigration_countsWhatIsQueuedAlready() async throws {
        let state = directory.at("state")
        do {
            let store = try Store(stateDirectory: state)
            try await add(store, receiptSize: 3000)
            try await add(store, receiptSize: 1000)
            try await store.write { db, _ in
                try SchemaRollback.back(db, to: 9)
                return ((), [])
            }
        }
        let reopened = try Store(stateDirectory: state)
        #expect(try await receiptBytes(reopened) == (4000, 4000))
        try await add(reopened, receiptSize: 500)
        #expect(try await receiptBytes(reopened) == (4500, 4500))
    }

    @Test func atTheJobLimit_anAddIsRefused_withNothingLeft_andARetryIsStillAnswered() async throws {
        let store = try Store(stateDirectory: directory.at("state"),
                              room: RoomSettings(limits: OutboxLimits(maxJobs: 3, maxReceiptBytes: .max, diskReserveBytes: 0)))
        let kept = try await add(store, receiptSize: 2000)
        try await add(store)
        #expect(store.receipts.path.isEmpty == false)
        let filesBefore = try FileSystem.contents(of: store.receipts.path).count
        await #expect(throws: OutboxRefusal.jobs(queued: 3, incoming: 2, limit: 3)) { try await add(store, receiptSize: 2000) }
        #expect(try FileSystem.contents(of: store.receipts.path).count == filesBefore, "the staged copy of the refused receipt is gone")
        await #expect(throws: OutboxRefusal.jobs(queued: 3, incoming: 1, limit: 3)) { try await add(store) }
        #expect(try await store.summary().queued == 3)
        // The client whose answer was lost asks again: it is queued already.
        let again = try await add(store, clientID: kept.clientID)
        #expect(again.isNew == false && again.transactionID == kept.transactionID)
        // Checked before the copy too, with the receipt's size.
        await #expect(throws: OutboxRefusal.jobs(queued: 3, incoming: 2, limit: 3)) { try await store.admit(.add(receiptBytes: 10, copied: false)) }
    }

    @Test func concurrentAdds_neverPassTheLimitTogether() async throws {
        let store = try Store(stateDirectory: directory.at("state"),
                              room: RoomSettings(limits: OutboxLimits(maxJobs: 7, maxReceiptBytes: .max, diskReserveBytes: 0)))
        let outcomes = await withTaskGroup(of: Bool.self) { group in
            for _ in 0..<40 {
                group.addTask { (try? await add(store)) != nil }
            }
            return await group.reduce(into: [Bool]()) { $0.append($1) }
        }
        #expect(outcomes.filter { $0 }.count == 7)
        #expect(try await store.summary().queued == 7)
    }

    @Test func theReceiptByteLimit_countsTheIncomingReceipt() async throws {
        let store = try Store(stateDirectory: directory.at("state"),
                              room: RoomSettings(limits: OutboxLimits(maxJobs: 100, maxReceiptBytes: 10_000, diskReserveBytes: 0)))
        try await add(store, receiptSize: 6000)
        try await add(store, receiptSize: 4000)
        await #expect(throws: OutboxRefusal.receiptBytes(held: 10_000, incoming: 2000, limit: 10_000)) { try await add(store, receiptSize: 2000) }
        try await add(store)
        #expect(try await receiptBytes(store) == (10_000, 10_000))
    }

    /// The disk check with the file system's figures given by the test:
    /// the reserve, and no add at all while the drain's headroom is given up.
    @Test func belowTheReserve_anAddIsRefused_andWhileTheHeadroomIsGivenUpEveryAdd() async throws {
        let available = Mutex<Int64>(100 << 20)
        let state = directory.at("state")
        let store = try Store(stateDirectory: state, room: RoomSettings(
            limits: OutboxLimits(maxJobs: 100, maxReceiptBytes: .max, diskReserveBytes: 10 << 20), headroomBytes: 1 << 20,
            space: { _ in FileSystemSpace(totalBytes: 200 << 20, availableBytes: available.withLock { $0 }) }))
        // Not set aside yet: the file system counts as full.
        await #expect(throws: OutboxRefusal.diskFull(directory: state, cause: "the drain is using the room set aside for it")) {
            try await store.admit(.add(receiptBytes: nil, copied: false))
        }
        try store.establishHeadroom()
        available.withLock { $0 = (10 << 20) - 1 }
        await #expect(throws: OutboxRefusal.diskReserve(directory: state, free: (10 << 20) - 1, incoming: 0, reserve: 10 << 20)) {
            try await add(store)
        }
        #expect(FileSystem.exists("\(state)/expensed.headroom"))
        #expect(try FileSystem.status("\(state)/expensed.headroom").size == 1 << 20)
        available.withLock { $0 = 10 << 20 }
        try await add(store)
        await #expect(throws: OutboxRefusal.diskReserve(directory: state, free: 10 << 20, incoming: 5000, reserve: 10 << 20)) {
            try await store.admit(.add(receiptBytes: 5000, copied: false))
        }
        // The drain gives it up: adds see the same room as before.
        #expect(await store.makeRoomForDrain())
        #expect(!FileSystem.exists("\(state)/expensed.headroom"))
        #expect(try await store.roomState().headroomHeld == false)
        available.withLock { $0 = 20 << 20 }
        await #expect(throws: OutboxRefusal.diskFull(directory: state, cause: "the drain is using the room set aside for it")) { try await add(store) }
        // Less than twice its size free: not yet.
        available.withLock { $0 = (2 << 20) - 1 }
        store.restoreHeadroom()
        _ = try await store.summary()
        #expect(try await store.roomState().headroomHeld == false)
        // Room for it twice over: set aside again, on the store's queue, and adds are taken.
        available.withLock { $0 = 50 << 20 }
        store.restoreHeadroom()
        _ = try await store.summary()
        #expect(try await store.roomState().headroomHeld == true)
        #expect(try FileSystem.status("\(state)/expensed.headroom").size == 1 << 20)
        try await add(store)
    }

    /// SQLite's own `SQLITE_FULL` (a database that may not grow, as on a
    /// full disk): the add is refused as a full disk, its staged receipt
    /// removed, nothing queued; the same add goes in once there is room.
    @Test func aCommitThatFindsTheDiskFull_refusesTheAdd_withNothingLeft() async throws {
        let state = directory.at("state")
        let store = try Store(stateDirectory: state)
        let pages = try await store.read { db in try db.scalarInt("PRAGMA page_count") ?? 0 }
        _ = try await store.read { db in try db.scalarInt("PRAGMA max_page_count = \(pages)") }
        let filesBefore = try FileSystem.contents(of: store.receipts.path).count
        var refused = 0
        for _ in 0..<50 {
            do {
                try await add(store, receiptSize: 2000)
            } catch let refusal as OutboxRefusal {
                guard case .diskFull(let where_, let cause) = refusal else { Issue.record("\(refusal)"); break }
                #expect(where_ == state && cause.hasPrefix("the database could not commit: "), "\(cause)")
                refused += 1
                break
            }
        }
        #expect(refused == 1, "the database filled its pages")
        let queued = try await store.summary().queued
        #expect(try FileSystem.contents(of: store.receipts.path).count == filesBefore + queued / 2, "no staged file without its job")
        _ = try await store.read { db in try db.scalarInt("PRAGMA max_page_count = 1000000") }
        try await add(store, receiptSize: 2000)
        #expect(try await store.summary().queued == queued + 2)
    }

    @Test func fullDiskErrors_areRefusals_andOthersAreNot() throws {
        let store = try Store(stateDirectory: directory.at("state"))
        let noSpace = SystemCallError(call: "write", errno: ENOSPC)
        #expect(store.refusal(forFailure: ReceiptError.io(noSpace))?.reason == .diskFull)
        #expect(store.refusal(forFailure: SystemCallError(call: "write", errno: EDQUOT))?.reason == .diskFull)
        #expect(store.refusal(forFailure: SQLiteError(code: 13, message: "database or disk is full"))?.reason == .diskFull)
        #expect(store.refusal(forFailure: SQLiteError(code: 10, message: "disk I/O error")) == nil)
        #expect(store.refusal(forFailure: ReceiptError.io(SystemCallError(call: "write", errno: EIO))) == nil)
        #expect(store.refusal(forFailure: ReceiptError.tooLarge(limit: 5)) == nil)
    }

    @Test func refusals_areCountedSinceStartAndInTotal() async throws {
        let state = directory.at("state")
        do {
            let store = try Store(stateDirectory: state)
            store.countRefusal(.jobs(queued: 1, incoming: 1, limit: 1))
            store.countRefusal(.jobs(queued: 1, incoming: 1, limit: 1))
            store.countRefusal(.diskFull(directory: state, cause: "x"))
            _ = try await store.write(durability: .durable) { _, _ in ((), []) }
            let counts = try await store.refusalCounts()
            #expect(counts.sinceStart == ["jobs": 2, "disk_full": 1])
            #expect(counts.total == ["jobs": 2, "disk_full": 1])
        }
        let reopened = try Store(stateDirectory: state)
        reopened.countRefusal(.receiptBytes(held: 1, incoming: 1, limit: 1))
        _ = try await reopened.write(durability: .durable) { _, _ in ((), []) }
        let counts = try await reopened.refusalCounts()
        #expect(counts.sinceStart == ["receipt_bytes": 1])
        #expect(counts.total == ["jobs": 2, "disk_full": 1, "receipt_bytes": 1])
    }
}
