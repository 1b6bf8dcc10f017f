import ExpenseCore
import PostgresStorage
import ServerStorage
import SQLiteStorage

/// Where the server's data lives, from `--data-dir` and `--database`:
/// SQLite in the data directory (the default), or a PostgreSQL database
/// several server processes share.
enum StorageLocation: Equatable, Sendable, CustomStringConvertible {
    /// The data directory, and the database file when it is not
    /// `DIR/expense-server.db`.
    case sqlite(dataDirectory: String, databasePath: String?)
    /// A `postgresql://` URL; uploads are staged in `DIR/tmp` when a data
    /// directory is given, else in a private temporary folder.
    case postgres(url: String, dataDirectory: String?)

    /// Reads `--database` and `--data-dir`.
    /// - Throws: ``UsageError`` for a missing data directory (SQLite needs
    ///   one), a URL of another kind, or a password on the command line.
    static func parse(database: String?, dataDirectory: String?) throws(UsageError) -> StorageLocation {
        if let dataDirectory, dataDirectory.isEmpty { throw UsageError("--data-dir must not be empty") }
        guard let database else {
            guard let dataDirectory else { throw UsageError("--data-dir is required (or --database postgresql://...)") }
            return .sqlite(dataDirectory: dataDirectory, databasePath: nil)
        }
        guard !database.isEmpty else { throw UsageError("--database must not be empty") }
        if let (scheme, _) = splitScheme(database) {
            guard scheme.lowercased() == "postgresql" || scheme.lowercased() == "postgres" else {
                throw UsageError("--database must be a postgresql:// URL or the path of an SQLite file, not a \(LogText.quoted(scheme, limit: 32)) URL")
            }
            guard !hasPassword(database) else {
                throw UsageError("--database must not hold a password (it would show in the process list): put it in a password file (PGPASSFILE, or passfile= in the URL)")
            }
            return .postgres(url: database, dataDirectory: dataDirectory)
        }
        guard let dataDirectory else { throw UsageError("--data-dir is required with an SQLite --database (receipts live there)") }
        return .sqlite(dataDirectory: dataDirectory, databasePath: database)
    }

    /// `scheme` (as typed) and the rest of `scheme://rest`.
    private static func splitScheme(_ text: String) -> (String, Substring)? {
        let bytes = Array(text.utf8)
        guard let index = (0..<max(0, bytes.count - 2)).first(where: { bytes[$0] == 0x3A && bytes[$0 + 1] == 0x2F && bytes[$0 + 2] == 0x2F }) else {
            return nil
        }
        let scheme = String(decoding: bytes[..<index], as: UTF8.self)
        return (scheme, Substring(String(decoding: bytes[(index + 3)...], as: UTF8.self)))
    }

    /// A `user:password@` before the host, or a `password=` parameter.
    private static func hasPassword(_ url: String) -> Bool {
        guard let (_, afterScheme) = splitScheme(url) else { return false }
        let authority = afterScheme.prefix { $0 != "/" && $0 != "?" }
        if let at = authority.lastIndex(of: "@"), authority[..<at].contains(":") { return true }
        guard let query = url.firstIndex(of: "?") else { return false }
        return url[url.index(after: query)...].split(separator: "&").contains { $0.lowercased().hasPrefix("password=") }
    }

    /// Opens the storage, creating or migrating its schema.
    /// - Parameter poolSize: connections per process, for PostgreSQL.
    func open(poolSize: Int = 16) throws -> any ExpenseStorage {
        switch self {
        case .sqlite(let directory, let databasePath):
            return try SQLiteStore(directory: directory, databasePath: databasePath)
        case .postgres(let url, let directory):
            var options = PostgresStore.Options()
            options.poolSize = poolSize
            options.stagingDirectory = directory.map { "\($0)/tmp" }
            return try PostgresStore(url: url, options: options)
        }
    }

    /// For messages: "data directory '/srv/data'", "the PostgreSQL database";
    /// paths as typed (``LogText/quoted(_:limit:)``).
    var description: String {
        switch self {
        case .sqlite(let directory, nil): "data directory \(LogText.quoted(directory))"
        case .sqlite(_, let path?): "database \(LogText.quoted(path))"
        case .postgres: "the PostgreSQL database"
        }
    }
}
