import Digest
import ExpenseTestSupport
import Foundation
import Postgres
@testable import PostgresStorage
import ServerAccounts
import ServerStorage
import SQLite
@testable import SQLiteStorage
import Testing

/// A database made by the server before roles, sessions, versions and
/// running totals (schema version 1), with users and expenses in it, is
/// brought to version 2 with everything in place.
@Suite struct MigrationTests {
    @Test(arguments: StorageEngine.allCases)
    func aVersion1DatabaseWithData_migratesTo2_keepingUsersAndFillingVersionsAndTotals(_ engine: StorageEngine) throws {
        let directory = TemporaryDirectory()
        let fixture = try StorageFixture(engine, dataDirectory: directory.at("data"))
        let token = "esk_" + String(repeating: "t", count: 43)
        let seed = """
            INSERT INTO users (name, token_hash, created_at) VALUES ('old', '\(SHA256.hexDigest(token))', '2026-01-01T00:00:00.000Z');
            INSERT INTO expenses (transaction_id, user_id, client_id, merchant, amount, currency, date, version, created_at, updated_at, deleted, change_seq)
            VALUES ('cp-old1', 1, 'k1', 'A', '1.50', 'EUR', '2026-01-01', 3, 'x', 'x', \(engine == .postgres ? "false" : "0"), 1),
                   ('cp-old2', 1, 'k2', 'B', '2.00', 'EUR', '2026-01-02', 1, 'x', 'x', \(engine == .postgres ? "false" : "0"), 2),
                   ('cp-old3', 1, 'k3', 'C', '9.00', 'USD', '2026-01-03', 2, 'x', 'x', \(engine == .postgres ? "true" : "1"), 3);
            """
        let store: any ExpenseStorage
        if let url = fixture.database {
            let db = try Postgres.Connection(url)
            try db.migrate(Array(PostgresSchema.migrations.prefix(1)), lock: PostgresSchema.migrationLock)
            try db.execute(seed)
            var options = PostgresStore.Options()
            options.stagingDirectory = directory.at("tmp")
            store = try PostgresStore(url: url, options: options)
        } else {
            try FileManager.default.createDirectory(atPath: fixture.dataDirectory, withIntermediateDirectories: true)
            let db = try SQLite.Connection(path: "\(fixture.dataDirectory)/expense-server.db")
            try db.migrate(Array(Schema.migrations.prefix(1)))
            try db.execute(seed)
            store = try SQLiteStore(directory: fixture.dataDirectory)
        }
        #expect(try store.schemaVersions().database == 3)
        let accounts = Accounts(store)
        #expect(try accounts.account(forToken: token) == Account(id: 1, name: "old", isAdmin: false))
        #expect(try accounts.list().map(\.state) == [.active])
        #expect(try store.totals(ExpenseFilter(user: 1)) == [CurrencyTotal(currency: "EUR", count: 2, minorUnits: 350)])
        let first = try #require(try store.anyExpense("cp-old1"))
        #expect(try store.versions(ofRow: first.stored.rowID).map(\.version) == [3])
        #expect(try store.expensePage(ExpenseFilter(user: 1), sort: .dateDescending, offset: 0, limit: 10).map(\.stored.expense.transactionID)
                == ["cp-old2", "cp-old1"])
    }
}
