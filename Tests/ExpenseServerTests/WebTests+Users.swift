import ExpenseTestSupport
import Foundation
import Testing

/// The admin's users page, through its forms: what each action does to
/// the API and to web sessions, who may post them, and garbage names.
extension WebTests {
    /// A server with alice (a user, with an expense), bob, and root (an
    /// admin) signed in on the web; root's client and its CSRF token.
    func makeAdmin(_ engine: StorageEngine) throws -> (TestServer, admin: WebClient, csrf: String) {
        let server = try TestServer(engine)
        #expect(try server.create(key: TestServer.key()).status == 201)
        _ = try server.addUser("bob")
        let adminToken = try runCommand(binary, ["user", "add", "root", "--admin"] + server.storage.arguments).stdout
            .trimmingCharacters(in: .newlines)
        let admin = WebClient(server)
        #expect(try admin.signIn(adminToken).status == 303)
        return (server, admin, try WebClient.csrf(in: try admin.get("/users")))
    }

    /// The token a users page shows once.
    static func shownToken(in page: HTTPMessage) throws -> String {
        guard let start = page.text.range(of: "id=\"token\">") else { throw TestFailure("no token shown: \(page.text)") }
        return String(page.text[start.upperBound...].prefix { $0 != "<" })
    }

    @Test(arguments: StorageEngine.allCases)
    func anAdminAddsRotatesRevokesAndDeactivates_throughTheUsersPage(_ engine: StorageEngine) throws {
        let (server, admin, csrf) = try makeAdmin(engine)
        let added = try admin.post("/users/add", ["csrf": csrf, "name": "carol"])
        #expect(added.status == 200 && added.text.contains("Added carol."))
        let first = try Self.shownToken(in: added)
        #expect(first.hasPrefix("esk_") && first.count == 47)
        #expect(try admin.get("/users").text.contains(first) == false, "shown once")
        // The token shown works on the API and on the web.
        let created = try server.create(key: TestServer.key(), auth: .token(first))
        #expect(created.status == 201)
        let expense = try #require(created.transactionID)
        let carol = WebClient(server)
        #expect(try carol.signIn(first).status == 303)
        #expect(try carol.get("/expenses").text.contains(expense))

        // Rotating: the old token and its session stop at once; the new one works.
        let rotated = try admin.post("/users/carol/rotate", ["csrf": csrf])
        #expect(rotated.status == 200 && rotated.text.contains("Rotated the token of carol"))
        let second = try Self.shownToken(in: rotated)
        #expect(second != first)
        #expect(try server.get("/v1/expenses/\(expense)", auth: .token(first)).status == 401)
        let ended = try carol.get("/expenses")
        #expect(ended.status == 303 && ended.header("Location") == "/sign-in")
        #expect(try server.get("/v1/expenses/\(expense)", auth: .token(second)).status == 200)
        #expect(try carol.signIn(second).status == 303)
        #expect(try carol.get("/expenses").status == 200)

        // Revoking: the token and its session stop; a rotation brings carol back.
        let revoked = try admin.post("/users/carol/revoke", ["csrf": csrf])
        #expect(revoked.status == 200 && revoked.text.contains("Revoked the token of carol."))
        #expect(try server.get("/v1/expenses/\(expense)", auth: .token(second)).status == 401)
        #expect(try carol.get("/expenses").status == 303)
        #expect(try admin.get("/users").text.contains("<td>carol</td><td>user</td><td>revoked</td>"))
        let third = try Self.shownToken(in: try admin.post("/users/carol/rotate", ["csrf": csrf]))
        #expect(try carol.signIn(third).status == 303)
        #expect(try carol.get("/expenses").status == 200)

        // Deactivating: no token of carol works again, her expenses stay for the admin.
        let deactivated = try admin.post("/users/carol/deactivate", ["csrf": csrf])
        #expect(deactivated.status == 200 && deactivated.text.contains("Deactivated carol; the expenses are kept."))
        #expect(try server.get("/v1/expenses/\(expense)", auth: .token(third)).status == 401)
        #expect(try server.create(key: TestServer.key(), auth: .token(third)).status == 401)
        #expect(try carol.get("/expenses").status == 303)
        #expect(try WebClient(server).signIn(third).status == 401)
        let list = try admin.get("/expenses?user=carol")
        #expect(list.status == 200 && list.text.contains(expense))
        #expect(try admin.get("/expenses/\(expense)").status == 200)
        let users = try admin.get("/users").text
        #expect(users.contains("<td>carol</td><td>user</td><td>deactivated</td>"))
        #expect(!users.contains("action=\"/users/carol/"), "no actions for a deactivated user")
        let again = try admin.post("/users/carol/rotate", ["csrf": csrf])
        #expect(again.status == 409 && again.text.contains("deactivated") && !again.text.contains("id=\"token\""))
        #expect(try server.scalar("SELECT count(*) FROM expenses WHERE transaction_id = '\(expense)'") == 1)
        // Alice was never touched.
        #expect(try server.get("/v1/expenses/\(expense)", auth: .alice).status == 404)
        #expect(try server.create(key: TestServer.key()).status == 201)
    }

    @Test(arguments: StorageEngine.allCases)
    func theUsersActions_areNotFoundForAUser_forbiddenWithoutTheCSRFToken_andRefuseGarbageNames(_ engine: StorageEngine) throws {
        let (server, admin, csrf) = try makeAdmin(engine)
        let bobToken = try Self.shownToken(in: try admin.post("/users/bob/rotate", ["csrf": csrf]))
        let actions = ["/users/add", "/users/bob/rotate", "/users/bob/revoke", "/users/bob/deactivate"]
        func unchanged(_ because: String) throws {
            #expect(try server.scalar("SELECT count(*) FROM users") == 3, "\(because)")
            #expect(try server.get("/v1/expenses?limit=1", auth: .token(bobToken)).status == 200, "\(because)")
        }

        // A user, with a good CSRF token of her own session: not found.
        let alice = WebClient(server)
        try alice.signIn(server.token)
        let aliceCSRF = try WebClient.csrf(in: try alice.get("/expenses"))
        for path in actions {
            let refused = try alice.post(path, ["csrf": aliceCSRF, "name": "mallory"])
            #expect(refused.status == 404 && refused.text.contains("Not found"), "\(path)")
        }
        #expect(try alice.get("/users").status == 404)
        try unchanged("a user's posts")

        // The admin, without the session's CSRF token (or with alice's): forbidden.
        for token in [nil, "", "wrong", String(repeating: "A", count: 43), aliceCSRF] {
            for path in actions {
                var form = ["name": "mallory"]
                form["csrf"] = token
                let refused = try admin.post(path, form)
                #expect(refused.status == 403 && refused.text.contains("not sent by this site"), "\(path) \(token ?? "none")")
            }
        }
        try unchanged("forms without the CSRF token")

        // Garbage names to add: a clear error, no token, no user.
        for name in ["", String(repeating: "x", count: 65), "a\u{7}b", "a\nb", "a\u{0}b", "../", "../etc", "..", ".", "a/b",
                     " bob", "bob ", "bøb", "<b>"] {
            let refused = try admin.post("/users/add", ["csrf": csrf, "name": name])
            #expect(refused.status == 400, "\(name.debugDescription)")
            #expect(refused.text.contains("invalid user name"), "\(name.debugDescription)")
            #expect(!refused.text.contains("id=\"token\""), "\(name.debugDescription)")
        }
        let taken = try admin.post("/users/add", ["csrf": csrf, "name": "bob"])
        #expect(taken.status == 400 && taken.text.contains("user &#39;bob&#39; already exists") && !taken.text.contains("id=\"token\""))
        let badBox = try admin.post("/users/add", ["csrf": csrf, "name": "dave", "admin": "yes"])
        #expect(badBox.status == 400 && badBox.text.contains("admin box"))
        // Garbage names and actions in the path: not found.
        for path in ["/users/..%2F/rotate", "/users/%2E%2E/revoke", "/users/%00/rotate", "/users/b%0Aob/deactivate", "/users/%ZZ/rotate",
                     "/users/nobody/rotate", "/users/bob/promote", "/users/bob/rotate/x", "/users//revoke"] {
            let refused = try admin.post(path, ["csrf": csrf])
            #expect(refused.status == 404, "\(path): \(refused.status)")
            #expect(!refused.text.contains("id=\"token\""), "\(path)")
        }
        try unchanged("garbage names")
    }
}
