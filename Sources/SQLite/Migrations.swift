/// One step of a schema's history.
public struct Migration: Sendable {
    public let version: Int
    public let sql: String
    public init(version: Int, sql: String) {
        self.version = version
        self.sql = sql
    }
}

/// Why a database could not be brought to the schema this program knows.
public enum MigrationError: Error, Sendable, CustomStringConvertible {
    /// The file was written by a newer program: refusing is the only safe move.
    case newerSchema(found: Int, known: Int)
    case sqlite(SQLiteError)

    public var description: String {
        switch self {
        case .newerSchema(let found, let known):
            return "schema version \(found) is newer than this program knows (\(known))"
        case .sqlite(let error):
            return error.description
        }
    }
}

extension Connection {
    /// The highest schema version recorded in `schema_migrations`, 0 for a new file.
    public func schemaVersion() throws(SQLiteError) -> Int {
        let exists = try scalarInt("SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'schema_migrations'") ?? 0
        guard exists > 0 else { return 0 }
        return Int(try scalarInt("SELECT coalesce(max(version), 0) FROM schema_migrations") ?? 0)
    }

    /// Applies the migrations newer than the file's version, each in its own
    /// transaction that also records it, so a crash leaves either the old or
    /// the new schema, never half of one.
    /// - Throws: ``MigrationError/newerSchema(found:known:)`` without touching the file.
    public func migrate(_ migrations: [Migration]) throws(MigrationError) {
        let known = migrations.map(\.version).max() ?? 0
        do {
            let found = try schemaVersion()
            if found > known { throw MigrationError.newerSchema(found: found, known: known) }
            for migration in migrations.sorted(by: { $0.version < $1.version }) where migration.version > found {
                try transaction {
                    try execute("CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, applied_at TEXT NOT NULL)")
                    try execute(migration.sql)
                    try execute("INSERT INTO schema_migrations (version, applied_at) VALUES (?, strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))", [.integer(Int64(migration.version))])
                }
            }
        } catch let error as MigrationError {
            throw error
        } catch let error as SQLiteError {
            throw .sqlite(error)
        } catch {
            throw .sqlite(SQLiteError(code: -1, message: "\(error)"))
        }
    }
}
