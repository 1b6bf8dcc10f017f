import ExpenseCore
import HTTPD
import ServerStorage

/// The list of expenses: filters, sort, paging, totals per currency, and
/// the export of what the filters select.
extension WebPages {
    static let pageSize = 50

    /// The list's filters as the query string gives them, checked.
    struct ListQuery {
        var filter = ExpenseFilter()
        var sort = ExpenseSort.dateDescending
        var page = 1
        /// The query parameters that select the expenses, for links.
        var parameters: [(String, String)] = []
        var userName = ""
    }

    func listQuery(_ session: ActiveSession) throws -> ListQuery {
        var q = ListQuery()
        let from = try request.query("from"), to = try request.query("to")
        for (name, date) in [("from", from), ("to", to)] where !date.isEmpty {
            do { try Validation.checkDate(date) } catch { throw WebError(400, "The \(name) date must be a date, YYYY-MM-DD.") }
        }
        q.filter.since = from.isEmpty ? nil : from
        q.filter.until = to.isEmpty ? nil : to
        let merchant = try request.query("merchant"), category = try request.query("category")
        guard merchant.utf8.count <= 200, category.utf8.count <= 200 else { throw WebError(400, "A filter is at most 200 bytes.") }
        q.filter.merchant = merchant.isEmpty ? nil : merchant
        q.filter.category = category.isEmpty ? nil : category
        let state = try request.query("state")
        if !state.isEmpty {
            guard let value = ExpenseState(rawValue: state) else { throw WebError(400, "Unknown state filter.") }
            q.filter.state = value
        }
        let sort = try request.query("sort")
        if !sort.isEmpty {
            guard let value = ExpenseSort(rawValue: sort) else { throw WebError(400, "Unknown sort order.") }
            q.sort = value
        }
        let page = try request.query("page")
        if !page.isEmpty {
            guard let number = Int(page), (1...1_000_000).contains(number) else { throw WebError(400, "The page must be a number from 1.") }
            q.page = number
        }
        q.userName = try request.query("user")
        if session.account.isAdmin {
            // An admin sees every user's expenses, or the one user chosen.
            if !q.userName.isEmpty {
                guard let user = try storage.users().first(where: { $0.name == q.userName }) else { throw WebError(400, "No such user.") }
                q.filter.user = user.id
            }
        } else {
            guard q.userName.isEmpty else { throw WebError(400, "Only an admin chooses whose expenses to see.") }
            q.filter.user = session.account.id
        }
        q.parameters = [("from", from), ("to", to), ("merchant", merchant), ("category", category), ("state", state),
                        ("sort", sort), ("user", q.userName)]
        return q
    }

    func listPage(_ session: ActiveSession) throws -> HTTPResponse {
        let q = try listQuery(session)
        let totals = try storage.totals(q.filter)
        let count = totals.reduce(0) { $0 + $1.count }
        let pages = max(1, (count + Self.pageSize - 1) / Self.pageSize)
        let rows = try storage.expensePage(q.filter, sort: q.sort, offset: (q.page - 1) * Self.pageSize, limit: Self.pageSize)
        let users = session.account.isAdmin ? try storage.users() : []
        return page("Expenses", session: session) { html in
            html.raw("<h1>Expenses</h1><form method=\"get\" action=\"/expenses\" class=\"filters\" id=\"filters\">")
            html.input("from", label: "From", value: q.filter.since ?? "", type: "date")
            html.input("to", label: "To", value: q.filter.until ?? "", type: "date")
            html.input("merchant", label: "Merchant", value: q.filter.merchant ?? "")
            html.input("category", label: "Category", value: q.filter.category ?? "")
            html.select("state", label: "State", [("", "not deleted"), ("receipt", "has receipt"), ("no-receipt", "missing receipt"),
                                                  ("conflict", "conflict"), ("deleted", "deleted")], selected: q.filter.state?.rawValue ?? "")
            html.select("sort", label: "Sort", [("date-desc", "newest date"), ("date", "oldest date"), ("merchant", "merchant"),
                                                ("updated-desc", "last changed")], selected: q.sort.rawValue)
            if session.account.isAdmin {
                html.select("user", label: "User", [("", "everyone")] + users.map { ($0.name, $0.name + ($0.state == .active ? "" : " (\($0.state.rawValue))")) },
                            selected: q.userName)
            }
            html.raw("<button type=\"submit\">Show</button></form>")
            let selection = HTML.query(q.parameters)
            html.raw("<p>Export these: <a id=\"export-csv\" href=\"/expenses/export?\(HTML.attribute(HTML.query(q.parameters + [("format", "csv")])))\">CSV</a> · ")
            html.raw("<a id=\"export-jsonl\" href=\"/expenses/export?\(HTML.attribute(HTML.query(q.parameters + [("format", "jsonl")])))\">JSON lines</a></p>")
            html.raw("<table id=\"totals\"><tr><th>Currency</th><th>Expenses</th><th>Total</th></tr>")
            for total in totals {
                html.raw("<tr><td>")
                html.text(total.currency.isEmpty ? "(none)" : total.currency)
                html.raw("</td><td>\(total.count)</td><td class=\"amount\">")
                html.text(Self.decimal(total.minorUnits, currency: total.currency))
                html.raw("</td></tr>")
            }
            html.raw("</table><p id=\"count\">\(count) expenses · page \(q.page) of \(pages)</p>")
            html.raw("<table id=\"expenses\"><tr><th>Date</th><th>Merchant</th><th>Amount</th><th>Category</th>")
            if session.account.isAdmin { html.raw("<th>User</th>") }
            html.raw("<th>State</th></tr>")
            for row in rows { Self.row(row, admin: session.account.isAdmin, into: &html) }
            html.raw("</table><nav class=\"pages\">")
            if q.page > 1 {
                html.raw("<a id=\"previous\" href=\"/expenses?\(HTML.attribute(HTML.query(q.parameters + [("page", String(q.page - 1))])))\">Previous</a> ")
            }
            if q.page < pages {
                html.raw("<a id=\"next\" href=\"/expenses?\(HTML.attribute(HTML.query(q.parameters + [("page", String(q.page + 1))])))\">Next</a>")
            }
            html.raw("</nav>")
            _ = selection
        }
    }

    private static func row(_ listed: ListedExpense, admin: Bool, into html: inout HTML) {
        let e = listed.stored.expense
        html.raw("<tr class=\"expense\"><td>")
        html.text(e.date ?? "")
        html.raw("</td><td><a class=\"open\" href=\"/expenses/\(HTML.percentEncoded(e.transactionID))\">")
        html.text(e.merchant ?? "(no merchant)")
        html.raw("</a></td><td class=\"amount\">")
        html.text([e.amount, e.currency].compactMap { $0 }.joined(separator: " "))
        html.raw("</td><td>")
        html.text(e.category ?? "")
        html.raw("</td>")
        if admin { html.raw("<td>"); html.text(listed.userName); html.raw("</td>") }
        html.raw("<td>")
        if e.deleted { html.raw("<span class=\"badge\">deleted</span> ") }
        html.raw(listed.stored.receipt == nil ? "<span class=\"badge\">no receipt</span> " : "<span class=\"badge\">receipt</span> ")
        if e.conflict { html.raw("<span class=\"badge conflict\">conflict</span>") }
        html.raw("</td></tr>")
    }

    /// `minorUnits` written with its currency's fraction digits: 1250 EUR is `12.50`.
    static func decimal(_ minorUnits: Int64, currency: String) -> String {
        let digits = Currency.minorUnits(currency) ?? 0
        guard digits > 0 else { return String(minorUnits) }
        let sign = minorUnits < 0 ? "-" : ""
        let magnitude = String(minorUnits.magnitude)
        let padded = String(repeating: "0", count: max(0, digits + 1 - magnitude.count)) + magnitude
        return sign + padded.dropLast(digits) + "." + padded.suffix(digits)
    }

    /// The filtered expenses, every one of them, as a download: written
    /// row by row into an unnamed file of the staging folder as the
    /// database hands them over, then sent from it (memory stays constant).
    func export(_ session: ActiveSession) throws -> HTTPResponse {
        let q = try listQuery(session)
        let text = try request.query("format")
        guard let format = ExportFormat(rawValue: text.isEmpty ? "csv" : text) else { throw WebError(400, "The format must be csv or jsonl.") }
        // The links point at this server as the browser named it. The Host
        // header is the client's text: a host and a port, or it is refused
        // (a path, a query or a quote in it would be in every link).
        let host = request.head.value(of: "Host") ?? "localhost"
        guard !host.contains("/"), let origin = ExportFormat.receiptBase((service.settings.isTLS ? "https://" : "http://") + host) else {
            throw WebError(400, "The Host header must be a host name and an optional port.")
        }
        let file = try storage.staging.makeAnonymousFile()
        var buffer = format.header
        var size = Int64(0)
        try storage.forEachExpense(q.filter) { listed in
            buffer += format.line(listed, receiptBase: origin)
            if buffer.count >= 64 << 10 {
                try file.writeAll(buffer)
                size += Int64(buffer.count)
                buffer.removeAll(keepingCapacity: true)
            }
        }
        try file.writeAll(buffer)
        size += Int64(buffer.count)
        return HTTPResponse(status: 200, headers: [
            HTTPHeader("Content-Type", format.contentType),
            HTTPHeader("Content-Disposition", "attachment; filename=\"expenses.\(format.rawValue)\""),
        ], body: .file(file, size: size))
    }
}
