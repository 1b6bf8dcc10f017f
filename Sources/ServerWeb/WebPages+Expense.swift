import Digest
import ExpenseCore
import HTTPD
import ServerAccounts
import ServerStorage

/// An expense's page: its fields, its receipt, its history and conflicts,
/// and the edit of one field at a time through the API's versioned edit.
extension WebPages {
    /// The expense `id` as `session` may see it: its own, or any for an
    /// admin. Another user's id is "not found", like one that does not exist.
    func visibleExpense(_ session: ActiveSession, id: String) throws -> ListedExpense {
        guard Self.isTransactionID(id) else { throw WebError.notFound }
        guard let listed = try storage.anyExpense(id), session.account.isAdmin || listed.stored.userID == session.account.id else {
            throw WebError.notFound
        }
        return listed
    }

    /// The characters a transaction id can have; anything else is no expense.
    static func isTransactionID(_ id: String) -> Bool {
        (1...64).contains(id.utf8.count) && id.utf8.allSatisfy { b in
            (b >= 0x30 && b <= 0x39) || (b >= 0x41 && b <= 0x5A) || (b >= 0x61 && b <= 0x7A) || b == UInt8(ascii: "-") || b == UInt8(ascii: "_")
        }
    }

    mutating func expensePage(_ session: ActiveSession, id: String) throws -> HTTPResponse {
        let listed = try visibleExpense(session, id: id)
        transactionID = listed.stored.expense.transactionID
        let versions = try storage.versions(ofRow: listed.stored.rowID)
        return expensePage(session, listed, versions: versions, status: 200, notice: try request.query("saved").isEmpty ? nil : "Saved.")
    }

    func expensePage(_ session: ActiveSession, _ listed: ListedExpense, versions: [ExpenseVersion], status: Int,
                     notice: String?, stale: (field: String, yours: String)? = nil) -> HTTPResponse {
        let e = listed.stored.expense
        let path = "/expenses/\(HTML.percentEncoded(e.transactionID))"
        return page(e.merchant ?? "Expense", status: status, session: session) { html in
            html.raw("<h1>")
            html.text(e.merchant ?? "(no merchant)")
            html.raw("</h1><p>Version <span id=\"version\">\(e.version)</span> · ")
            html.text(e.transactionID)
            html.raw(" · ")
            html.text(listed.userName)
            if e.deleted { html.raw(" · <span class=\"badge\" id=\"deleted\">deleted</span>") }
            html.raw("</p>")
            if let notice { html.raw("<p class=\"notice\" id=\"notice\">"); html.text(notice); html.raw("</p>") }
            if let stale {
                html.raw("<div class=\"error\" id=\"stale\"><p>This expense changed since you opened it: it is now at version \(e.version). ")
                html.raw("Nothing was saved. The current ")
                html.text(stale.field)
                html.raw(" is <q id=\"current-value\">")
                html.text(e.fields[stale.field] ?? "")
                html.raw("</q>; yours was <q id=\"your-value\">")
                html.text(stale.yours)
                html.raw("</q>.</p>")
                editForm(&html, session: session, path: path, field: stale.field, value: stale.yours, version: e.version, label: "Save mine over it")
                html.raw("</div>")
            }
            if !e.conflicts.isEmpty {
                html.raw("<div class=\"error\" id=\"conflicts\"><p>Conflicting edits (the server kept its value):</p><table><tr><th>Field</th><th>Kept</th><th>Sent by a device</th></tr>")
                for (field, values) in e.conflicts.sorted(by: { $0.key < $1.key }) {
                    html.raw("<tr><td>"); html.text(field); html.raw("</td><td>"); html.text(values.server ?? "(empty)")
                    html.raw("</td><td>"); html.text(values.client ?? "(empty)"); html.raw("</td></tr>")
                }
                html.raw("</table></div>")
            }
            html.raw("<table id=\"fields\">")
            for field in ExpenseFields.names {
                html.raw("<tr><th>"); html.text(field); html.raw("</th><td class=\"value\" id=\"field-\(field)\">")
                html.text(e.fields[field] ?? "")
                html.raw("</td><td>")
                if !e.deleted { editForm(&html, session: session, path: path, field: field, value: e.fields[field] ?? "", version: e.version, label: "Save") }
                html.raw("</td></tr>")
            }
            html.raw("</table><h2>Receipt</h2>")
            if let receipt = listed.stored.receipt, !e.deleted {
                if receipt.contentType.hasPrefix("image/") {
                    html.raw("<img class=\"receipt\" id=\"receipt\" alt=\"Receipt\" src=\"\(path)/receipt\">")
                } else {
                    html.raw("<p><a id=\"receipt-link\" href=\"\(path)/receipt\">Receipt (PDF, \(receipt.size) bytes)</a></p>")
                }
            } else {
                html.raw("<p id=\"no-receipt\">No receipt.</p>")
            }
            html.raw("<h2>History</h2><table id=\"history\"><tr><th>Version</th><th>At</th><th>Changed</th></tr>")
            for (index, version) in versions.enumerated() {
                let previous = index + 1 < versions.count ? versions[index + 1] : nil
                html.raw("<tr class=\"version\"><td>\(version.version)</td><td>"); html.text(version.at); html.raw("</td><td>")
                html.text(Self.changes(version, since: previous))
                html.raw("</td></tr>")
            }
            html.raw("</table>")
        }
    }

    /// What `version` changed from `previous`, as `field: old → new`.
    static func changes(_ version: ExpenseVersion, since previous: ExpenseVersion?) -> String {
        guard let previous else { return "created" }
        var parts: [String] = []
        for field in ExpenseFields.names where version.fields[field] != previous.fields[field] {
            parts.append("\(field): \(previous.fields[field] ?? "(empty)") → \(version.fields[field] ?? "(empty)")")
        }
        if version.receiptSHA256 != previous.receiptSHA256 { parts.append("receipt") }
        if version.deleted != previous.deleted { parts.append("deleted") }
        if version.conflicts != previous.conflicts { parts.append("conflicts: " + (version.conflicts.keys.sorted().joined(separator: ", ").nonEmpty ?? "resolved")) }
        return parts.isEmpty ? "(nothing visible)" : parts.joined(separator: "; ")
    }

    /// One field's edit form: the value, the version it was seen at, and a
    /// fresh idempotency key (sending the form twice changes once).
    func editForm(_ html: inout HTML, session: ActiveSession, path: String, field: String, value: String, version: Int, label: String) {
        html.raw("<form method=\"post\" action=\"\(path)/edit\" class=\"edit\" id=\"edit-\(field)\">")
        html.hidden("csrf", session.csrf)
        html.hidden("field", field)
        html.hidden("base_version", String(version))
        html.hidden("key", "web-" + Accounts.base64URL(SecureRandom.bytes(16)))
        html.raw("<input type=\"text\" name=\"value\" value=\"\(HTML.attribute(value))\" aria-label=\"\(field)\"> ")
        html.raw("<button type=\"submit\">\(HTML.escaped(label))</button></form>")
    }

    /// `POST /expenses/{id}/edit`: one field, through ``ExpenseStorage/edit``
    /// with the version the page showed; a page older than the expense is
    /// refused (``PatchRequest/requiresCurrentVersion``) and shown the conflict.
    mutating func edit(_ session: ActiveSession, id: String) throws -> HTTPResponse {
        let listed = try visibleExpense(session, id: id)
        let e = listed.stored.expense
        transactionID = e.transactionID
        let field = try request.field("field"), value = try request.field("value"), key = try request.field("key")
        guard ExpenseFields.names.contains(field) else { throw WebError(400, "That field cannot be edited.") }
        guard let base = Int64(try request.field("base_version")), base >= 1 else { throw WebError(400, "The form has no valid version.") }
        guard key.hasPrefix("web-"), (8...64).contains(key.utf8.count), Self.isTransactionID(key) else { throw WebError(400, "The form has no valid key.") }
        guard value.utf8.count <= 4096 else { throw WebError(400, "The value is too long.") }
        let newValue: String? = value.trimmingCharacters(" \t\r\n").isEmpty ? nil : value
        var fields = ExpenseFields()
        fields[field] = newValue
        do { try Validation.check(fields, amountNeedsCurrency: false) } catch { throw WebError(400, "\(error.field): \(error.reason)") }

        var body = JSONWriter()
        body.beginObject()
        body.member("base_version", Int(base))
        body.key("set")
        body.beginObject()
        body.member(field, newValue)
        body.endObject()
        body.endObject()
        let operation = IdempotentOperation(user: listed.stored.userID, key: key, method: "PATCH",
                                            path: "/v1/expenses/\(e.transactionID)", bodyDigest: SHA256.hash(body.bytes))
        let request = PatchRequest(baseVersion: base, changes: [field: newValue], requiresCurrentVersion: true)
        guard try storage.claim(user: listed.stored.userID, key: key) else { throw WebError(409, "This form is being sent already.") }
        defer { storage.release(user: listed.stored.userID, key: key) }
        do {
            let outcome = try storage.edit(operation, transactionID: e.transactionID, request)
            return Self.redirect("/expenses/\(HTML.percentEncoded(e.transactionID))?saved=\(outcome.expense.version)")
        } catch let error as StorageError where error.code == .staleVersion {
            let current = try visibleExpense(session, id: id)
            return expensePage(session, current, versions: try storage.versions(ofRow: current.stored.rowID), status: 409, notice: nil,
                               stale: (field, value))
        } catch let error as StorageError where error.code == .invalidField {
            throw WebError(400, error.description)
        } catch let error as StorageError where error.code == .expenseDeleted {
            throw WebError(410, "The expense was deleted.")
        } catch let error as StorageError where error.code == .idempotencyKeyReused {
            throw WebError(422, "This form was sent before with another value. Reload the page and try again.")
        }
    }

    /// The receipt's bytes, with the type it was checked to be when stored
    /// (JPEG, PNG or PDF); never as HTML or SVG, never sniffed, and in a
    /// sandbox should a browser render it as a document.
    mutating func receipt(_ session: ActiveSession, id: String) throws -> HTTPResponse {
        let listed = try visibleExpense(session, id: id)
        transactionID = listed.stored.expense.transactionID
        let content: ReceiptContent
        do {
            content = try storage.receipt(of: listed.stored.expense.transactionID, user: listed.stored.userID)
        } catch let error as StorageError where error.code == .receiptNotFound || error.code == .expenseDeleted || error.code == .expenseNotFound {
            throw WebError.notFound
        }
        let served = ["image/jpeg", "image/png", "application/pdf"].contains(content.contentType)
        return HTTPResponse(status: 200, headers: [
            HTTPHeader("Content-Type", served ? content.contentType : "application/octet-stream"),
            HTTPHeader("Content-Disposition", served ? "inline" : "attachment; filename=\"receipt.bin\""),
            HTTPHeader("Content-Security-Policy", "default-src 'none'; sandbox"),
        ], body: .file(content.file, size: content.size))
    }
}

extension String {
    var nonEmpty: String? { isEmpty ? nil : self }
}
