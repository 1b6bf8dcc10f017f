import Digest
import Foundation
import Postgres
import SQLite

/// The storage engines `expense-server` runs on; server tests run on each.
public enum StorageEngine: String, CaseIterable, Sendable, CustomStringConvertible {
    case sqlite
    case postgres

    public var description: String { rawValue }
}

/// A server's data as a test sees it: the data directory and, for
/// PostgreSQL, a database of its own in the tests' shared cluster; with
/// ways to look inside that do not go through the server.
public struct StorageFixture: Sendable {
    public let engine: StorageEngine
    public let dataDirectory: String
    /// The `postgresql://` URL, for ``StorageEngine/postgres``.
    public let database: String?

    /// A new, empty place for a server's data in `dataDirectory`.
    public init(_ engine: StorageEngine, dataDirectory: String) throws {
        self.engine = engine
        self.dataDirectory = dataDirectory
        database = engine == .postgres ? try PostgresCluster.shared.makeDatabase() : nil
    }

    /// A place for a server's data in an existing PostgreSQL database.
    public init(postgres database: String, dataDirectory: String) {
        engine = .postgres
        self.dataDirectory = dataDirectory
        self.database = database
    }

    /// `--data-dir` and `--database`, for any subcommand.
    public var arguments: [String] {
        ["--data-dir", dataDirectory] + (database.map { ["--database", $0] } ?? [])
    }

    /// The single integer `sql` returns, read straight from the database
    /// (SQL both engines understand).
    public func scalar(_ sql: String) throws -> Int64? {
        if let database { return try Postgres.Connection(database).scalarInt(sql) }
        let db = try SQLite.Connection(path: "\(dataDirectory)/expense-server.db")
        db.setBusyTimeout(milliseconds: 5000)
        return try db.scalarInt(sql)
    }

    /// The first `columns` columns of each row `sql` returns, as text
    /// (`nil` for NULL), read straight from the database.
    public func rows(_ sql: String, columns: Int) throws -> [[String?]] {
        if let database {
            return try Postgres.Connection(database).query(sql) { row in (0..<columns).map { row.optionalString($0) } }
        }
        let db = try SQLite.Connection(path: "\(dataDirectory)/expense-server.db")
        db.setBusyTimeout(milliseconds: 5000)
        return try db.query(sql) { row in (0..<columns).map { row.optionalString($0) } }
    }

    /// Runs `sql` straight on the database (SQL the engine understands).
    public func execute(_ sql: String) throws {
        if let database {
            try Postgres.Connection(database).execute(sql)
            return
        }
        let db = try SQLite.Connection(path: "\(dataDirectory)/expense-server.db")
        db.setBusyTimeout(milliseconds: 5000)
        try db.execute(sql)
    }

    /// The SHA-256 (hex) of every receipt's bytes as stored, sorted: the
    /// files under `receipts/`, or the chunks of each receipt in the
    /// database put back together.
    public func storedReceiptDigests() throws -> [String] {
        if let database {
            return try Postgres.Connection(database).query("""
                SELECT encode(sha256(coalesce(string_agg(c.bytes, ''::bytea ORDER BY c.seq), ''::bytea)), 'hex')
                FROM receipts r LEFT JOIN receipt_chunks c ON c.receipt_id = r.id GROUP BY r.id
                """) { $0.string(0) }.sorted()
        }
        let folder = "\(dataDirectory)/receipts"
        return try ((try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? []).map { name in
            guard let bytes = FileManager.default.contents(atPath: "\(folder)/\(name)") else { throw TestFailure("cannot read \(name)") }
            return Hex.encode(SHA256.hash(Array(bytes)))
        }.sorted()
    }

    /// The SHA-256 (hex) of each expense's receipt as stored, by transaction id.
    public func receiptDigestsByTransaction() throws -> [String: String] {
        if let database {
            let rows = try Postgres.Connection(database).query("""
                SELECT e.transaction_id, encode(sha256(string_agg(c.bytes, ''::bytea ORDER BY c.seq)), 'hex')
                FROM expenses e JOIN receipt_chunks c ON c.receipt_id = e.receipt_id GROUP BY e.transaction_id
                """) { ($0.string(0), $0.string(1)) }
            return Dictionary(uniqueKeysWithValues: rows)
        }
        let db = try SQLite.Connection(path: "\(dataDirectory)/expense-server.db")
        let rows = try db.query("SELECT transaction_id, receipt_file FROM expenses WHERE receipt_file IS NOT NULL") { ($0.string(0), $0.string(1)) }
        return try Dictionary(uniqueKeysWithValues: rows.map { id, file in
            guard let bytes = FileManager.default.contents(atPath: "\(dataDirectory)/receipts/\(file)") else { throw TestFailure("cannot read \(file)") }
            return (id, Hex.encode(SHA256.hash(Array(bytes))))
        })
    }

    /// Uploads still in the staging folder (`tmp/`), for either engine.
    public var stagedUploads: [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: "\(dataDirectory)/tmp")) ?? []).sorted()
    }
}
