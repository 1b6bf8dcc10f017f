import ExpenseTestSupport
import Foundation
import Postgres
import SQLite
import Testing

/// `--database`: SQLite by default or by path, PostgreSQL by URL; the
/// schema migrated by the server, refused when newer than it knows. (The
/// command lines refused are in ``CommandLineTests``.)
@Suite struct DatabaseOptionTests {
    let binary = BuiltProducts.path("expense-server")

    @Test(arguments: StorageEngine.allCases)
    func migrate_createsTheSchemaOnce_andSaysItsVersion(_ engine: StorageEngine) throws {
        let directory = TemporaryDirectory()
        let storage = try StorageFixture(engine, dataDirectory: directory.at("data"))
        for _ in 0..<2 {
            let result = try runCommand(binary, ["migrate"] + storage.arguments)
            #expect(result.status == 0, "\(result.stderr)")
            #expect(result.stdout == "schema version 3\n")
        }
        #expect(try storage.scalar("SELECT count(*) FROM schema_migrations") == 3)
    }

    @Test(arguments: StorageEngine.allCases)
    func aSchemaNewerThanTheServerKnows_isRefusedAndLeftAlone(_ engine: StorageEngine) throws {
        let directory = TemporaryDirectory()
        let storage = try StorageFixture(engine, dataDirectory: directory.at("data"))
        #expect(try runCommand(binary, ["migrate"] + storage.arguments).status == 0)
        let future = "INSERT INTO schema_migrations (version, applied_at) VALUES (99, '2099-01-01T00:00:00Z')"
        if let url = storage.database {
            try Postgres.Connection(url).execute(future)
        } else {
            try SQLiteFixture.execute(future, dataDirectory: storage.dataDirectory)
        }
        for command in [["migrate"], ["user", "add", "carol"], ["serve", "--listen", "127.0.0.1:0"]] {
            let result = try runCommand(binary, command + storage.arguments, timeout: 30)
            #expect(result.status == 1, "\(command): \(result.stderr)")
            #expect(result.stderr.contains("schema version 99 is newer than this program knows (3)"), "\(command): \(result.stderr)")
        }
        #expect(try storage.scalar("SELECT count(*) FROM users") == 0)
        #expect(try storage.scalar("SELECT max(version) FROM schema_migrations") == 99)
    }

    @Test func postgresUnreachableAtStart_exits1WithTheReason() throws {
        let directory = TemporaryDirectory()
        let url = "postgresql:///expenses?host=\(directory.path)&user=postgres"
        let result = try runCommand(binary, ["serve", "--listen", "127.0.0.1:0", "--database", url], timeout: 30)
        #expect(result.status == 1)
        #expect(result.stderr.hasPrefix("expense-server: Failed to open the PostgreSQL database: PostgreSQL error: connection to server on socket"),
                "\(result.stderr)")
        #expect(!result.stderr.contains("listening on"))
    }

    @Test func userAdd_onPostgres_printsOnlyTheToken_andTheDatabaseHoldsOnlyItsHash() throws {
        let directory = TemporaryDirectory()
        let storage = try StorageFixture(.postgres, dataDirectory: directory.at("data"))
        let url = try #require(storage.database)
        // No data directory is needed: uploads would be staged in a private folder.
        let result = try runCommand(binary, ["user", "add", "carol@example.com", "--database", url])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(result.stderr.isEmpty)
        let token = result.stdout.trimmingCharacters(in: .newlines)
        #expect(token.hasPrefix("esk_") && token.count == 47)
        let dump = try PostgresCluster.shared.run("pg_dump", ["--dbname", url, "--data-only"])
        #expect(dump.status == 0, "\(dump.stderr)")
        #expect(dump.stdout.contains("carol@example.com"))
        #expect(!dump.stdout.contains(token))
        let again = try runCommand(binary, ["user", "add", "carol@example.com", "--database", url])
        #expect(again.status == 1)
        #expect(again.stderr == "expense-server: user 'carol@example.com' already exists\n")
        let list = try runCommand(binary, ["user", "list", "--database", url])
        #expect(list.stdout.split(separator: "\n").map { $0.split(separator: "\t")[0] } == ["carol@example.com"])
    }

    @Test func sqliteDatabaseAtAPath_keepsReceiptsInTheDataDirectory() throws {
        let directory = TemporaryDirectory()
        let database = directory.at("elsewhere.db")
        let token = try ServerProcess.addUser("alice", dataDirectory: directory.at("data"), database: database)
        let server = try ServerProcess(dataDirectory: directory.at("data"), database: database, outputDirectory: directory.path, token: token)
        let response = try server.connect().request("POST", "/v1/expenses", headers: [
            ("Authorization", "Bearer \(token)"), ("Content-Type", "application/json"), ("Idempotency-Key", UUID().uuidString.lowercased()),
        ], body: Array("{}".utf8))
        #expect(response.status == 201)
        #expect(FileManager.default.fileExists(atPath: database))
        #expect(!FileManager.default.fileExists(atPath: directory.at("data/expense-server.db")))
        #expect(FileManager.default.fileExists(atPath: directory.at("data/receipts")))
    }
}

/// Writes to a stopped server's SQLite file.
enum SQLiteFixture {
    static func execute(_ sql: String, dataDirectory: String) throws {
        let db = try SQLite.Connection(path: "\(dataDirectory)/expense-server.db")
        try db.execute(sql)
    }
}
