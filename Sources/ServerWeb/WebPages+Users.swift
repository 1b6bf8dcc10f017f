import HTTPD
import ServerAccounts
import ServerAPI
import ServerStorage

/// The admin's users page: every user, and the forms that add one,
/// rotate a token, revoke it, or deactivate a user; the same as the
/// `expense-server user` commands.
extension WebPages {
    func usersPage(_ session: ActiveSession, status: Int = 200, notice: String? = nil, token: (name: String, token: String)? = nil) throws -> HTTPResponse {
        let users = try storage.users()
        return page("Users", status: status, session: session) { html in
            html.raw("<h1>Users</h1>")
            if let notice { html.raw("<p class=\"notice\" id=\"notice\">"); html.text(notice); html.raw("</p>") }
            if let token {
                html.raw("<div class=\"notice\"><p>The token of ")
                html.text(token.name)
                html.raw(", shown this once (only its hash is kept):</p><p class=\"token\" id=\"token\">")
                html.text(token.token)
                html.raw("</p></div>")
            }
            html.raw("<table id=\"users\"><tr><th>Name</th><th>Role</th><th>State</th><th>Since</th><th></th></tr>")
            for user in users {
                html.raw("<tr class=\"user\"><td>"); html.text(user.name)
                html.raw("</td><td>\(user.isAdmin ? "admin" : "user")</td><td>\(user.state.rawValue)</td><td>")
                html.text(user.createdAt)
                html.raw("</td><td>")
                if user.state != .deactivated {
                    for (action, label) in [("rotate", "Rotate token"), ("revoke", "Revoke"), ("deactivate", "Deactivate")] {
                        html.raw("<form method=\"post\" class=\"inline\" action=\"/users/\(HTML.percentEncoded(user.name))/\(action)\">")
                        html.hidden("csrf", session.csrf)
                        html.raw("<button type=\"submit\" name=\"do\" value=\"\(action)\">\(label)</button></form> ")
                    }
                }
                html.raw("</td></tr>")
            }
            html.raw("</table><h2>Add a user</h2><form method=\"post\" action=\"/users/add\" id=\"add-user\">")
            html.hidden("csrf", session.csrf)
            html.raw("<label>Name <input type=\"text\" name=\"name\" required maxlength=\"64\"></label> ")
            html.raw("<label><input type=\"checkbox\" name=\"admin\" value=\"1\"> admin</label> <button type=\"submit\">Add</button></form>")
        }
    }

    func addUser(_ session: ActiveSession) throws -> HTTPResponse {
        let name = try request.field("name")
        let admin = try request.field("admin")
        guard admin.isEmpty || admin == "1" else { throw WebError(400, "The admin box is on (1) or off.") }
        do {
            let token = try service.accounts.add(named: name, isAdmin: admin == "1")
            return try usersPage(session, notice: "Added \(name).", token: (name, token))
        } catch let error as UserError {
            return try usersPage(session, status: 400, notice: error.description)
        }
    }

    func changeUser(_ session: ActiveSession, name: String, action: String) throws -> HTTPResponse {
        // A name no user can have (a NUL, which PostgreSQL's text refuses, a
        // line break, `..`) is no user's: not found, without asking the database.
        guard let name = RequestTarget.decode(Substring(name)), Accounts.isValidName(name) else { throw WebError.notFound }
        do {
            switch action {
            case "rotate":
                let token = try service.accounts.rotate(named: name)
                return try usersPage(session, notice: "Rotated the token of \(name): the old one no longer works.", token: (name, token))
            case "revoke":
                try service.accounts.revoke(named: name)
                return try usersPage(session, notice: "Revoked the token of \(name).")
            case "deactivate":
                try service.accounts.deactivate(named: name)
                return try usersPage(session, notice: "Deactivated \(name); the expenses are kept.")
            default:
                throw WebError.notFound
            }
        } catch let error as UserError {
            return try usersPage(session, status: error == .notFound(name) ? 404 : 409, notice: error.description)
        }
    }
}
