import ExpenseTestSupport
import Foundation

/// A browser as far as the server can tell, over raw HTTP: it keeps the
/// cookies it is given, reads the CSRF token of the page it was shown,
/// and sends forms.
final class WebClient {
    let server: TestServer
    private(set) var cookies: [String: String] = [:]
    /// The last page shown.
    private(set) var last: HTTPMessage?

    init(_ server: TestServer) {
        self.server = server
    }

    /// Signs in with `token` through the sign-in form.
    @discardableResult
    func signIn(_ token: String) throws -> HTTPMessage {
        let form = try get("/sign-in")
        return try post("/sign-in", ["csrf": try Self.csrf(in: form), "token": token])
    }

    func get(_ path: String) throws -> HTTPMessage {
        try send("GET", path, headers: [])
    }

    /// Posts `fields` as a form (in the order of their names).
    func post(_ path: String, _ fields: [String: String], contentType: String = "application/x-www-form-urlencoded") throws -> HTTPMessage {
        let body = fields.sorted { $0.key < $1.key }.map { "\(Self.encode($0.key))=\(Self.encode($0.value))" }.joined(separator: "&")
        return try send("POST", path, headers: [("Content-Type", contentType)], body: Array(body.utf8))
    }

    func send(_ method: String, _ path: String, headers: [(String, String)], body: [UInt8]? = nil) throws -> HTTPMessage {
        var all = headers
        if !cookies.isEmpty { all.append(("Cookie", cookies.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: "; "))) }
        let response = try server.connect().request(method, path, headers: all, body: body)
        for (name, value) in response.headers where name.lowercased() == "set-cookie" {
            let pair = value.split(separator: ";")[0].split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            let cookie = String(pair[0]), content = pair.count > 1 ? String(pair[1]) : ""
            if value.contains("Max-Age=0") || content.isEmpty { cookies[cookie] = nil } else { cookies[cookie] = content }
        }
        last = response
        return response
    }

    /// The value of the first `name="csrf"` hidden field of `page`.
    static func csrf(in page: HTTPMessage) throws -> String {
        try hidden("csrf", in: page.text)
    }

    /// The value of the first hidden field `name` after `after` in `html`.
    static func hidden(_ name: String, in html: String, after: String = "") throws -> String {
        var text = Substring(html)
        if !after.isEmpty {
            guard let start = text.range(of: after) else { throw TestFailure("no \(after) in the page") }
            text = text[start.upperBound...]
        }
        let marker = "name=\"\(name)\" value=\""
        guard let start = text.range(of: marker) else { throw TestFailure("no hidden \(name) in the page") }
        let rest = text[start.upperBound...]
        guard let end = rest.firstIndex(of: "\"") else { throw TestFailure("unterminated \(name)") }
        return String(rest[..<end]).replacingOccurrences(of: "&quot;", with: "\"").replacingOccurrences(of: "&amp;", with: "&")
    }

    /// The fields of the edit form of `field` on an expense page.
    static func editForm(_ field: String, in page: HTTPMessage) throws -> [String: String] {
        let anchor = "id=\"edit-\(field)\""
        return ["csrf": try hidden("csrf", in: page.text, after: anchor), "field": field,
                "base_version": try hidden("base_version", in: page.text, after: anchor), "key": try hidden("key", in: page.text, after: anchor)]
    }

    static func encode(_ text: String) -> String {
        text.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? ""
    }
}
