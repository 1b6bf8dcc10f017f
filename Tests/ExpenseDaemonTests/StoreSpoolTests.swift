import ExpenseCore
@testable import ExpenseDaemon
import ExpenseTestSupport
import Posix
import SQLite
import Testing

@Suite struct StoreSpoolTests {
    let fields = ExpenseFields(merchant: "Blue Bottle", amount: "12.50", currency: "EUR", date: "2026-11-29")
    let file = SpoolIntakeRecord(device: 2049, inode: UInt64.max - 7, size: 9000, modified: 1_700_000_000_123_456_789,
                                 name: FileName(bytes: [0xFF, 0x0A] + Array(".json".utf8))!)

    @Test func enqueue_recordsTheFilesInTheSameTransaction() async throws {
        let dir = TemporaryDirectory()
        let store = try Store(stateDirectory: dir.at("state"))
        let clientID = ClientID.make()
        let result = try await store.enqueueSpoolCreate(fields: fields, clientID: clientID, receipt: nil, files: [file], now: 5)
        guard case .queued(let queued) = result else { throw TestFailure("not queued: \(result)") }
        #expect(queued.transactionID == TransactionID.derive(from: clientID))
        let records = try store.spoolIntakeRecords()
        #expect(records.map(\.record) == [file], "device, inode and the raw name survive the round trip")
        #expect(records.map(\.clientID) == [clientID])
        #expect(try await store.views().map(\.fields) == [fields])
    }

    @Test func sameFileAgain_isAlreadyQueuedAndAddsNothing() async throws {
        let dir = TemporaryDirectory()
        let store = try Store(stateDirectory: dir.at("state"))
        let first = ClientID.make()
        _ = try await store.enqueueSpoolCreate(fields: fields, clientID: first, receipt: nil, files: [file], now: 5)
        let again = try await store.enqueueSpoolCreate(fields: fields, clientID: ClientID.make(), receipt: nil, files: [file], now: 6)
        #expect(again == .alreadyQueued(clientID: first))
        #expect(try await store.views().count == 1)
    }

    @Test func sameInodeChanged_isANewFile() async throws {
        let dir = TemporaryDirectory()
        let store = try Store(stateDirectory: dir.at("state"))
        _ = try await store.enqueueSpoolCreate(fields: fields, clientID: ClientID.make(), receipt: nil, files: [file], now: 5)
        let reused = SpoolIntakeRecord(device: file.device, inode: file.inode, size: 1, modified: file.modified, name: file.name)
        let result = try await store.enqueueSpoolCreate(fields: fields, clientID: ClientID.make(), receipt: nil, files: [reused], now: 6)
        guard case .queued = result else { throw TestFailure("a different file was not queued: \(result)") }
        #expect(try store.spoolIntakeRecords().map(\.record) == [reused], "the stale record was replaced")
        #expect(try await store.views().count == 2)
    }

    @Test func forget_removesTheRecords() async throws {
        let dir = TemporaryDirectory()
        let store = try Store(stateDirectory: dir.at("state"))
        _ = try await store.enqueueSpoolCreate(fields: fields, clientID: ClientID.make(), receipt: nil, files: [file], now: 5)
        try await store.forgetSpoolIntake([file])
        #expect(try store.spoolIntakeRecords().isEmpty)
        #expect(try await store.views().count == 1, "the job stays")
    }

    @Test func alreadyQueued_removesTheStagedReceiptCopy() async throws {
        let dir = TemporaryDirectory()
        let store = try Store(stateDirectory: dir.at("state"))
        _ = try await store.enqueueSpoolCreate(fields: fields, clientID: ClientID.make(), receipt: nil, files: [file], now: 5)
        let source = dir.at("r.jpg")
        SampleReceipt.write(SampleReceipt.jpeg(), to: source)
        let staged = try store.receipts.stage(from: try FileDescriptor.open(source, .readOnly), jobUUID: ClientID.make(), maxBytes: 1 << 20)
        #expect(FileSystem.exists(store.receipts.filePath(staged.fileName)))
        _ = try await store.enqueueSpoolCreate(fields: fields, clientID: ClientID.make(), receipt: staged, files: [file], now: 6)
        #expect(!FileSystem.exists(store.receipts.filePath(staged.fileName)))
    }
}
