import ExpenseTestSupport
import Foundation
import Testing

/// The web interface over HTTP, on both engines: sessions and their
/// cookies, CSRF, who sees what, escaping, receipts, the versioned edit,
/// the list's filters and garbage in every form and query.
@Suite struct WebTests {
    let binary = BuiltProducts.path("expense-server")

    /// A server with alice (a user), an expense of hers, and bob with one of his.
    func makeServer(_ engine: StorageEngine) throws -> (TestServer, alice: String, bob: String) {
        let server = try TestServer(engine)
        let created = try server.create(key: TestServer.key())
        #expect(created.status == 201)
        let bobToken = try server.addUser("bob")
        let bobs = try server.create(key: TestServer.key(), auth: .token(bobToken))
        return (server, try #require(created.json?["transaction_id"] as? String), try #require(bobs.json?["transaction_id"] as? String))
    }

    @Test(arguments: StorageEngine.allCases)
    func signIn_givesAStrictHttpOnlyCookie_andEveryAnswerHasItsSecurityHeaders(_ engine: StorageEngine) throws {
        let (server, alice, _) = try makeServer(engine)
        let client = WebClient(server)
        #expect(try client.get("/expenses").status == 303)
        let signedIn = try client.signIn(server.token)
        #expect(signedIn.status == 303 && signedIn.header("Location") == "/expenses")
        let cookie = try #require(signedIn.headers.first { $0.name == "Set-Cookie" && $0.value.hasPrefix("es_session=") }?.value)
        for attribute in ["HttpOnly", "SameSite=Strict", "Path=/", "Max-Age=28800"] { #expect(cookie.contains(attribute), "\(cookie)") }
        #expect(!cookie.contains("Secure"), "no TLS here")
        for path in ["/expenses", "/expenses/\(alice)", "/expenses/cp-nothing", "/sign-in", "/nowhere"] {
            let page = try client.get(path)
            #expect(page.header("Content-Security-Policy")?.contains("default-src 'none'") == true, "\(path)")
            #expect(page.header("X-Content-Type-Options") == "nosniff", "\(path)")
            #expect(page.header("Cache-Control") == "no-store", "\(path)")
        }
        #expect(try client.get("/expenses").text.contains("Blue Bottle"))
        // Signing out ends the session on the server, not only in the browser.
        let stolen = client.cookies["es_session"]
        let out = try client.post("/sign-out", ["csrf": try WebClient.csrf(in: try client.get("/expenses"))])
        #expect(out.status == 303 && out.header("Clear-Site-Data") == "\"cache\"")
        #expect(try client.get("/expenses").status == 303)
        let thief = WebClient(server)
        _ = try thief.send("GET", "/expenses", headers: [("Cookie", "es_session=\(stolen ?? "")")])
        #expect(thief.last?.status == 303)
        // A wrong token is refused with the form again.
        let wrong = try WebClient(server).signIn("esk_" + String(repeating: "A", count: 43))
        #expect(wrong.status == 401 && wrong.text.contains("not valid"))
    }

    @Test(arguments: StorageEngine.allCases)
    func formsWithoutOrWithAWrongCSRFToken_areRefused_andChangeNothing(_ engine: StorageEngine) throws {
        let (server, alice, _) = try makeServer(engine)
        let client = WebClient(server)
        try client.signIn(server.token)
        var form = try WebClient.editForm("merchant", in: try client.get("/expenses/\(alice)"))
        form["value"] = "Changed"
        for csrf in [nil, "", "wrong", String(repeating: "A", count: 43)] {
            var attempt = form
            attempt["csrf"] = csrf
            let refused = try client.post("/expenses/\(alice)/edit", attempt)
            #expect(refused.status == 403, "\(csrf ?? "none")")
        }
        #expect(try server.scalar("SELECT version FROM expenses") == 1)
        // Signing in needs the token of the sign-in page's own cookie.
        let other = WebClient(server)
        let page = try other.get("/sign-in")
        let forged = WebClient(server)
        #expect(try forged.post("/sign-in", ["csrf": try WebClient.csrf(in: page), "token": server.token]).status == 403)
        #expect(forged.cookies["es_session"] == nil)
        // Signing out without it leaves the session working.
        #expect(try client.post("/sign-out", [:]).status == 403)
        #expect(try client.get("/expenses").status == 200)
        #expect(try client.post("/expenses/\(alice)/edit", form).status == 303)
        #expect(try server.scalar("SELECT version FROM expenses WHERE merchant = 'Changed'") == 2)
    }

    @Test(arguments: StorageEngine.allCases)
    func anotherUsersExpense_isNotFound_butAnAdminSeesIt(_ engine: StorageEngine) throws {
        let (server, _, bobs) = try makeServer(engine)
        let alice = WebClient(server)
        try alice.signIn(server.token)
        #expect(try alice.get("/expenses").text.contains(bobs) == false)
        for path in ["/expenses/\(bobs)", "/expenses/\(bobs)/receipt", "/expenses/cp-0000000000000000000000", "/expenses/%3Cx%3E", "/users"] {
            let page = try alice.get(path)
            #expect(page.status == 404, "\(path)")
            #expect(page.text.contains("Not found"), "\(path)")
        }
        var form = try WebClient.editForm("merchant", in: try alice.get("/expenses"), orFirstExpenseOf: alice)
        form["value"] = "Hijacked"
        #expect(try alice.post("/expenses/\(bobs)/edit", form).status == 404)
        #expect(try server.scalar("SELECT count(*) FROM expenses WHERE merchant = 'Hijacked'") == 0)

        let adminToken = try runCommand(binary, ["user", "add", "root", "--admin"] + server.storage.arguments).stdout
            .trimmingCharacters(in: .newlines)
        let admin = WebClient(server)
        try admin.signIn(adminToken)
        #expect(try admin.get("/expenses").text.contains(bobs))
        #expect(try admin.get("/expenses/\(bobs)").status == 200)
        // A deactivated user's expenses stay visible to admins.
        #expect(try runCommand(binary, ["user", "deactivate", "bob"] + server.storage.arguments).status == 0)
        let page = try admin.get("/expenses?user=bob")
        #expect(page.status == 200 && page.text.contains(bobs))
        #expect(try admin.get("/users").text.contains("deactivated"))
    }

    @Test(arguments: StorageEngine.allCases)
    func revokingOrRotatingTheToken_endsItsSessionsAtTheNextRequest(_ engine: StorageEngine) throws {
        let (server, _, _) = try makeServer(engine)
        let client = WebClient(server)
        try client.signIn(server.token)
        #expect(try client.get("/expenses").status == 200)
        #expect(try runCommand(binary, ["user", "revoke", "alice"] + server.storage.arguments).status == 0)
        let after = try client.get("/expenses")
        #expect(after.status == 303 && after.header("Location") == "/sign-in")
        let token = try runCommand(binary, ["user", "rotate", "alice"] + server.storage.arguments).stdout.trimmingCharacters(in: .newlines)
        #expect(try WebClient(server).signIn(server.token).status == 401)
        try client.signIn(token)
        #expect(try client.get("/expenses").status == 200)
        #expect(try runCommand(binary, ["user", "rotate", "alice"] + server.storage.arguments).status == 0)
        #expect(try client.get("/expenses").status == 303)
    }

    @Test(arguments: StorageEngine.allCases)
    func hostileValues_areEscapedEverywhere(_ engine: StorageEngine) throws {
        let server = try TestServer(engine)
        let hostile = #"{"merchant": "<script>alert(1)</script>", "amount": "1.00", "currency": "EUR", "date": "2026-01-02", "#
            + #""category": "javascript:alert(2)", "comment": "\"><img src=x onerror=alert(3)>'"}"#
        let created = try server.create(key: TestServer.key(), hostile)
        let id = try #require(created.json?["transaction_id"] as? String)
        let client = WebClient(server)
        try client.signIn(server.token)
        for page in [try client.get("/expenses"), try client.get("/expenses/\(id)"), try client.get("/expenses?merchant=%3Cscript%3E")] {
            #expect(page.status == 200)
            #expect(!page.text.contains("<script"), "\(page.text)")
            #expect(!page.text.contains("<img src=x"))
            #expect(!page.text.contains("href=\"javascript:"))
        }
        let detail = try client.get("/expenses/\(id)").text
        #expect(detail.contains("&lt;script&gt;alert(1)&lt;/script&gt;"))
        #expect(detail.contains("&quot;&gt;&lt;img src=x onerror=alert(3)&gt;&#39;"))
    }

    @Test(arguments: StorageEngine.allCases)
    func receipts_areServedWithTheirCheckedType_nosniff_inASandbox_neverAsHTML(_ engine: StorageEngine) throws {
        let (server, alice, _) = try makeServer(engine)
        let png = TestServer.png()
        #expect(try server.putReceipt(alice, key: TestServer.key(), bytes: png).status == 200)
        let client = WebClient(server)
        try client.signIn(server.token)
        #expect(try client.get("/expenses/\(alice)").text.contains("<img class=\"receipt\" id=\"receipt\""))
        let receipt = try client.get("/expenses/\(alice)/receipt")
        #expect(receipt.status == 200 && receipt.body == png)
        #expect(receipt.header("Content-Type") == "image/png")
        #expect(receipt.header("X-Content-Type-Options") == "nosniff")
        #expect(receipt.header("Content-Security-Policy") == "default-src 'none'; sandbox")
        // SVG and HTML never get in through the API...
        let svg = Array(#"<svg xmlns="http://www.w3.org/2000/svg" onload="alert(1)"/>"#.utf8)
        for type in ["image/svg+xml", "text/html", "image/png"] {
            #expect(try server.putReceipt(alice, key: TestServer.key(), bytes: svg, contentType: type).status >= 400, "\(type)")
        }
        // ...and a type the server did not check (a database changed by
        // hand) is a download, not a page.
        try server.storage.execute("UPDATE expenses SET receipt_type = 'text/html' WHERE transaction_id = '\(alice)'")
        let tampered = try client.get("/expenses/\(alice)/receipt")
        #expect(tampered.header("Content-Type") == "application/octet-stream")
        #expect(tampered.header("Content-Disposition")?.hasPrefix("attachment") == true)
    }

    @Test(arguments: StorageEngine.allCases)
    func anEditFromAStalePage_isRefusedWithTheConflict_andChangesNothing(_ engine: StorageEngine) throws {
        let (server, alice, _) = try makeServer(engine)
        let client = WebClient(server)
        try client.signIn(server.token)
        // Two tabs on the same version.
        var first = try WebClient.editForm("merchant", in: try client.get("/expenses/\(alice)"))
        var second = try WebClient.editForm("merchant", in: try client.get("/expenses/\(alice)"))
        #expect(first["base_version"] == "1" && second["base_version"] == "1" && first["key"] != second["key"])
        first["value"] = "First tab"
        second["value"] = "Second tab"
        let saved = try client.post("/expenses/\(alice)/edit", first)
        #expect(saved.status == 303)
        let shown = try client.get(try #require(saved.header("Location")))
        #expect(shown.text.contains("id=\"version\">2<") && shown.text.contains("First tab"))
        #expect(shown.text.contains("merchant: Blue Bottle → First tab"))
        // Sent again (a double click): the same change, once.
        #expect(try client.post("/expenses/\(alice)/edit", first).status == 303)
        #expect(try server.scalar("SELECT version FROM expenses WHERE transaction_id = '\(alice)'") == 2)

        let stale = try client.post("/expenses/\(alice)/edit", second)
        #expect(stale.status == 409)
        #expect(stale.text.contains("id=\"stale\"") && stale.text.contains("<q id=\"current-value\">First tab</q>"))
        #expect(try server.scalar("SELECT count(*) FROM expenses WHERE merchant = 'First tab' AND version = 2") == 1)
        // Saving over it from the conflict is an edit at the new version.
        var over = try WebClient.editForm("merchant", in: stale)
        over["value"] = "Second tab"
        #expect(try client.post("/expenses/\(alice)/edit", over).status == 303)
        #expect(try server.scalar("SELECT version FROM expenses WHERE merchant = 'Second tab'") == 3)
        #expect(try server.scalar("SELECT count(*) FROM expense_versions v JOIN expenses e ON e.id = v.expense_id WHERE e.transaction_id = '\(alice)'") == 3)
    }

    @Test(arguments: StorageEngine.allCases)
    func garbageInFormsAndQueries_getsAClearRefusal(_ engine: StorageEngine) throws {
        let (server, alice, _) = try makeServer(engine)
        let client = WebClient(server)
        try client.signIn(server.token)
        for query in ["from=2026-13-01", "to=yesterday", "state=lost", "sort=random", "page=0", "page=abc", "page=99999999999",
                      "merchant=a&merchant=b", "merchant=%ZZ", "merchant=%FF", "user=nobody"] {
            let page = try client.get("/expenses?\(query)")
            #expect(page.status == 400, "\(query)")
            #expect(page.text.contains("id=\"error\""), "\(query)")
        }
        #expect(try client.get("/expenses/export?format=xlsx").status == 400)
        let form = try WebClient.editForm("amount", in: try client.get("/expenses/\(alice)"))
        let bad: [(String, String, String)] = [
            ("value", "12.345", "amount"), ("value", "-0", "negative zero"), ("field", "user_id", "cannot be edited"),
            ("base_version", "x", "valid version"), ("base_version", "0", "valid version"), ("key", "", "valid key"),
            ("key", "web-<script>", "valid key"), ("value", String(repeating: "9", count: 5000), "too long"),
        ]
        for (name, value, says) in bad {
            var attempt = form
            attempt["value"] = attempt["value"] ?? "1.00"
            attempt[name] = value
            let refused = try client.post("/expenses/\(alice)/edit", attempt)
            #expect(refused.status == 400, "\(name)=\(value): \(refused.status)")
            #expect(refused.text.contains(says), "\(name)=\(value)")
        }
        #expect(try client.post("/expenses/\(alice)/edit", form, contentType: "application/json").status == 415)
        let huge = try client.send("POST", "/expenses/\(alice)/edit", headers: [("Content-Type", "application/x-www-form-urlencoded")],
                                   body: Array(repeating: UInt8(ascii: "a"), count: 70_000))
        #expect(huge.status == 413)
        #expect(try client.send("POST", "/expenses/\(alice)/edit", headers: [("Content-Type", "application/x-www-form-urlencoded")],
                                body: Array("csrf=%E0%80".utf8)).status == 400)
        #expect(try client.send("DELETE", "/expenses/\(alice)", headers: []).status == 405)
        #expect(try server.scalar("SELECT version FROM expenses WHERE transaction_id = '\(alice)'") == 1)
    }

    @Test(arguments: StorageEngine.allCases)
    func theList_filtersPagesAndTotals_andExportsWhatItShows(_ engine: StorageEngine) throws {
        let server = try TestServer(engine)
        let alice = try #require(try server.scalar("SELECT id FROM users WHERE name = 'alice'"))
        try server.storage.insertExpenses(120, userID: alice)
        let client = WebClient(server)
        try client.signIn(server.token)
        let first = try client.get("/expenses")
        #expect(first.text.contains("120 expenses · page 1 of 3"))
        #expect(first.text.components(separatedBy: "<tr class=\"expense\">").count - 1 == 50)
        // Amounts i % 1000 + (i % 100) / 100 for i in 1...120; USD for i % 3 == 0.
        let usd = (1...120).filter { $0 % 3 == 0 }.reduce(0) { $0 + ($1 % 1000) * 100 + $1 % 100 }
        #expect(first.text.contains("<td>USD</td><td>40</td><td class=\"amount\">\(usd / 100).\(String(format: "%02d", usd % 100))</td>"))
        let third = try client.get("/expenses?page=3")
        #expect(third.text.components(separatedBy: "<tr class=\"expense\">").count - 1 == 20)
        #expect(third.text.contains("id=\"previous\"") && !third.text.contains("id=\"next\""))
        let receipts = try client.get("/expenses?state=receipt&merchant=SHOP+1")
        // Shop 1, 10..19 (merchant 'Shop 10' is the accented one for 10), 100..119 with a receipt: i % 5 == 0.
        let expected = (1...120).filter { $0 % 5 == 0 && $0 % 10 != 0 && String($0).hasPrefix("1") }
        #expect(receipts.text.contains("\(expected.count) expenses"), "\(expected)")
        let export = try client.get("/expenses/export?state=receipt&merchant=SHOP+1&format=csv")
        #expect(export.status == 200 && export.header("Content-Type")?.hasPrefix("text/csv") == true)
        #expect(export.header("Content-Disposition") == "attachment; filename=\"expenses.csv\"")
        let rows = try CSVReader.parse(export.body)
        #expect(rows.dropFirst().map { $0[0] }.sorted() == expected.map { String(format: "cp-bulk%017d", $0) }.sorted())
        #expect(rows.dropFirst().allSatisfy { $0[9].hasPrefix("http://127.0.0.1/expenses/cp-bulk") && $0[9].hasSuffix("/receipt") })
        let dated = try client.get("/expenses?from=2026-01-10&to=2026-01-12&sort=date")
        #expect(dated.text.contains("3 expenses"))
    }
}

extension WebClient {
    /// The edit form of `field` of the first expense a list shows.
    static func editForm(_ field: String, in list: HTTPMessage, orFirstExpenseOf client: WebClient) throws -> [String: String] {
        guard let start = list.text.range(of: "<a class=\"open\" href=\"") else { throw TestFailure("no expense listed") }
        let path = list.text[start.upperBound...].prefix { $0 != "\"" }
        return try editForm(field, in: try client.get(String(path)))
    }
}
