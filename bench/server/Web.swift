import ExpenseTestSupport
import Foundation

/// `bench-server --web`: the web interface's list for a user with 100,000
/// expenses (the first page and one near the end, with the totals every
/// page shows), and the export's rows per second beside `sqlite3 -csv` of
/// the same rows from the same database file, run in the same process.
struct WebBench {
    let settings: Settings
    let rows = 100_000

    func report() throws {
        let scratch = TemporaryDirectory(prefix: "bench-web")
        let server = try ServerProcess(dataDirectory: scratch.at("data"), executable: settings.server, outputDirectory: scratch.path)
        defer { server.stop() }
        let storage = try StorageFixture(.sqlite, dataDirectory: server.dataDirectory)
        guard let alice = try storage.scalar("SELECT id FROM users WHERE name = 'alice'") else { throw TestFailure("no alice") }
        try storage.insertExpenses(rows, userID: alice)
        let cookie = try signIn(port: server.port, token: server.token)
        print("expense-server web interface: \(ProcessInfo.processInfo.activeProcessorCount) cores, loopback, SQLite, one user with \(rows) expenses")
        print("server: \(settings.server)")
        print("")
        print("list page (50 rows, the count and totals per currency of all \(rows)), one client, \(settings.seconds) s per row")
        print("page                                   req/s     p50 ms   p99 ms   errors")
        let lastPage = (rows + 49) / 50
        for (name, path) in [("/expenses (page 1)", "/expenses"), ("/expenses?page=\(lastPage - 1)", "/expenses?page=\(lastPage - 1)"),
                             ("/expenses?merchant=Shop+99 (page 1)", "/expenses?merchant=Shop+99")] {
            let m = run(clients: 1, seconds: settings.seconds, port: server.port) { connection, _, _ in
                let (message, ns) = try timed { try connection.request("GET", path, headers: [("Cookie", cookie)]) }
                return message.status == 200 && message.body.count > 10_000 ? (0, ns) : nil
            }
            print(name.padding(toLength: 36, withPad: " ", startingAt: 0) + String(format: " %8.0f  %8.2f %8.2f   %d", m.perSecond, m.percentile(0.5), m.percentile(0.99), m.failures))
        }

        print("")
        print("export of \(rows) rows (best of 3), beside sqlite3 -csv of the same rows and columns from the same file")
        print("what                                          seconds    rows/s    ratio to sqlite3")
        let database = "\(server.dataDirectory)/expense-server.db"
        let baseline = try best { _ = try runCommand("/usr/bin/sqlite3", ["-csv", "-header", database, Self.sqliteQuery], timeout: 300) }
        func line(_ name: String, _ seconds: Double) {
            print(name.padding(toLength: 44, withPad: " ", startingAt: 0)
                  + String(format: " %8.3f  %9.0f   %.2f", seconds, Double(rows) / seconds, baseline / seconds))
        }
        line("sqlite3 -csv (baseline)", baseline)
        line("expense-server export --format csv", try best {
            let result = try runCommand(settings.server, ["export", "--format", "csv", "--data-dir", server.dataDirectory], timeout: 300)
            guard result.status == 0 else { throw TestFailure("export: \(result.stderr)") }
        })
        line("expense-server export --format jsonl", try best {
            _ = try runCommand(settings.server, ["export", "--format", "jsonl", "--data-dir", server.dataDirectory], timeout: 300)
        })
        line("GET /expenses/export?format=csv (web)", try best {
            let message = try HTTPConnection(port: server.port, timeout: 300).request("GET", "/expenses/export?format=csv", headers: [("Cookie", cookie)])
            guard message.status == 200 else { throw TestFailure("web export: \(message.status)") }
        })
    }

    /// The export's columns, as sqlite3 computes them from the same rows.
    static let sqliteQuery = """
        SELECT e.transaction_id, u.name, e.date, e.merchant, e.amount, e.currency, e.category, e.comment, e.tax_tag,
               CASE WHEN e.receipt_file IS NULL THEN NULL ELSE '/v1/expenses/' || e.transaction_id || '/receipt' END,
               e.receipt_type, e.receipt_sha256, e.receipt_size, e.version, e.created_at, e.updated_at,
               CASE WHEN e.deleted THEN 'true' ELSE 'false' END, CASE WHEN e.conflicts <> '{}' THEN 'true' ELSE 'false' END
        FROM expenses e JOIN users u ON u.id = e.user_id WHERE e.deleted = 0 ORDER BY e.date, e.id
        """

    /// The fastest of three runs of `body`, in seconds.
    func best(_ body: () throws -> Void) throws -> Double {
        var fastest = Double.infinity
        for _ in 0..<3 {
            let start = DispatchTime.now().uptimeNanoseconds
            try body()
            fastest = min(fastest, Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9)
        }
        return fastest
    }

    /// Signs in through the form and returns the `Cookie` header value of the session.
    func signIn(port: UInt16, token: String) throws -> String {
        let form = try HTTPConnection(port: port).request("GET", "/sign-in")
        guard let signIn = Self.cookie("es_signin", in: form), let range = form.text.range(of: "name=\"csrf\" value=\"") else {
            throw TestFailure("no sign-in form")
        }
        let csrf = form.text[range.upperBound...].prefix { $0 != "\"" }
        let body = "csrf=\(csrf)&token=\(token)"
        let answer = try HTTPConnection(port: port).request("POST", "/sign-in", headers: [
            ("Cookie", "es_signin=\(signIn)"), ("Content-Type", "application/x-www-form-urlencoded"),
        ], body: Array(body.utf8))
        guard let session = Self.cookie("es_session", in: answer) else { throw TestFailure("not signed in: \(answer.status)") }
        return "es_session=\(session)"
    }

    static func cookie(_ name: String, in message: HTTPMessage) -> String? {
        for (header, value) in message.headers where header.lowercased() == "set-cookie" && value.hasPrefix("\(name)=") {
            return String(value.dropFirst(name.count + 1).prefix { $0 != ";" })
        }
        return nil
    }
}
