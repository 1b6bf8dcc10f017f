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
        let check = try BrowserCheck(base: "http://127.0.0.1:\(harness.port)", work: work, facts: factsFile)
        // A timeout stops chromedriver and Chromium too, not only the script.
        defer { check.stop() }
        let browser = check.process
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

    /// A browser check that times out (here: a server that never answers)
    /// leaves no chromedriver or Chromium running: the script stops them
    /// on SIGTERM, and when the script itself is killed, ``BrowserCheck``
    /// stops them by pid.
    @Test func aStoppedBrowserCheck_leavesNoChromedriverOrChromiumBehind() throws {
        let directory = TemporaryDirectory(prefix: "browser-stop")
        let hanging = try LoopbackHTTPServer { _ in .hang }
        defer { hanging.stop() }
        let facts = directory.at("facts.json")
        #expect(FileManager.default.createFile(atPath: facts, contents: Data(#"{"token": "esk_none"}"#.utf8)))
        for signal in [SIGTERM, SIGKILL] {
            let work = directory.at("work-\(signal)")
            try FileManager.default.createDirectory(atPath: work, withIntermediateDirectories: true)
            let check = try BrowserCheck(base: hanging.baseURL, work: work, facts: facts)
            defer { check.stop() }
            // Started, and its first page is loading (and never will).
            try waitUntil(timeout: 120, "the script printed its pids and asked for a page") {
                check.printedPIDs.count == 2 && !hanging.requests.isEmpty
            }
            let pids = check.browserPIDs
            #expect(pids.count >= 2, "\(pids)")
            check.process.signal(signal)
            let status = check.process.waitForExit(timeout: 60)
            #expect(status == 128 + signal, "\(check.process.standardOutput)\n\(check.process.standardError)")
            if signal == SIGKILL {
                // Killed, the script could stop nothing: the browser is still there...
                #expect(pids.contains { BrowserCheck.isLive($0) })
                check.stop()
            }
            // ...and gone once stopped, by the script or by pid.
            try waitUntil(timeout: 30, "chromedriver and Chromium exited after \(signal)") { !pids.contains { BrowserCheck.isLive($0) } }
        }
    }
}
