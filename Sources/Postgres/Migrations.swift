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
    /// The database was migrated by a newer program: refusing is the only safe move.
    case newerSchema(found: Int, known: Int)
    case postgres(PostgresError)

    public var description: String {
        switch self {
        case .newerSchema(let found, let known):
            return "schema version \(found) is newer than this program knows (\(known))"
        case .postgres(let error):
            return error.description
        }
    }
}

extension Connection {
    /// The highest schema version recorded in `schema_migrations`, 0 for a
    /// database without one.
    public func schemaVersion() throws(PostgresError) -> Int {
        let exists = try scalarInt("SELECT count(*) FROM pg_catalog.pg_tables WHERE tablename = 'schema_migrations' AND schemaname = current_schema()") ?? 0
        guard exists > 0 else { return 0 }
        return Int(try scalarInt("SELECT coalesce(max(version), 0) FROM schema_migrations") ?? 0)
    }

    /// Applies the migrations newer than the database's version, each in
    /// its own transaction that also records it: DDL is transactional in
    /// PostgreSQL, so a crash leaves the old schema or the new one. Each
    /// transaction first takes the advisory lock `lock`, so that server
    /// processes starting together migrate one after another, and the
    /// later ones find the work done.
    /// - Throws: ``MigrationError/newerSchema(found:known:)`` without changing anything.
    public func migrate(_ migrations: [Migration], lock: Int64) throws(MigrationError) {
        let known = migrations.map(\.version).max() ?? 0
        do {
            for migration in migrations.sorted(by: { $0.version < $1.version }) {
                try transaction {
                    try execute("SELECT pg_advisory_xact_lock($1)", [.integer(lock)])
                    let found = try schemaVersion()
                    if found > known { throw MigrationError.newerSchema(found: found, known: known) }
                    guard migration.version > found else { return }
                    try execute("CREATE TABLE IF NOT EXISTS schema_migrations (version integer PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())")
                    try execute(migration.sql)
                    try execute("INSERT INTO schema_migrations (version) VALUES ($1)", [.integer(Int64(migration.version))])
                }
            }
        } catch let error as MigrationError {
            throw error
        } catch let error as PostgresError {
            throw .postgres(error)
        } catch {
            throw .postgres(PostgresError(.client, message: "\(error)"))
        }
    }
}
