import Digest
import ExpenseCore
import HTTPD
import Posix
import ServerAccounts
import ServerStorage

/// The web interface's pages, server-rendered, with no script: routing,
/// the layout, signing in and out. Lists, expenses and users are in
/// their own files.
struct WebPages {
    static let sessionCookie = "es_session"
    /// Holds the sign-in form's CSRF token until a session exists (a
    /// double-submit cookie: a page of another site can neither read it
    /// nor, `SameSite=Strict`, send it).
    static let signInCookie = "es_signin"

    let service: WebService
    let request: WebRequest
    /// The expense this request was about, for the access log.
    var transactionID: String?

    init(service: WebService, request: WebRequest) {
        self.service = service
        self.request = request
    }

    var storage: any ExpenseStorage { service.storage }

    mutating func respond() throws -> HTTPResponse {
        let s = request.segments.map(String.init)
        let method = request.method
        switch (method, s) {
        case ("GET", ["assets", "style.css"]):
            return HTTPResponse(status: 200, headers: [HTTPHeader("Content-Type", "text/css; charset=utf-8")], body: .bytes(Array(Stylesheet.css.utf8)))
        case ("GET", ["favicon.ico"]): throw WebError.notFound
        case ("GET", ["sign-in"]): return signInPage(status: 200, message: nil)
        case ("POST", ["sign-in"]): return try signIn()
        case ("POST", ["sign-out"]): return try signOut()
        default: break
        }
        guard let session = request.session else {
            // Signed out, expired, or the user's token changed: to the sign-in page.
            if method == "GET" { return Self.redirect("/sign-in") }
            throw WebError.forbidden
        }
        if method == "POST" {
            guard Sessions.secretsMatch(try request.field("csrf"), session.csrf) else { throw WebError.forbidden }
        }
        let admin = session.account.isAdmin
        switch (method, s.count, s.first ?? "", s.count > 1 ? s[1] : "", s.count > 2 ? s[2] : "") {
        case ("GET", 1, "", _, _): return Self.redirect("/expenses")
        case ("GET", 1, "expenses", _, _): return try listPage(session)
        case ("GET", 2, "expenses", "export", _): return try export(session)
        case ("GET", 2, "expenses", let id, _): return try expensePage(session, id: id)
        case ("GET", 3, "expenses", let id, "receipt"): return try receipt(session, id: id)
        case ("POST", 3, "expenses", let id, "edit"): return try edit(session, id: id)
        case ("GET", 1, "users", _, _) where admin: return try usersPage(session)
        case ("POST", 2, "users", "add", _) where admin: return try addUser(session)
        case ("POST", 3, "users", let name, let action) where admin: return try changeUser(session, name: name, action: action)
        case ("GET", _, _, _, _), ("POST", _, _, _, _): throw WebError.notFound
        default: throw WebError(405, "This page does not take \(LogText.printable(request.head.method, limit: 16)).")
        }
    }

    // MARK: Sign in and out

    /// The sign-in form. Its token is the cookie's when the browser has
    /// one already, so that two loads (a second tab, a reload) do not
    /// invalidate each other's form.
    private func signInPage(status: Int, message: String?) -> HTTPResponse {
        let csrf = request.cookie(Self.signInCookie).flatMap { Sessions.isSessionID($0) ? $0 : nil } ?? Accounts.base64URL(SecureRandom.bytes(32))
        var response = page("Sign in", status: status, session: nil) { html in
            html.raw("<h1>Sign in</h1>")
            if let message { html.raw("<p class=\"error\">"); html.text(message); html.raw("</p>") }
            html.raw("<form method=\"post\" action=\"/sign-in\">")
            html.hidden("csrf", csrf)
            html.raw("<label>Token <input type=\"password\" name=\"token\" autocomplete=\"off\" required size=\"50\"></label> ")
            html.raw("<button type=\"submit\">Sign in</button></form>")
            html.raw("<p>Your token is what <code>expense-server user add</code> or <code>user rotate</code> printed.</p>")
        }
        response.headers.append(cookie(Self.signInCookie, csrf, maxAge: 3600))
        return response
    }

    private func signIn() throws -> HTTPResponse {
        guard let expected = request.cookie(Self.signInCookie), Sessions.secretsMatch(try request.field("csrf"), expected) else {
            throw WebError.forbidden
        }
        let token = try request.field("token").trimmingCharacters(" \t\r\n")
        guard !token.isEmpty, token.utf8.count <= 512, let (id, _) = try service.sessions.signIn(token: token) else {
            return signInPage(status: 401, message: "That token is not valid: it may have been rotated or revoked.")
        }
        var response = Self.redirect("/expenses")
        response.headers.append(cookie(Self.sessionCookie, id, maxAge: service.settings.sessionLifetimeSeconds))
        response.headers.append(cookie(Self.signInCookie, "", maxAge: 0))
        return response
    }

    private func signOut() throws -> HTTPResponse {
        if let session = request.session, let id = request.sessionID {
            guard Sessions.secretsMatch(try request.field("csrf"), session.csrf) else { throw WebError.forbidden }
            try service.sessions.signOut(id: id)
        }
        var response = Self.redirect("/sign-in")
        response.headers.append(cookie(Self.sessionCookie, "", maxAge: 0))
        // What the browser kept of our pages goes too.
        response.headers.append(HTTPHeader("Clear-Site-Data", "\"cache\""))
        return response
    }

    /// `HttpOnly`, `SameSite=Strict`, for the whole site; `Secure` over TLS.
    private func cookie(_ name: String, _ value: String, maxAge: Int64) -> HTTPHeader {
        HTTPHeader("Set-Cookie", "\(name)=\(value); Path=/; Max-Age=\(maxAge); HttpOnly; SameSite=Strict\(service.settings.isTLS ? "; Secure" : "")")
    }

    // MARK: Layout

    static func redirect(_ location: String) -> HTTPResponse {
        HTTPResponse(status: 303, headers: [HTTPHeader("Location", location), HTTPHeader("Content-Type", "text/plain; charset=utf-8")],
                     body: .bytes(Array("See \(location)\n".utf8)))
    }

    /// A whole page: the header (with the user's name, the users page for
    /// an admin, and the sign-out form) around `content`.
    func page(_ title: String, status: Int = 200, session: ActiveSession?, _ content: (inout HTML) -> Void) -> HTTPResponse {
        var html = HTML()
        html.raw("<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>")
        html.text(title)
        html.raw(" · expense-server</title><link rel=\"stylesheet\" href=\"/assets/style.css\"></head><body><header>")
        if let session {
            html.raw("<a href=\"/expenses\">Expenses</a>")
            if session.account.isAdmin { html.raw("<a href=\"/users\">Users</a>") }
            html.raw("<span id=\"signed-in\">Signed in as ")
            html.text(session.account.name)
            html.raw(session.account.isAdmin ? " (admin)" : "")
            html.raw("</span><form method=\"post\" action=\"/sign-out\">")
            html.hidden("csrf", session.csrf)
            html.raw("<button type=\"submit\" id=\"sign-out\">Sign out</button></form>")
        } else {
            html.raw("<span>expense-server</span>")
        }
        html.raw("</header><main>")
        content(&html)
        html.raw("</main></body></html>\n")
        return HTTPResponse(status: status, headers: [HTTPHeader("Content-Type", "text/html; charset=utf-8")], body: .bytes(Array(html.text.utf8)))
    }

    func errorPage(_ error: WebError) -> HTTPResponse {
        page(error.status == 404 ? "Not found" : "Error", status: error.status, session: request.session) { html in
            html.raw("<h1>\(error.status == 404 ? "Not found" : "Not done")</h1><p class=\"error\" id=\"error\">")
            html.text(error.message)
            html.raw("</p>")
        }
    }
}

extension String {
    func trimmingCharacters(_ set: String) -> String {
        var s = Substring(self)
        while let c = s.first, set.contains(c) { s.removeFirst() }
        while let c = s.last, set.contains(c) { s.removeLast() }
        return String(s)
    }
}
