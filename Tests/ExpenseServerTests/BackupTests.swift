import Digest
import ExpenseCore
import ExpenseTestSupport
import Foundation
import Postgres
import ServerAccounts
import ServerStorage
import SQLite
import SQLiteStorage
import Synchronization
import Testing

/// Backups, proved by restoring them: `expense-server backup` for SQLite
/// (taken while the server writes), `pg_dump` for PostgreSQL.
@Suite struct BackupTests {
    let binary = BuiltProducts.path("expense-server")

    /// Makes `count` expenses with a receipt each; returns id → receipt bytes.
    private func expensesWithReceipts(_ server: TestServer, _ count: Int, from start: Int = 0) throws -> [String: [UInt8]] {
        var made: [String: [UInt8]] = [:]
        for n in start..<start + count {
            let id = try #require(try server.create(key: TestServer.key()).transactionID)
            let bytes = TestServer.png(3000 + n * 17, seed: UInt8(n % 251))
            #expect(try server.putReceipt(id, key: TestServer.key(), bytes: bytes).status == 200)
            made[id] = bytes
        }
        return made
    }

    @Test func sqliteBackup_takenWhileTheServerWrites_restoresToAServerWithEveryReceiptWhole() throws {
        let server = try TestServer(.sqlite)
        let before = try expensesWithReceipts(server, 40)
        let ids = Array(before.keys)
        // Writes go on during the backup: new expenses, and receipts
        // replaced (their old files removed right after each commit).
        let stop = Atomic<Bool>(false)
        let writes = Atomic<Int>(0)
        let writer = DispatchGroup()
        writer.enter()
        Thread {
            var n = 0
            while !stop.load(ordering: .relaxed) {
                n += 1
                let bytes = TestServer.png(2000 + n, seed: UInt8(n % 251))
                if (try? server.putReceipt(ids[n % ids.count], key: TestServer.key(), bytes: bytes).status) == 200,
                   (try? server.create(key: TestServer.key()).status) == 201 {
                    writes.add(1, ordering: .relaxed)
                }
            }
            writer.leave()
        }.start()
        try waitUntil(timeout: 30, "writes to be under way") { writes.load(ordering: .relaxed) >= 5 }
        let destination = server.directory.at("backup")
        let result = try runCommand(binary, ["backup", destination, "--data-dir", server.dataDirectory])
        stop.store(true, ordering: .relaxed)
        writer.wait()
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stdout.hasPrefix("backed up "), "\(result.stdout)")
        #expect(result.stdout.hasSuffix(" to \(destination)\n"))
        #expect(writes.load(ordering: .relaxed) > 5)

        let copy = try SQLite.Connection(path: "\(destination)/expense-server.db")
        #expect(try copy.queryFirst("PRAGMA integrity_check") { $0.string(0) } == "ok")
        let rows = try copy.query("SELECT transaction_id, receipt_file, receipt_sha256 FROM expenses") { ($0.string(0), $0.optionalString(1), $0.optionalString(2)) }
        #expect(rows.count >= 40)
        // Only the files the copy names, each there.
        let files = try FileManager.default.contentsOfDirectory(atPath: "\(destination)/receipts").sorted()
        #expect(files == rows.compactMap(\.1).sorted())

        // Restored: a server on the copy serves every receipt whole.
        server.process.stop()
        let restored = try ServerProcess(dataDirectory: destination, outputDirectory: server.directory.path, token: server.token)
        let connection = try restored.connect()
        for (id, _, digest) in rows {
            let get = try connection.request("GET", "/v1/expenses/\(id)/receipt", headers: [("Authorization", "Bearer \(server.token)")])
            if let digest {
                #expect(get.status == 200, "\(id)")
                #expect(Hex.encode(SHA256.hash(get.body)) == digest, "\(id)")
            } else {
                #expect(get.errorCode == "receipt_not_found")
            }
        }
    }

    @Test func sqliteBackup_intoAFolderThatExists_failsAndTouchesNothing() throws {
        let server = try TestServer(.sqlite)
        _ = try expensesWithReceipts(server, 2)
        let destination = server.directory.at("taken")
        try FileManager.default.createDirectory(atPath: destination, withIntermediateDirectories: false)
        let result = try runCommand(binary, ["backup", destination, "--data-dir", server.dataDirectory])
        #expect(result.status == 1)
        #expect(result.stderr.hasPrefix("expense-server: Failed to back up data directory '\(server.dataDirectory)' to '\(destination)': mkdir"), "\(result.stderr)")
        #expect(result.stderr.contains("File exists"))
        #expect(try FileManager.default.contentsOfDirectory(atPath: destination).isEmpty)
    }

    @Test func pgDump_restoredIntoAnotherDatabase_servesTheSameExpensesAndReceipts() throws {
        let server = try TestServer(.postgres)
        let made = try expensesWithReceipts(server, 20)
        let original = try server.get("/v1/expenses?limit=1000")
        let source = try #require(server.storage.database)
        let dump = server.directory.at("expenses.dump")
        let cluster = try PostgresCluster.shared
        let dumped = try cluster.run("pg_dump", ["--format=custom", "--file", dump, "--dbname", source])
        #expect(dumped.status == 0, "\(dumped.stderr)")
        let target = try cluster.makeDatabase()
        let restoredDB = try cluster.run("pg_restore", ["--no-owner", "--exit-on-error", "--dbname", target, dump])
        #expect(restoredDB.status == 0, "\(restoredDB.stderr)")

        server.process.stop()
        let restored = try ServerProcess(dataDirectory: server.directory.at("restored"), database: target,
                                         outputDirectory: server.directory.path, token: server.token)
        let connection = try restored.connect()
        let auth = [("Authorization", "Bearer \(server.token)")]
        #expect(try connection.request("GET", "/v1/expenses?limit=1000", headers: auth).body == original.body)
        for (id, bytes) in made {
            #expect(try connection.request("GET", "/v1/expenses/\(id)/receipt", headers: auth).body == bytes, "\(id)")
        }
        // And it goes on: the feed continues after the restored positions.
        let next = try connection.request("POST", "/v1/expenses", headers: auth + [("Content-Type", "application/json"), ("Idempotency-Key", TestServer.key())],
                                          body: Array("{}".utf8))
        #expect(next.status == 201)
        let cursor = try #require(original.json?["next_cursor"] as? String)
        let after = try connection.request("GET", "/v1/expenses?since=\(cursor)", headers: auth)
        #expect((after.json?["expenses"] as? [[String: Any]])?.compactMap { $0["transaction_id"] as? String } == [next.transactionID].compactMap { $0 })
    }
}

/// `SQLiteStore.backup` in process, with receipts replaced in each of its
/// windows: before the snapshot, and between the snapshot and the links.
@Suite struct BackupWindowTests {
    private func replace(_ store: SQLiteStore, _ id: String, user: Int64, with bytes: [UInt8]) throws {
        let (file, path) = try store.staging.makeFile()
        try file.writeAll(bytes)
        let upload = StagedReceipt(file: file, path: path, kind: .png, sha256: Hex.encode(SHA256.hash(bytes)), size: Int64(bytes.count))
        let operation = IdempotentOperation(user: user, key: ClientID.make(), method: "PUT", path: "/v1/expenses/\(id)/receipt",
                                            bodyDigest: SHA256.hash(bytes))
        _ = try store.attachReceipt(operation, transactionID: id, upload)
    }

    /// A store with one expense and receipt `a`; then a backup, calling
    /// `during` at each step; then the backup opened as a store.
    private func backUp(during: (SQLiteStore, String, Int64, SQLiteStore.BackupStep) throws -> Void)
        throws -> (summary: SQLiteStore.BackupSummary, restored: [UInt8], files: [String]) {
        let directory = TemporaryDirectory()
        let store = try SQLiteStore(directory: directory.at("data"))
        let accounts = Accounts(store)
        let alice = try #require(try accounts.user(forToken: try accounts.add(named: "alice")))
        let operation = IdempotentOperation(user: alice, key: ClientID.make(), method: "POST", path: "/v1/expenses", bodyDigest: SHA256.hash([]))
        let id = try store.create(operation, CreateRequest(fields: ExpenseFields())).expense.transactionID
        try replace(store, id, user: alice, with: BackupWindowTests.a)
        let summary = try store.backup(to: directory.at("backup")) { try during(store, id, alice, $0) }
        let restored = try SQLiteStore(directory: directory.at("backup"))
        let content = try restored.receipt(of: id, user: alice)
        var bytes = [UInt8](repeating: 0, count: Int(content.size))
        _ = try content.file.read(into: &bytes, at: 0)
        return (summary, bytes, try FileManager.default.contentsOfDirectory(atPath: directory.at("backup/receipts")))
    }

    static let a = TestServer.png(5000, seed: 1)
    static let b = TestServer.png(6000, seed: 2)
    static let c = TestServer.png(7000, seed: 3)

    @Test func receiptReplacedBeforeTheSnapshot_theNewFileIsLinkedAfterIt() throws {
        let result = try backUp { store, id, user, step in
            if step == .linkedFiles { try replace(store, id, user: user, with: Self.b) }
        }
        #expect(result.restored == Self.b)
        #expect(result.files.count == 1, "only the file the snapshot names: \(result.files)")
        #expect(result.summary.snapshots == 1)
    }

    @Test func receiptReplacedAndRemovedBetweenTheSnapshotAndTheLinks_theSnapshotIsTakenAgain() throws {
        let result = try backUp { store, id, user, step in
            switch step {
            case .linkedFiles: try replace(store, id, user: user, with: Self.b)
            case .tookSnapshot(1): try replace(store, id, user: user, with: Self.c)
            case .tookSnapshot: break
            }
        }
        #expect(result.restored == Self.c)
        #expect(result.files.count == 1)
        #expect(result.summary.snapshots == 2)
    }
}
