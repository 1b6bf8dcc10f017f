import ExpenseTestSupport
import Foundation
import Synchronization
import SQLite
import Testing

@Suite struct SQLiteTests {
    enum Storage: String, CaseIterable { case memory, file }

    private func open(_ storage: Storage, in dir: TemporaryDirectory) throws -> Connection {
        try Connection(path: storage == .memory ? ":memory:" : dir.at("test.db"))
    }

    @Test(arguments: Storage.allCases)
    func roundTrip_ofEveryValueType(_ storage: Storage) throws {
        let dir = TemporaryDirectory()
        let db = try open(storage, in: dir)
        try db.execute("CREATE TABLE t (i INTEGER, r REAL, s TEXT, b BLOB, n TEXT)")
        try db.execute("INSERT INTO t VALUES (?, ?, ?, ?, ?)", [.integer(Int64.max), .real(1.5), .text("héllo\u{0}x"), .blob([0, 1, 255]), .null])
        let row = try db.queryFirst("SELECT i, r, s, b, n FROM t") { r in
            (r.int64(0), r.double(1), r.string(2), r.blob(3), r.optionalString(4))
        }
        #expect(row?.0 == Int64.max)
        #expect(row?.1 == 1.5)
        #expect(row?.2 == "héllo\u{0}x")
        #expect(row?.3 == [0, 1, 255])
        #expect(row?.4 == nil)
    }

    @Test(arguments: Storage.allCases)
    func transaction_rollsBackWhenTheBodyThrows(_ storage: Storage) throws {
        let dir = TemporaryDirectory()
        let db = try open(storage, in: dir)
        try db.execute("CREATE TABLE t (x INTEGER UNIQUE)")
        #expect(throws: SQLiteError.self) {
            try db.transaction {
                try db.execute("INSERT INTO t VALUES (1)", [])
                try db.execute("INSERT INTO t VALUES (1)", [])
            }
        }
        #expect(try db.scalarInt("SELECT count(*) FROM t") == 0)
    }

    @Test func uniqueViolation_isRecognized() throws {
        let db = try Connection(path: ":memory:")
        try db.execute("CREATE TABLE t (x TEXT UNIQUE)")
        try db.execute("INSERT INTO t VALUES ('a')", [])
        do {
            try db.execute("INSERT INTO t VALUES ('a')", [])
            Issue.record("duplicate accepted")
        } catch {
            #expect(error.isUniqueConstraint)
            #expect(error.sql?.contains("INSERT") == true)
        }
    }

    @Test func errors_showSQLButNotBoundValues() throws {
        let db = try Connection(path: ":memory:")
        try db.execute("CREATE TABLE t (x TEXT NOT NULL CHECK (length(x) < 3))")
        do {
            try db.execute("INSERT INTO t VALUES (?)", [.text("secret-merchant")])
            Issue.record("check passed")
        } catch {
            #expect(!error.description.contains("secret-merchant"))
        }
    }

    @Test func migrations_recordThemselvesAndRefuseNewerSchemas() throws {
        let dir = TemporaryDirectory()
        let path = dir.at("m.db")
        let v1 = [Migration(version: 1, sql: "CREATE TABLE a (x)")]
        let v2 = v1 + [Migration(version: 2, sql: "CREATE TABLE b (y)")]
        do {
            let db = try Connection(path: path)
            try db.migrate(v2)
            #expect(try db.schemaVersion() == 2)
            try db.migrate(v2)
            #expect(try db.scalarInt("SELECT count(*) FROM schema_migrations") == 2)
        }
        let db = try Connection(path: path)
        #expect(throws: MigrationError.self) { try db.migrate(v1) }
        #expect(try db.schemaVersion() == 2)
    }

    @Test func migration_thatFails_leavesTheOldSchema() throws {
        let db = try Connection(path: ":memory:")
        try db.migrate([Migration(version: 1, sql: "CREATE TABLE a (x)")])
        #expect(throws: MigrationError.self) {
            try db.migrate([Migration(version: 1, sql: "CREATE TABLE a (x)"), Migration(version: 2, sql: "CREATE TABLE c (z); SELECT nonsense(")])
        }
        #expect(try db.schemaVersion() == 1)
        #expect(try db.scalarInt("SELECT count(*) FROM sqlite_master WHERE name = 'c'") == 0)
    }

    @Test func notADatabase_isReportedAndTheFileUntouched() throws {
        let dir = TemporaryDirectory()
        let path = dir.at("junk.db")
        let junk = Data(repeating: 0x41, count: 4096)
        _ = FileManager.default.createFile(atPath: path, contents: junk)
        do {
            let db = try Connection(path: path)
            try db.execute("PRAGMA journal_mode = WAL")
            Issue.record("opened a file that is not a database")
        } catch {
            #expect(error.isNotADatabase)
        }
        #expect(FileManager.default.contents(atPath: path) == junk)
    }

    @Test func databaseQueue_groupCommitsConcurrentWrites() async throws {
        let dir = TemporaryDirectory()
        let queue = try DatabaseQueue(path: dir.at("q.db")) { db in
            try db.execute("PRAGMA journal_mode = WAL; PRAGMA synchronous = FULL")
            try db.execute("CREATE TABLE t (x INTEGER UNIQUE)")
        }
        try await withThrowingTaskGroup(of: Void.self) { group in
            for i in 0..<200 {
                group.addTask { try await queue.write { db in try db.execute("INSERT INTO t VALUES (?)", [.integer(Int64(i))]) } }
            }
            try await group.waitForAll()
        }
        let count = try await queue.read { db in try db.scalarInt("SELECT count(*) FROM t") }
        #expect(count == 200)
    }

    @Test func databaseQueue_oneFailingWriteUndoesOnlyItself() async throws {
        let dir = TemporaryDirectory()
        let queue = try DatabaseQueue(path: dir.at("q.db")) { db in
            try db.execute("CREATE TABLE t (x INTEGER UNIQUE)")
        }
        let results = await withTaskGroup(of: Bool.self) { group in
            for i in [1, 2, 2, 3, 3, 4] {
                group.addTask {
                    do {
                        try await queue.write { db -> Void in
                            try db.execute("INSERT INTO t VALUES (?)", [.integer(Int64(i))])
                            // A second statement in the same write is undone with it.
                            try db.execute("INSERT INTO t VALUES (?)", [.integer(Int64(i + 100))])
                        }
                        return true
                    } catch {
                        return false
                    }
                }
            }
            var collected: [Bool] = []
            for await ok in group { collected.append(ok) }
            return collected
        }
        #expect(results.filter { $0 }.count == 4)
        let rows = try await queue.read { db in try db.query("SELECT x FROM t ORDER BY x") { $0.int(0) } }
        #expect(rows == [1, 2, 3, 4, 101, 102, 103, 104])
    }

    @Test func databaseQueue_aFailingWriteAloneLeavesNothingBehind() async throws {
        let dir = TemporaryDirectory()
        let queue = try DatabaseQueue(path: dir.at("q.db")) { db in
            try db.execute("CREATE TABLE t (x INTEGER UNIQUE)")
        }
        try await queue.write { db in try db.execute("INSERT INTO t VALUES (1)", []) }
        await #expect(throws: SQLiteError.self) {
            try await queue.write { db -> Void in
                try db.execute("INSERT INTO t VALUES (2)", [])
                try db.execute("INSERT INTO t VALUES (1)", [])
            }
        }
        try await queue.write { db in try db.execute("INSERT INTO t VALUES (3)", []) }
        let rows = try await queue.read { db in try db.query("SELECT x FROM t ORDER BY x") { $0.int(0) } }
        #expect(rows == [1, 3])
    }

    @Test func databaseQueue_aWholeTransactionRollbackFailsExactlyTheWritesItUndid() throws {
        let dir = TemporaryDirectory()
        let queue = try DatabaseQueue(path: dir.at("full.db")) { db in
            try db.execute("PRAGMA journal_mode = WAL")
            try db.execute("CREATE TABLE t (x INTEGER, pad BLOB)")
            // A tiny database: one large write fills it (SQLITE_FULL), and
            // SQLite then rolls the whole transaction back by itself.
            try db.execute("PRAGMA max_page_count = 8")
        }
        // Hold the queue (its thread runs the first write) while six more
        // are enqueued, in order: they share the next group commit.
        let holding = DispatchSemaphore(value: 0)
        let release = DispatchSemaphore(value: 0)
        let done = DispatchGroup()
        done.enter()
        queue.write({ _ -> Void in
            holding.signal()
            release.wait()
        }, completion: { _ in done.leave() })
        holding.wait()
        // Each write's failure, nil when it reported success.
        let outcomes = Mutex<[Int: SQLiteError?]>([:])
        for i in 1...6 {
            done.enter()
            queue.write({ db -> Void in
                let pad = [UInt8](repeating: 0x55, count: i == 3 ? 200_000 : 10)
                try db.execute("INSERT INTO t VALUES (?, ?)", [.integer(Int64(i)), .blob(pad)])
            }, completion: { result in
                let failure: SQLiteError?
                do { try result.get(); failure = nil } catch let error as SQLiteError { failure = error } catch { failure = SQLiteError(code: -1, message: "\(error)") }
                outcomes.withLock { $0[i] = .some(failure) }
                done.leave()
            })
        }
        release.signal()
        done.wait()
        let outcome = outcomes.withLock { $0 }
        let stored = Set(try queue.sync { db in try db.query("SELECT x FROM t") { $0.int(0) } })
        #expect(outcome.count == 6)
        #expect(outcome[3]??.isDiskFull == true, "the write that filled the disk fails, as disk full")
        for (i, failure) in outcome {
            let ok = failure == nil
            #expect(ok == stored.contains(i), "write \(i) reported \(ok ? "stored" : "failed") but is \(stored.contains(i) ? "" : "not ")in the table")
            // Undone with the transaction: told so with the disk-full code (a refusal for room, not a failure of the store).
            if let failure { #expect(failure.isDiskFull, "write \(i): \(failure)") }
        }
        #expect(stored.contains(6), "writes after the rollback still commit")
    }
}

