import ExpenseTestSupport
import Foundation
import Postgres
import Synchronization
import Testing

/// The libpq wrapper against a real PostgreSQL server of the tests' own.
@Suite struct PostgresTests {
    private func open() throws -> Connection {
        try Connection(try PostgresCluster.shared.makeDatabase())
    }

    @Test func roundTrip_ofEveryValueType() throws {
        let db = try open()
        try db.execute("CREATE TABLE t (i bigint, s smallint, n integer, d double precision, b boolean, t text, x bytea, e bytea, z text)")
        try db.execute("INSERT INTO t VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)", [
            .integer(Int64.min), .integer(-7), .integer(Int64(Int32.max)), .double(-1.5), .bool(true),
            .text("héllo ✓"), .bytes([0, 1, 255, 0]), .bytes([]), .null,
        ])
        let row = try #require(try db.queryFirst("SELECT i, s, n, d, b, t, x, e, z FROM t") { r in
            (r.int64(0), r.int64(1), r.int64(2), r.double(3), r.bool(4), r.string(5), r.bytes(6), r.bytes(7), r.optionalString(8), r.isNull(8))
        })
        #expect(row.0 == Int64.min)
        #expect(row.1 == -7)
        #expect(row.2 == Int64(Int32.max))
        #expect(row.3 == -1.5)
        #expect(row.4 == true)
        #expect(row.5 == "héllo ✓")
        #expect(row.6 == [0, 1, 255, 0])
        #expect(row.7 == [])
        #expect(row.8 == nil)
        #expect(row.9)
        // Text travels untyped and takes the type of where it stands.
        #expect(try db.scalarInt("SELECT $1::xid8", [.text("12345678901")]) == 12_345_678_901)
        #expect(try db.scalarInt("SELECT count(*) FROM t WHERE i < $1", [.integer(0)]) == 1)
        #expect(try db.scalarInt("SELECT NULL::bigint") == nil)
    }

    @Test func execute_returnsTheRowsChanged() throws {
        let db = try open()
        try db.execute("CREATE TABLE t (x integer)")
        #expect(try db.execute("INSERT INTO t SELECT generate_series(1, $1)", [.integer(5)]) == 5)
        #expect(try db.execute("UPDATE t SET x = x + 1 WHERE x > $1", [.integer(3)]) == 2)
        #expect(try db.execute("INSERT INTO t VALUES (1) ON CONFLICT DO NOTHING", []) == 1)
    }

    @Test func textWithANulByte_isRefusedBeforeItIsSent() throws {
        let db = try open()
        try db.execute("CREATE TABLE t (x text)")
        do {
            try db.execute("INSERT INTO t VALUES ($1)", [.text("cut\u{0}here")])
            Issue.record("a NUL byte was accepted")
        } catch {
            #expect(error.kind == .client)
        }
        #expect(try db.scalarInt("SELECT count(*) FROM t") == 0)
    }

    @Test func transaction_rollsBackWhenTheBodyThrows() throws {
        let db = try open()
        try db.execute("CREATE TABLE t (x integer UNIQUE)")
        #expect(throws: PostgresError.self) {
            try db.transaction {
                try db.execute("INSERT INTO t VALUES ($1)", [.integer(1)])
                try db.execute("INSERT INTO t VALUES ($1)", [.integer(1)])
            }
        }
        #expect(!db.isInTransaction)
        #expect(try db.scalarInt("SELECT count(*) FROM t") == 0)
    }

    @Test func transaction_whoseFailedStatementWasCaught_doesNotClaimToCommit() throws {
        let db = try open()
        try db.execute("CREATE TABLE t (x integer UNIQUE)")
        #expect(throws: PostgresError.self) {
            try db.transaction {
                try db.execute("INSERT INTO t VALUES ($1)", [.integer(1)])
                // The error is swallowed, but the server aborted the transaction.
                _ = try? db.execute("INSERT INTO t VALUES ($1)", [.integer(1)])
            }
        }
        #expect(try db.scalarInt("SELECT count(*) FROM t") == 0)
    }

    @Test func uniqueViolation_isRecognized_andErrorsShowSQLButNotBoundValues() throws {
        let db = try open()
        try db.execute("CREATE TABLE t (x text UNIQUE, n integer)")
        try db.execute("INSERT INTO t VALUES ($1, 1)", [.text("secret-merchant")])
        do {
            try db.execute("INSERT INTO t VALUES ($1, 2)", [.text("secret-merchant")])
            Issue.record("duplicate accepted")
        } catch {
            #expect(error.isUniqueViolation)
            #expect(error.sqlState == "23505")
            #expect(error.sql?.contains("INSERT INTO t") == true)
            #expect(!error.description.contains("secret-merchant"), "\(error)")
        }
        // A data exception quotes its input in the server's message.
        do {
            try db.execute("INSERT INTO t VALUES ('a', $1)", [.text("secret-amount")])
            Issue.record("text accepted as an integer")
        } catch {
            #expect(error.sqlState == "22P02")
            #expect(!error.description.contains("secret-amount"), "\(error)")
        }
    }

    @Test func stream_handsRowsOverOneAtATime_soAResultLargerThanMemoryFits() throws {
        let db = try open()
        try db.execute("CREATE TABLE chunks (seq integer PRIMARY KEY, bytes bytea NOT NULL)")
        try db.execute("ALTER TABLE chunks ALTER COLUMN bytes SET STORAGE EXTERNAL")
        let chunk = (0..<(256 << 10)).map { UInt8(truncatingIfNeeded: $0 &* 31) }
        let count = 384  // 96 MiB
        try db.transaction {
            for seq in 0..<count { try db.execute("INSERT INTO chunks VALUES ($1, $2)", [.integer(Int64(seq)), .bytes(chunk)]) }
        }
        let before = try residentKiB()
        var seen = 0
        var total = 0
        var largest = before
        try db.stream("SELECT seq, bytes FROM chunks ORDER BY seq") { row in
            #expect(row.int(0) == seen)
            total += row.withBytes(1) { $0.count }
            seen += 1
            if seen % 16 == 0 { largest = max(largest, try residentKiB()) }
        }
        #expect(seen == count)
        #expect(total == count * chunk.count)
        #expect(largest - before < 32 << 10, "RSS grew by \(largest - before) KiB while streaming 96 MiB")
    }

    @Test func stream_whoseReaderFails_leavesTheConnectionUsable() throws {
        let db = try open()
        struct Stop: Error {}
        var seen = 0
        #expect(throws: Stop.self) {
            try db.stream("SELECT generate_series(1, 1000)") { _ in
                seen += 1
                if seen == 3 { throw Stop() }
            }
        }
        #expect(seen == 3)
        #expect(try db.scalarInt("SELECT 41 + 1") == 42)
    }

    @Test func terminatedBackend_isALostConnection_andNotUsable() throws {
        let url = try PostgresCluster.shared.makeDatabase()
        let db = try Connection(url)
        let pid = try #require(try db.scalarInt("SELECT pg_backend_pid()"))
        #expect(db.isUsable)
        let admin = try Connection(url)
        #expect(try admin.queryFirst("SELECT pg_terminate_backend($1::integer)", [.integer(pid)]) { $0.bool(0) } == true)
        try waitUntil(timeout: 10, "the connection to notice") { !db.isUsable }
        do {
            _ = try db.scalarInt("SELECT 1")
            Issue.record("a dead connection answered")
        } catch {
            #expect(error.isConnectionLost)
            #expect(error.isUnavailable)
        }
    }

    @Test func connectionRefused_isUnavailable() throws {
        let directory = TemporaryDirectory()
        do {
            _ = try Connection("postgresql:///none?host=\(directory.path)&user=postgres")
            Issue.record("connected to nothing")
        } catch {
            #expect(error.kind == .connection)
            #expect(error.isUnavailable)
            #expect(error.message.contains(directory.path))
        }
    }

    @Test func pool_replacesConnectionsTheServerClosed() throws {
        let url = try PostgresCluster.shared.makeDatabase()
        var options = ConnectionPool.Options()
        options.size = 2
        let pool = ConnectionPool(url, options: options)
        let first = try pool.withConnection { try #require(try $0.scalarInt("SELECT pg_backend_pid()")) }
        #expect(pool.idleCount == 1)
        let admin = try Connection(url)
        #expect(try admin.queryFirst("SELECT pg_terminate_backend($1::integer)", [.integer(first)]) { $0.bool(0) } == true)
        try waitUntil(timeout: 10, "the backend to go") {
            try admin.scalarInt("SELECT count(*) FROM pg_stat_activity WHERE pid = $1", [.integer(first)]) == 0
        }
        let second = try pool.withConnection { try #require(try $0.scalarInt("SELECT pg_backend_pid()")) }
        #expect(second != first)
    }

    /// The server's goodbye (the FATAL message a terminated backend flushes
    /// before it exits) is readable before the connection's end; a pool
    /// that took only the end as the sign lent the connection in between.
    /// Anything unasked-for on an idle connection makes it unusable; a
    /// notification is such a message that arrives without the end.
    @Test func connection_withAnUnaskedForMessage_isNotUsable() throws {
        let url = try PostgresCluster.shared.makeDatabase()
        let listening = try Connection(url)
        try listening.execute("LISTEN pool_test")
        #expect(listening.isUsable)
        let admin = try Connection(url)
        try admin.execute("NOTIFY pool_test")
        try waitUntil(timeout: 10, "the notification to make the connection unusable") { !listening.isUsable }
    }

    @Test func pool_whenEveryConnectionStaysBusy_failsTheLoanAsBusy() throws {
        let url = try PostgresCluster.shared.makeDatabase()
        var options = ConnectionPool.Options()
        options.size = 1
        options.waitMilliseconds = 200
        let pool = ConnectionPool(url, options: options)
        let holding = DispatchSemaphore(value: 0)
        let release = DispatchSemaphore(value: 0)
        let done = DispatchSemaphore(value: 0)
        Thread {
            _ = try? pool.withConnection { _ in
                holding.signal()
                release.wait()
            }
            done.signal()
        }.start()
        holding.wait()
        do {
            _ = try pool.withConnection { _ in 1 }
            Issue.record("a second loan out of a pool of one")
        } catch let error as PostgresError {
            #expect(error.kind == .busy)
            #expect(error.isUnavailable)
        }
        release.signal()
        done.wait()
        #expect(try pool.withConnection { try $0.scalarInt("SELECT 1") } == 1)
    }

    @Test func pool_failsWhileTheServerIsDown_andRecoversWithoutHelp() throws {
        let cluster = try PostgresCluster(name: "pool")
        let url = try cluster.makeDatabase()
        var options = ConnectionPool.Options()
        options.reconnectDelayMilliseconds = 50
        let pool = ConnectionPool(url, options: options)
        #expect(try pool.withConnection { try $0.scalarInt("SELECT 1") } == 1)
        cluster.crash()
        for _ in 0..<3 {
            do {
                _ = try pool.withConnection { try $0.scalarInt("SELECT 1") }
                Issue.record("answered with the server down")
            } catch let error as PostgresError {
                #expect(error.isUnavailable, "\(error)")
            }
        }
        try cluster.start()
        try waitUntil(timeout: 10, "the pool to connect again") {
            (try? pool.withConnection { try $0.scalarInt("SELECT 1") }) == 1
        }
    }

    @Test func migrations_recordThemselvesRefuseNewerSchemas_andRunOnceWhenRacing() throws {
        let url = try PostgresCluster.shared.makeDatabase()
        let v1 = [Migration(version: 1, sql: "CREATE TABLE a (x integer)")]
        let v2 = v1 + [Migration(version: 2, sql: "CREATE TABLE b (y integer); CREATE INDEX b_y ON b (y)")]
        let failures = Mutex<[String]>([])
        let done = DispatchGroup()
        for _ in 0..<4 {
            done.enter()
            Thread {
                do { try Connection(url).migrate(v2, lock: 42) } catch { failures.withLock { $0.append("\(error)") } }
                done.leave()
            }.start()
        }
        done.wait()
        #expect(failures.withLock { $0 }.isEmpty)
        let db = try Connection(url)
        #expect(try db.schemaVersion() == 2)
        #expect(try db.scalarInt("SELECT count(*) FROM schema_migrations") == 2)
        do {
            try db.migrate(v1, lock: 42)
            Issue.record("an older program migrated a newer schema")
        } catch {
            guard case .newerSchema(found: 2, known: 1) = error else { Issue.record("\(error)"); return }
        }
        // A migration that fails leaves nothing of itself.
        let broken = v2 + [Migration(version: 3, sql: "CREATE TABLE c (z integer); SELECT no_such_function()")]
        #expect(throws: MigrationError.self) { try db.migrate(broken, lock: 42) }
        #expect(try db.schemaVersion() == 2)
        #expect(try db.scalarInt("SELECT count(*) FROM pg_tables WHERE tablename = 'c'") == 0)
    }

    /// `VmRSS` of this process: its resident memory now.
    private func residentKiB() throws -> Int {
        let status = try String(contentsOfFile: "/proc/self/status", encoding: .utf8)
        let line = try #require(status.split(separator: "\n").first { $0.hasPrefix("VmRSS:") })
        return try #require(Int(line.split(separator: " ", omittingEmptySubsequences: true)[1]))
    }
}
