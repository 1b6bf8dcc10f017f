import Digest
import ExpenseCore
@testable import OutboxStore
import ExpenseTestSupport
import Posix
import SQLite
import Testing

@Suite struct StoreSpoolTests {
    let fields = ExpenseFields(merchant: "Blue Bottle", amount: "12.50", currency: "EUR", date: "2026-11-29")

    func record(clientID: String, index: Int = 0, inode: UInt64 = UInt64.max - 7) -> SpoolIntakeRecord {
        SpoolIntakeRecord(name: FileName(bytes: [0xFF, 0x0A] + Array(".json".utf8))!,
                          takenName: FileName(".expensed-taken-\(clientID)-\(index)")!,
                          device: 2049, inode: inode, size: 9000, modified: 1_700_000_000_123_456_789,
                          changed: 1_700_000_001_987_654_321, digest: SHA256.hash(Array("the bytes".utf8)))
    }

    static let source = SourceRecord.spool(name: FileName("a.jpg")!, sidecar: nil, droppedMilliseconds: 1)

    @Test func enqueue_recordsTheFilesInTheSameTransaction() async throws {
        let dir = TemporaryDirectory()
        let store = try Store(stateDirectory: dir.at("state"))
        let clientID = ClientID.make()
        let file = record(clientID: clientID)
        let queued = try await store.enqueueSpoolCreate(fields: fields, clientID: clientID, receipt: nil, files: [file], source: Self.source, now: 5)
        #expect(queued.transactionID == TransactionID.derive(from: clientID))
        let records = try store.spoolIntakeRecords()
        #expect(records.map(\.record) == [file], "names, inode, times and digest survive the round trip")
        #expect(records.map(\.clientID) == [clientID])
        #expect(records.first?.record.isProof == true)
        #expect(try await store.views().map(\.fields) == [fields])
    }

    @Test func theSameInodeSizeAndTimeAgain_isANewFile_neverAJobAlready() async throws {
        // What the file system hands out again, and a writer can copy,
        // says nothing about which file it is.
        let dir = TemporaryDirectory()
        let store = try Store(stateDirectory: dir.at("state"))
        let first = ClientID.make(), second = ClientID.make()
        _ = try await store.enqueueSpoolCreate(fields: fields, clientID: first, receipt: nil, files: [record(clientID: first)], source: Self.source, now: 5)
        let again = try await store.enqueueSpoolCreate(fields: fields, clientID: second, receipt: nil, files: [record(clientID: second)], source: Self.source, now: 6)
        #expect(again.isNew && again.clientID == second)
        #expect(try await store.views().count == 2)
        #expect(Set(try store.spoolIntakeRecords().map(\.clientID)) == [first, second], "a row each, by private name")
    }

    @Test func forget_removesTheRecords() async throws {
        let dir = TemporaryDirectory()
        let store = try Store(stateDirectory: dir.at("state"))
        let clientID = ClientID.make()
        let files = [record(clientID: clientID, index: 0), record(clientID: clientID, index: 1, inode: 12)]
        _ = try await store.enqueueSpoolCreate(fields: fields, clientID: clientID, receipt: nil, files: files, source: Self.source, now: 5)
        try await store.forgetSpoolIntake([files[0]])
        #expect(try store.spoolIntakeRecords().map(\.record) == [files[1]])
        try store.forgetSpoolIntakeNow([files[1]])
        #expect(try store.spoolIntakeRecords().isEmpty)
        #expect(try await store.views().count == 1, "the job stays")
    }

    @Test func aFailedCommit_removesTheStagedReceiptCopy() async throws {
        let dir = TemporaryDirectory()
        let store = try Store(stateDirectory: dir.at("state"))
        let clientID = ClientID.make()
        _ = try await store.enqueueSpoolCreate(fields: fields, clientID: clientID, receipt: nil, files: [record(clientID: clientID)], source: Self.source, now: 5)
        let source = dir.at("r.jpg")
        SampleReceipt.write(SampleReceipt.jpeg(), to: source)
        let staged = try store.receipts.stage(from: try FileDescriptor.open(source, .readOnly), jobUUID: ClientID.make(), maxBytes: 1 << 20)
        #expect(FileSystem.exists(store.receipts.filePath(staged.fileName)))
        // The same private name twice breaks the row's key: the commit fails.
        await #expect(throws: (any Error).self) {
            _ = try await store.enqueueSpoolCreate(fields: fields, clientID: ClientID.make(), receipt: staged,
                                                   files: [record(clientID: clientID)], source: Self.source, now: 6)
        }
        #expect(!FileSystem.exists(store.receipts.filePath(staged.fileName)))
        #expect(try await store.views().count == 1, "nothing half-made")
    }

    @Test func aDatabaseOfSchema1_withIntakeRows_opensAndKeepsThemAsProvingNothing() async throws {
        let dir = TemporaryDirectory()
        let state = dir.at("state")
        try FileSystem.makeDirectories(state)
        let clientID = ClientID.make()
        do {
            // What the previous version left after a crash between commit and removal.
            let db = try Connection(path: "\(state)/expensed.db")
            try db.migrate([Schema.migrations[0]])
            try db.execute("INSERT INTO settings (key, value) VALUES ('device_id', ?)", [.text(ClientID.make())])
            try db.execute("""
                INSERT INTO jobs (seq, uuid, kind, transaction_id, payload, created_at) VALUES (1, ?, 'create', ?, '{"fields":{}}', 1)
                """, [.text(clientID), .text(TransactionID.derive(from: clientID))])
            for (inode, name) in [(Int64(41), "a.jpg"), (Int64(-2), "a.json")] {
                try db.execute("""
                    INSERT INTO spool_intake (device, inode, size, modified, name, client_id, taken_at) VALUES (7, ?, 10, 20, ?, ?, 30)
                    """, [.integer(inode), .blob(Array(name.utf8)), .text(clientID)])
            }
        }
        let store = try Store(stateDirectory: state)
        let rows = try store.spoolIntakeRecords()
        #expect(rows.map(\.record.name.displayName) == ["a.jpg", "a.json"])
        #expect(rows.map(\.clientID) == [clientID, clientID])
        #expect(rows.allSatisfy { !$0.record.isProof && $0.record.digest == nil && $0.record.changed == nil })
        #expect(rows.map(\.record.inode) == [41, UInt64(bitPattern: -2)], "inodes as the old rows had them")
        #expect(try await store.views().count == 1, "the job is kept")
        // New rows go in beside them.
        let newID = ClientID.make()
        _ = try await store.enqueueSpoolCreate(fields: fields, clientID: newID, receipt: nil, files: [record(clientID: newID, inode: 41)], source: Self.source, now: 40)
        #expect(try store.spoolIntakeRecords().count == 3)
        try store.forgetSpoolIntakeNow(rows.map(\.record))
        #expect(try store.spoolIntakeRecords().map(\.clientID) == [newID])
    }
}
