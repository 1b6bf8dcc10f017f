import ExpenseTestSupport
import Foundation
import Testing

/// `expense-server export`: streamed from the database in constant memory,
/// CSV that parses back equal to the database, JSON lines, and filters.
@Suite struct ExportTests {
    let binary = BuiltProducts.path("expense-server")

    /// Runs an export to a file, sampling the process's peak RSS
    /// (`VmHWM`) while it runs.
    /// - Returns: the exit status, the output, and the peak in KiB.
    func export(_ server: TestServer, _ arguments: [String]) throws -> (status: Int32, output: [UInt8], peakKiB: Int) {
        let child = try ChildProcess(binary, ["export"] + arguments + server.storage.arguments, outputDirectory: server.directory.path)
        var peak = 0
        while child.isRunning {
            if let status = try? String(contentsOfFile: "/proc/\(child.pid)/status", encoding: .utf8),
               let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmHWM:") }),
               let kib = Int(line.split(separator: " ").dropFirst().first ?? "") {
                peak = max(peak, kib)
            }
            usleep(2_000)
        }
        let status = child.waitForExit(timeout: 60) ?? -1
        let output = Array(FileManager.default.contents(atPath: child.stdoutPath) ?? Data())
        #expect(child.standardError.isEmpty, "\(child.standardError)")
        return (status, output, peak)
    }

    @Test(arguments: StorageEngine.allCases)
    func export_100000Expenses_inConstantMemory_parsesBackEqualToTheDatabase(_ engine: StorageEngine) throws {
        let server = try TestServer(engine)
        let alice = try #require(try server.scalar("SELECT id FROM users WHERE name = 'alice'"))
        try server.storage.insertExpenses(1_000, userID: alice)
        let small = try export(server, ["--format", "csv"])
        #expect(small.status == 0)
        try server.storage.insertExpenses(99_000, userID: alice, first: 1_001)
        let large = try export(server, ["--format", "csv"])
        #expect(large.status == 0)
        // A hundred times the rows, about the same memory: the rows are
        // never all held (holding them would take well over 30 MiB more).
        print("export peak RSS (\(engine)): \(small.peakKiB) KiB for 1000 rows, \(large.peakKiB) KiB for 100000 rows, \(large.output.count) bytes out")
        #expect(small.peakKiB > 0 && large.peakKiB < small.peakKiB + 12 * 1024, "\(small.peakKiB) KiB, then \(large.peakKiB) KiB")

        #expect(String(bytes: large.output, encoding: .utf8) != nil, "not UTF-8")
        let records = try CSVReader.parse(large.output)
        #expect(records.first == ["transaction_id", "user", "date", "merchant", "amount", "currency", "category", "comment", "tax_tag",
                                  "receipt_url", "receipt_type", "receipt_sha256", "receipt_size", "version", "created_at", "updated_at",
                                  "deleted", "conflict"])
        let exported = records.dropFirst().sorted { $0[0] < $1[0] }
        let stored = try server.storage.exportableRows()
        #expect(exported.count == 100_000 && stored.count == 100_000)
        var mismatches = 0
        for (row, expected) in zip(exported, stored) where Array(row.prefix(16)) != expected.map({ $0 ?? "" }) || row[16...] != ["false", "false"] {
            mismatches += 1
            if mismatches <= 3 { Issue.record("exported \(row), stored \(expected)") }
        }
        #expect(mismatches == 0)
        // The values a spreadsheet must get right came through.
        #expect(exported.contains { $0[3] == "Caf\u{E9}, \"Le\" 10\nx" })
        #expect(exported.contains { $0[7] == " spaced " })
        // Oldest date first, as documented.
        let dates = records.dropFirst().map { $0[2] }
        #expect(dates == dates.sorted())
    }

    @Test(arguments: StorageEngine.allCases)
    func export_filtersByUserAndDate_andWritesJSONLines(_ engine: StorageEngine) throws {
        let server = try TestServer(engine)
        _ = try server.addUser("bob")
        let alice = try #require(try server.scalar("SELECT id FROM users WHERE name = 'alice'"))
        let bob = try #require(try server.scalar("SELECT id FROM users WHERE name = 'bob'"))
        try server.storage.insertExpenses(20, userID: alice)
        try server.storage.insertExpenses(10, userID: bob, first: 21)
        // A deleted expense is left out.
        try server.storage.execute("UPDATE expenses SET deleted = \(engine == .postgres ? "true" : "1") WHERE transaction_id = 'cp-bulk00000000000000001'")

        let all = try export(server, ["--format", "jsonl"])
        #expect(all.status == 0)
        let lines = all.output.split(separator: 0x0A)
        #expect(lines.count == 29)
        let objects = try lines.map { try #require(try JSONSerialization.jsonObject(with: Data($0)) as? [String: Any]) }
        #expect(objects.filter { $0["user"] as? String == "bob" }.count == 10)
        let expense = try #require(objects.first { ($0["expense"] as? [String: Any])?["transaction_id"] as? String == "cp-bulk00000000000000010" })
        let fields = try #require(expense["expense"] as? [String: Any])
        #expect(fields["merchant"] as? String == "Caf\u{E9}, \"Le\" 10\nx")
        #expect(fields["amount"] as? String == "10.10")
        // The web interface's receipt route (a person's browser opens it), relative...
        #expect(fields["receipt_url"] as? String == "/expenses/cp-bulk00000000000000010/receipt")
        #expect(objects.filter { (($0["expense"] as? [String: Any])?["receipt_url"] as? String) != nil }.count == 6)
        // ...or after --base-url, its trailing slash dropped.
        let based = try CSVReader.parse(try export(server, ["--base-url", "https://expenses.example.com:8443/team/"]).output)
        let column = try #require(based.first?.firstIndex(of: "receipt_url"))
        let links = based.dropFirst().map { $0[column] }.filter { !$0.isEmpty }
        #expect(links.count == 6 && links.contains("https://expenses.example.com:8443/team/expenses/cp-bulk00000000000000010/receipt"), "\(links)")
        #expect(links.allSatisfy { $0.hasPrefix("https://expenses.example.com:8443/team/expenses/cp-bulk") && $0.hasSuffix("/receipt") })

        let bobs = try CSVReader.parse(try export(server, ["--user", "bob"]).output)
        #expect(bobs.count == 11 && bobs.dropFirst().allSatisfy { $0[1] == "bob" })
        // Dates are 2026-01-01 plus i days: from the 25th, i >= 24.
        let since = try CSVReader.parse(try export(server, ["--since", "2026-01-25", "--format=csv"]).output)
        #expect(since.dropFirst().map { $0[0] }.sorted() == (24...30).map { String(format: "cp-bulk%017d", $0) })

        let missing = try runCommand(binary, ["export", "--user", "nobody"] + server.storage.arguments)
        #expect(missing.status == 1 && missing.stdout.isEmpty)
        #expect(missing.stderr == "expense-server: no user 'nobody'\n")
    }
}
