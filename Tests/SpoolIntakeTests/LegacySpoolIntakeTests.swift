import DaemonSupport
import ExpenseCore
@testable import SpoolIntake
@testable import OutboxStore
import ExpenseTestSupport
import Foundation
import Posix
import SQLite
import Testing

/// A state directory an older expensed left after a crash between an
/// intake's commit and the removal of its files: schema 1, whose
/// `spool_intake` rows know a file only by inode, size and mtime. The new
/// daemon opens it, and takes those files again (they may be queued
/// twice; nothing in such a row proves which file is the one taken, and
/// losing one is worse): never removed, never left under a private name.
@Suite struct LegacySpoolIntakeTests {
    @Test func aSchema1StateDirectory_withIntakeRows_opens_andItsFilesAreTakenAgain() throws {
        let daemon = DaemonHarness(arguments: ["--spool-settle", "100ms"], spool: true)
        let spool = daemon.spoolDirectory
        try FileSystem.makeDirectories(daemon.stateDirectory)
        let receipt = SpoolDrop.receipt(.jpeg, tag: 5)
        let sidecar = SpoolDrop.sidecar(ExpenseFields(merchant: "Old", amount: "3.00", currency: "EUR", date: "2026-01-01"))
        // The receipt under the private name that version gave it (a crash
        // after the rename), the sidecar under its own (after the commit).
        SampleReceipt.write(receipt, to: "\(spool)/.incoming")
        let receiptStatus = try FileSystem.status("\(spool)/.incoming")
        try FileSystem.rename("\(spool)/.incoming", to: "\(spool)/.expensed-taken-\(receiptStatus.inode)")
        SampleReceipt.write(sidecar, to: "\(spool)/old.json")
        let sidecarStatus = try FileSystem.status("\(spool)/old.json")
        let clientID = ClientID.make()
        do {
            let db = try Connection(path: "\(daemon.stateDirectory)/expensed.db")
            try db.execute("PRAGMA journal_mode = WAL")
            try db.migrate([Schema.migrations[0]])
            #expect(try db.schemaVersion() == 1)
            try db.execute("INSERT INTO settings (key, value) VALUES ('device_id', ?)", [.text(ClientID.make())])
            try db.execute("""
                INSERT INTO jobs (seq, uuid, kind, transaction_id, payload, created_at) VALUES (1, ?, 'create', ?, ?, 1)
                """, [.text(clientID), .text(TransactionID.derive(from: clientID)), .text(try JobPayload.encode(fields: ExpenseFields()))])
            for (name, status) in [("old.jpg", receiptStatus), ("old.json", sidecarStatus)] {
                try db.execute("""
                    INSERT INTO spool_intake (device, inode, size, modified, name, client_id, taken_at) VALUES (?, ?, ?, ?, ?, ?, 1)
                    """, [.integer(Int64(bitPattern: status.device)), .integer(Int64(bitPattern: status.inode)), .integer(status.size),
                          .integer(status.modifiedNanoseconds), .blob(Array(name.utf8)), .text(clientID)])
            }
        }

        try daemon.start()
        defer { daemon.stop() }
        // Put back as old.jpg, it pairs with old.json: one expense more.
        try daemon.waitForSpool(expenses: 2, rejected: 0)
        let queued = try daemon.queuedExpenses()
        #expect(queued.contains { $0.fields.merchant == "Old" && $0.receiptDigest != nil }, "\(queued)")
        #expect(daemon.log.contains("was being taken when an older expensed stopped"))
        try waitUntil("the old rows to be forgotten") { try QueuedExpense.intakeRecords(stateDirectory: daemon.stateDirectory) == 0 }
        let db = try Connection(path: "\(daemon.stateDirectory)/expensed.db", readOnly: true)
        #expect(try db.schemaVersion() == Schema.migrations.count)
    }
}
