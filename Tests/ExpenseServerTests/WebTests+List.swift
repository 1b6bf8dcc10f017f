import Digest
import ExpenseTestSupport
import Foundation
import Testing

/// The list's filters and sorts on expenses of every state, the expense
/// page's conflict and PDF receipt, the export's receipt links, and
/// sessions that expire on the server.
extension WebTests {
    /// Alice's expenses, one of each state the list can filter on, by name.
    struct Mix {
        let server: TestServer
        let ids: [String: String]
        let pdf: [UInt8]
        let png: [UInt8]
    }

    /// Creates, in this order: apple (Travel, PNG), Bakery (Meals, PDF),
    /// Cafe (Meals, a conflict), Deli (Office, deleted), Emporium (Travel,
    /// no receipt); then changes them, each change on a later millisecond
    /// than the one before so that "last changed" has one order: apple's
    /// receipt, Bakery's, Cafe's edits, Deli's deletion. Bob has one too.
    func makeMix(_ engine: StorageEngine) throws -> Mix {
        let server = try TestServer(engine)
        var ids: [String: String] = [:]
        let made: [(String, String, String)] = [("apple", "2026-03-05", "Travel"), ("Bakery", "2026-03-01", "Meals"),
                                                ("Cafe", "2026-03-10", "Meals"), ("Deli", "2026-02-20", "Office"),
                                                ("Emporium", "2026-03-03", "Travel")]
        for (merchant, date, category) in made {
            let body = #"{"merchant": "\#(merchant)", "amount": "10.00", "currency": "EUR", "date": "\#(date)", "category": "\#(category)"}"#
            let created = try server.create(key: TestServer.key(), body)
            #expect(created.status == 201)
            ids[merchant] = try #require(created.json?["transaction_id"] as? String)
            Self.nextMillisecond()
        }
        let bob = try server.addUser("bob")
        #expect(try server.create(key: TestServer.key(), #"{"merchant": "Bobs", "amount": "1.00", "currency": "EUR", "date": "2026-03-04", "category": "Meals"}"#,
                                  auth: .token(bob)).status == 201)
        let png = TestServer.png()
        let pdf = Array("%PDF-1.4\n1 0 obj <<>> endobj\ntrailer <<>>\n%%EOF\n".utf8) + TestServer.png(500, seed: 7)
        #expect(try server.putReceipt(ids["apple"]!, key: TestServer.key(), bytes: png).status == 200)
        Self.nextMillisecond()
        #expect(try server.putReceipt(ids["Bakery"]!, key: TestServer.key(), bytes: pdf, contentType: "application/pdf").status == 200)
        Self.nextMillisecond()
        // Two devices' edits from version 1: the second's tax tag is a conflict.
        #expect(try server.patch(ids["Cafe"]!, key: TestServer.key(), #"{"base_version": 1, "set": {"tax_tag": "T1"}}"#).status == 200)
        let stale = try server.patch(ids["Cafe"]!, key: TestServer.key(), #"{"base_version": 1, "set": {"tax_tag": "<T2>"}}"#)
        #expect(stale.status == 200 && stale.expense["conflict"] as? Bool == true)
        Self.nextMillisecond()
        #expect(try server.delete(ids["Deli"]!, key: TestServer.key()).status == 200)
        return Mix(server: server, ids: ids, pdf: pdf, png: png)
    }

    /// Waits until the wall clock has passed the next millisecond (the
    /// resolution of `updated_at`), however fast the requests were.
    static func nextMillisecond() {
        let start = Date().timeIntervalSince1970
        while Date().timeIntervalSince1970 - start < 0.002 { usleep(200) }
    }

    /// The merchants of a list page's rows, in order.
    static func merchants(_ page: HTTPMessage) -> [String] {
        page.text.components(separatedBy: "<tr class=\"expense\">").dropFirst().map { row in
            guard let start = row.range(of: "<a class=\"open\" href=\"") else { return "?" }
            let rest = row[start.upperBound...]
            guard let close = rest.range(of: "\">") else { return "?" }
            return String(rest[close.upperBound...].prefix { $0 != "<" })
        }
    }

    @Test(arguments: StorageEngine.allCases)
    func theListsFiltersAndSorts_selectAndOrderEveryState(_ engine: StorageEngine) throws {
        let mix = try makeMix(engine)
        let client = WebClient(mix.server)
        try client.signIn(mix.server.token)
        let expected: [(String, [String])] = [
            // Not deleted, newest date first, is the default.
            ("", ["Cafe", "apple", "Emporium", "Bakery"]),
            ("category=Meals", ["Cafe", "Bakery"]),
            ("category=Travel", ["apple", "Emporium"]),
            ("category=Office", []),
            ("category=meals", []),
            ("state=receipt", ["apple", "Bakery"]),
            ("state=no-receipt", ["Cafe", "Emporium"]),
            ("state=conflict", ["Cafe"]),
            ("state=deleted", ["Deli"]),
            ("state=deleted&category=Office", ["Deli"]),
            ("state=receipt&category=Meals", ["Bakery"]),
            ("from=2026-03-03&to=2026-03-05", ["apple", "Emporium"]),
            ("from=2026-03-11", []),
            ("sort=date-desc", ["Cafe", "apple", "Emporium", "Bakery"]),
            ("sort=date", ["Bakery", "Emporium", "apple", "Cafe"]),
            // Byte order, as both engines compare text: capitals first.
            ("sort=merchant", ["Bakery", "Cafe", "Emporium", "apple"]),
            ("sort=updated-desc", ["Cafe", "Bakery", "apple", "Emporium"]),
            ("sort=date&state=receipt", ["Bakery", "apple"]),
            ("sort=merchant&category=Travel", ["Emporium", "apple"]),
        ]
        for (query, merchants) in expected {
            let page = try client.get("/expenses?\(query)")
            #expect(page.status == 200, "\(query)")
            #expect(Self.merchants(page) == merchants, "\(query)")
            #expect(page.text.contains("\(merchants.count) expenses · page 1 of 1"), "\(query)")
        }
        // The badges say what each row is.
        let all = try client.get("/expenses").text
        #expect(all.components(separatedBy: "<span class=\"badge conflict\">conflict</span>").count == 2)
        #expect(try client.get("/expenses?state=deleted").text.contains("<span class=\"badge\">deleted</span>"))
        #expect(!all.contains("Bobs"))
    }

    @Test(arguments: StorageEngine.allCases)
    func theExpensePage_showsTheConflict_andLinksThePDF_servedAsAPDF(_ engine: StorageEngine) throws {
        let mix = try makeMix(engine)
        let client = WebClient(mix.server)
        try client.signIn(mix.server.token)
        let cafe = try client.get("/expenses/\(mix.ids["Cafe"]!)")
        #expect(cafe.status == 200)
        #expect(cafe.text.contains("<div class=\"error\" id=\"conflicts\">"))
        #expect(cafe.text.contains("<tr><td>tax_tag</td><td>T1</td><td>&lt;T2&gt;</td></tr>"), "\(cafe.text)")
        #expect(cafe.text.contains("id=\"no-receipt\""))
        #expect(try client.get("/expenses/\(mix.ids["Emporium"]!)").text.contains("id=\"conflicts\"") == false)

        let bakery = try client.get("/expenses/\(mix.ids["Bakery"]!)").text
        #expect(bakery.contains("<a id=\"receipt-link\" href=\"/expenses/\(mix.ids["Bakery"]!)/receipt\">Receipt (PDF, \(mix.pdf.count) bytes)</a>"))
        #expect(!bakery.contains("<img"))
        let pdf = try client.get("/expenses/\(mix.ids["Bakery"]!)/receipt")
        #expect(pdf.status == 200 && pdf.body == mix.pdf)
        #expect(pdf.header("Content-Type") == "application/pdf")
        #expect(pdf.header("X-Content-Type-Options") == "nosniff")
        #expect(pdf.header("Content-Security-Policy") == "default-src 'none'; sandbox")
        // A deleted expense's page has no forms and its receipt route is not found.
        let deli = try client.get("/expenses/\(mix.ids["Deli"]!)")
        #expect(deli.status == 200 && !deli.text.contains("id=\"edit-"))
        #expect(try client.get("/expenses/\(mix.ids["Deli"]!)/receipt").status == 404)
    }

    @Test(arguments: StorageEngine.allCases)
    func theWebExportsReceiptLinks_openWithTheSessionCookie(_ engine: StorageEngine) throws {
        let mix = try makeMix(engine)
        let client = WebClient(mix.server)
        try client.signIn(mix.server.token)
        let export = try client.get("/expenses/export?state=receipt&format=csv")
        #expect(export.status == 200)
        let rows = try CSVReader.parse(export.body)
        let column = try #require(rows.first?.firstIndex(of: "receipt_url"))
        let links = Dictionary(uniqueKeysWithValues: rows.dropFirst().map { ($0[0], $0[column]) })
        #expect(links.count == 2)
        for (name, bytes) in [("apple", mix.png), ("Bakery", mix.pdf)] {
            let id = mix.ids[name]!
            let link = try #require(links[id])
            #expect(link == "http://127.0.0.1/expenses/\(id)/receipt", "\(link)")
            let path = String(link.dropFirst("http://127.0.0.1".count))
            let followed = try client.get(path)
            #expect(followed.status == 200 && followed.body == bytes, "\(name)")
            // A browser without the session is sent to sign in.
            let stranger = try WebClient(mix.server).get(path)
            #expect(stranger.status == 303 && stranger.header("Location") == "/sign-in")
        }
        let jsonl = try client.get("/expenses/export?state=receipt&format=jsonl").text
        #expect(jsonl.contains("\"receipt_url\":\"http://127.0.0.1/expenses/\(mix.ids["apple"]!)/receipt\""), "\(jsonl)")
    }

    /// The export's links are built from the request's Host header: a
    /// host and a port go in, anything else is refused, never written
    /// into every row.
    @Test func theWebExport_takesItsOriginFromAHostHeaderThatIsAHost_andRefusesAnyOther() throws {
        let mix = try makeMix(.sqlite)
        let client = WebClient(mix.server)
        try client.signIn(mix.server.token)
        let cookie = client.cookies.map { "\($0.key)=\($0.value)" }.joined(separator: "; ")
        func export(host: String) throws -> HTTPMessage {
            let connection = try mix.server.connect()
            try connection.send("GET /expenses/export?state=receipt&format=csv HTTP/1.1\r\nHost: \(host)\r\nCookie: \(cookie)\r\n\r\n")
            return try connection.readResponse()
        }
        let named = try export(host: "expenses.example:8080")
        #expect(named.status == 200)
        let links = try CSVReader.parse(named.body).dropFirst().map { $0[9] }
        #expect(links.count == 2 && links.allSatisfy { $0.hasPrefix("http://expenses.example:8080/expenses/cp-") }, "\(links)")
        for host in ["evil.example/phish?at=", "a\"b", "user@evil.example", "a b", ":8080"] {
            let refused = try export(host: host)
            #expect(refused.status == 400, "\(host): \(refused.status)")
            #expect(!refused.text.contains("/receipt"), "\(host)")
        }
    }

    @Test(arguments: StorageEngine.allCases)
    func aSessionPastItsExpiry_goesToSignIn_andTheUpkeepDeletesItsRow(_ engine: StorageEngine) throws {
        let server = try TestServer(engine)
        let expired = WebClient(server), live = WebClient(server)
        try expired.signIn(server.token)
        try live.signIn(server.token)
        #expect(try expired.get("/expenses").status == 200)
        let id = try #require(expired.cookies["es_session"])
        let hash = SHA256.hexDigest(id)
        #expect(try server.scalar("SELECT count(*) FROM sessions") == 2)
        // One millisecond past its expiry (the database holds the expiry, not the cookie).
        let past = Int64(Date().timeIntervalSince1970 * 1000) - 1
        try server.storage.execute("UPDATE sessions SET expires_at_ms = \(past) WHERE id_hash = '\(hash)'")
        let after = try expired.get("/expenses")
        #expect(after.status == 303 && after.header("Location") == "/sign-in")
        #expect(try expired.post("/sign-out", ["csrf": "x"]).status == 303, "signing out of a session that ended is no error")
        #expect(try live.get("/expenses").status == 200)
        // A server process forgets expired sessions when it starts (and hourly).
        #expect(try server.scalar("SELECT count(*) FROM sessions WHERE id_hash = '\(hash)'") == 1)
        let other = try server.anotherProcess()
        defer { withExtendedLifetime(other) {} }
        #expect(try server.scalar("SELECT count(*) FROM sessions WHERE id_hash = '\(hash)'") == 0)
        #expect(try server.scalar("SELECT count(*) FROM sessions") == 1)
        #expect(try live.get("/expenses").status == 200)
    }
}
