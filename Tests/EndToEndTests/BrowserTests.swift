import ExpenseCore
import ExpenseTestSupport
import Foundation
import SQLite
import Testing

/// The web interface in a real browser: headless Chromium from Debian,
/// driven by selenium (scripts/browser-check.py), against an
/// expense-server that a real expensed synced to.
@Suite struct BrowserTests {
    @Test func aPersonReviewsEditsExportsAndSignsOut_inChromium() throws {
        let harness = try SyncHarness()
        try harness.daemon.start()
        let work = harness.daemon.directory.at("browser")
        try FileManager.default.createDirectory(atPath: work, withIntermediateDirectories: true)

        // A receipt that cannot look blank: a checkerboard, as ImageMagick draws it.
        let receipt = "\(work)/lunch.png"
        let convert = try runCommand("/usr/bin/convert", ["-size", "320x240", "pattern:checkerboard", "-scale", "400%", receipt])
        #expect(convert.status == 0, "\(convert.stderr)")
        let added = try harness.daemon.ctl(["add", "--receipt", receipt, "--merchant", "Synced Lunch", "--amount", "12.50",
                                            "--currency", "EUR", "--date", "2026-11-29", "--category", "Meals"])
        #expect(added.status == 0, "\(added.stderr)")
        try harness.waitUntilDrained()
        let synced = try #require(try harness.serverRecords().first { $0.merchant == "Synced Lunch" && $0.receiptDigest != nil })

        // Enough expenses for two pages of "Shop".
        let storage = try StorageFixture(.sqlite, dataDirectory: harness.serverData)
        let alice = try #require(try storage.scalar("SELECT id FROM users WHERE name = 'alice'"))
        try storage.insertExpenses(60, userID: alice)
        let shops = 60 - 6  // every 10th merchant is the accented one
        let hostile = (merchant: "<script>alert(1)</script>", comment: "\"><img src=x onerror=alert(2)>'", category: "javascript:alert(3)")
        let made = try harness.serverRequest("POST", "/v1/expenses", body: .object([
            "merchant": .string(hostile.merchant), "amount": .string("1.00"), "currency": .string("EUR"), "date": .string("2026-11-30"),
            "comment": .string(hostile.comment), "category": .string(hostile.category),
        ]), key: UUID().uuidString.lowercased())
        #expect(made.status == 201)
        let hostileID = try #require(made.json?["transaction_id"] as? String)
        let bobToken = try ServerProcess.addUser("bob", dataDirectory: harness.serverData)
        let bobs = try #require(try harness.server?.connect().request("POST", "/v1/expenses", headers: [
            ("Authorization", "Bearer \(bobToken)"), ("Content-Type", "application/json"), ("Idempotency-Key", "\"\(UUID().uuidString)\""),
        ], body: Array(#"{"merchant": "Bob's", "amount": "1.00", "currency": "EUR", "date": "2026-11-30"}"#.utf8)).json?["transaction_id"] as? String)

        let db = try Connection(path: "\(harness.serverData)/expense-server.db")
        let syncedVersion = try #require(try db.scalarInt("SELECT version FROM expenses WHERE transaction_id = ?", [.text(synced.transactionID)]))
        let facts: [String: Any] = [
            "token": harness.token, "synced": synced.transactionID, "shops": shops, "hostile": hostileID, "bobs": bobs,
            "hostile_merchant": hostile.merchant, "hostile_comment": hostile.comment, "hostile_category": hostile.category,
        ]
        let factsFile = "\(work)/facts.json"
        #expect(FileManager.default.createFile(atPath: factsFile, contents: try JSONSerialization.data(withJSONObject: facts)))
        let python = "\(BuiltProducts.packageRoot)/.build/venv/bin/python"
        let browser = try ChildProcess(python, ["\(BuiltProducts.packageRoot)/scripts/browser-check.py", "http://127.0.0.1:\(harness.port)", work],
                                       outputDirectory: work, name: "browser-check", stdinPath: factsFile)
        defer { browser.stop() }
        let status = browser.waitForExit(timeout: 240)
        let output = browser.standardOutput
        #expect(status == 0, "\(output)\n\(browser.standardError)")
        let last = try #require(output.split(separator: "\n").last)
        let measured = try #require(try JSONSerialization.jsonObject(with: Data(last.utf8)) as? [String: Any], "\(output)")
        // The receipt was drawn: its screenshot is not one flat colour.
        let deviation = try #require(measured["receipt_screenshot_stddev"] as? Double)
        #expect(deviation > 0.1)
        #expect(measured["receipt_natural_width"] as? Int == 1280)
        // What the browser downloaded is strict RFC 4180 and what the database holds.
        let csv = try CSVReader.parse(Array(try Data(contentsOf: URL(fileURLWithPath: try #require(measured["csv"] as? String)))))
        let stored: [[String?]] = try storage.exportableRows().filter { ($0[3] ?? "").contains("Shop") }
        let expected: [[String]] = stored.map { row in row.prefix(9).map { $0 ?? "" } }
        let exported: [[String]] = csv.dropFirst().map { Array($0.prefix(9)) }.sorted { $0[0] < $1[0] }
        #expect(exported == expected)
        // The two edits went through the versioned edit: two versions more; the stale one and the forged ones changed nothing.
        #expect(try db.scalarInt("SELECT version FROM expenses WHERE transaction_id = ?", [.text(synced.transactionID)]) == syncedVersion + 2)
        #expect(try db.scalarInt("SELECT count(*) FROM expenses WHERE merchant = 'Edited Lunch' AND category = 'Travel' AND comment IS NULL") == 1)
        _ = harness.daemon.stop()
    }
}
