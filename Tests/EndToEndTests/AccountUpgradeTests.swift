import ExpenseCore
import ExpenseTestSupport
import Foundation
import SQLite
import Testing

/// The upgrade in place: a state directory written by the expensed of
/// before accounts (`Tests/Fixtures/schema2`: two synced expenses, one
/// queued with its receipt, an offline edit, and the server's data they
/// were synced to) opens under this one, migrates, and syncs what was
/// queued with the token it always had, all of it the default account's.
@Suite struct AccountUpgradeTests {
    static let fixture = "/" + #filePath.split(separator: "/").dropLast(2).joined(separator: "/") + "/Fixtures/schema2"

    /// The fixture's daemon state and server data copied into a new folder,
    /// the server started on them, and a daemon set up with `arguments`.
    static func upgraded(_ arguments: (String) -> [String]) throws -> (DaemonHarness, ServerProcess, String) {
        let directory = TemporaryDirectory(prefix: "upgrade")
        try FileManager.default.copyItem(atPath: "\(fixture)/state", toPath: directory.at("state"))
        try FileManager.default.copyItem(atPath: "\(fixture)/server", toPath: directory.at("server"))
        let token = try String(contentsOfFile: "\(fixture)/token", encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)
        let tokenFile = directory.at("token")
        _ = FileManager.default.createFile(atPath: tokenFile, contents: Data((token + "\n").utf8), attributes: [.posixPermissions: 0o600])
        let server = try ServerProcess(dataDirectory: directory.at("server"), outputDirectory: directory.path, token: token)
        let daemon = DaemonHarness(arguments: ["--server", "http://127.0.0.1:\(server.port)", "--drain-interval", "200ms",
                                               "--backoff-base", "50ms"] + arguments(tokenFile), directory: directory)
        return (daemon, server, directory.at("server"))
    }

    static func serverExpenses(_ data: String) throws -> [(merchant: String?, comment: String?, user: String, receipt: Bool)] {
        let db = try Connection(path: "\(data)/expense-server.db", readOnly: true)
        return try db.query("SELECT e.merchant, e.comment, u.name, e.receipt_file IS NOT NULL FROM expenses e JOIN users u ON u.id = e.user_id ORDER BY e.id") {
            ($0.optionalString(0), $0.optionalString(1), $0.string(2), $0.bool(3))
        }
    }

    @Test func schema2StateDirectory_migratesAndSyncsItsQueueAsTheDefaultAccount() throws {
        let (daemon, server, data) = try Self.upgraded { ["--token-file", $0] }
        try daemon.start()
        defer { withExtendedLifetime(server) {} }
        defer { daemon.stop() }
        try daemon.waitForQueue(server: "ok", timeout: 30, "the queued work of before to sync")
        let listed = try daemon.list()
        #expect(listed.compactMap { $0["merchant"]?.stringValue } == ["Synced One", "Synced Two", "Queued Three"])
        #expect(listed.allSatisfy { $0["state"]?.stringValue == "synced" })
        let rows = try Self.serverExpenses(data)
        #expect(rows.map(\.merchant) == ["Synced One", "Synced Two", "Queued Three"], "the queued one once, none again")
        #expect(rows[0].comment == "edited offline", "the offline edit went with the token of before")
        #expect(rows[2].receipt, "and the queued receipt")
        #expect(Set(rows.map(\.user)) == ["alice"])
        let db = try Connection(path: "\(daemon.stateDirectory)/expensed.db", readOnly: true)
        #expect(try db.schemaVersion() == 15, "through accounts (3), the listing (4), where expenses came from (5), receipt digests (6), the jobs' account index (7), receipt copies (8), receipts as received (9), the receipt bytes the outbox holds (10), readings (11), the copies to make (12), a new expense's listing row (13), resumable uploads (14) and a new expense's row at its first read (15)")
        // The listing the migration filled answers filters and totals.
        let queued = try daemon.ctlJSON(["list", "--merchant", "three", "--totals"])
        #expect(queued["expenses"]?.arrayValue?.compactMap { $0["merchant"]?.stringValue } == ["Queued Three"], "\(queued)")
        #expect(queued["totals"]?.arrayValue?.count == 1, "\(queued)")
        let byMerchant = try daemon.ctlJSON(["list", "--sort", "merchant", "--reverse"])
        #expect(byMerchant.arrayValue?.compactMap { $0["merchant"]?.stringValue } == ["Synced Two", "Synced One", "Queued Three"])
        #expect(listed.allSatisfy { $0["source"] == .null }, "made before sources were kept: none is invented")
        #expect(try db.query("SELECT DISTINCT account FROM expenses") { $0.string(0) } == [""])
    }

    @Test func schema2StateDirectory_withAccountsAdded_isTheDefaultAccountOfCallersWithoutAFile() throws {
        let (daemon, server, data) = try Self.upgraded { ["--token-file", $0, "--accounts-dir", "\(URL(fileURLWithPath: $0).deletingLastPathComponent().path)/accounts"] }
        try FileManager.default.createDirectory(atPath: daemon.directory.at("accounts"), withIntermediateDirectories: true)
        try daemon.start()
        defer { withExtendedLifetime(server) {} }
        defer { daemon.stop() }
        try daemon.waitForQueue(server: "ok", timeout: 30, "the queued work of before to sync")
        let status = try daemon.ctlJSON(["status"])
        #expect(status["account"]?.stringValue == "", "root has no file: the default account is root's")
        #expect(try daemon.list().count == 3)
        #expect(try Self.serverExpenses(data).count == 3)
    }
}
