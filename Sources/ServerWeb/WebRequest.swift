import HTTPD
import ServerAPI
import ServerStorage

/// A request to the web interface, parsed: path, query, form, cookies.
struct WebRequest {
    let head: HTTPRequestHead
    let target: RequestTarget
    /// `HEAD` is answered as `GET`, without the body.
    var method: String { head.method == "HEAD" ? "GET" : head.method }
    /// The path's segments after the first `/`.
    let segments: [Substring]
    /// The form's fields (`application/x-www-form-urlencoded`), for a POST.
    var form: [(name: String, value: String)] = []
    /// The signed-in session, if the cookie names one that holds.
    var session: ActiveSession?
    var sessionID: String?

    init(head: HTTPRequestHead) {
        self.head = head
        target = RequestTarget(head.target)
        segments = target.path.split(separator: "/", omittingEmptySubsequences: false).dropFirst().map { $0 }
    }

    /// The single value of query parameter `name`, `""` when absent.
    /// - Throws: ``WebError`` 400 for a query that is not valid or a parameter given twice.
    func query(_ name: String) throws(WebError) -> String {
        guard let query = target.query else { throw WebError(400, "The address's query is not valid percent-encoded UTF-8.") }
        return try Self.single(query, name, what: "parameter")
    }

    /// The single value of form field `name`, `""` when absent.
    func field(_ name: String) throws(WebError) -> String {
        try Self.single(form, name, what: "form field")
    }

    private static func single(_ pairs: [(name: String, value: String)], _ name: String, what: String) throws(WebError) -> String {
        let values = pairs.filter { $0.name == name }
        guard values.count <= 1 else { throw WebError(400, "The \(what) \(name) was given more than once.") }
        return values.first?.value ?? ""
    }

    /// The value of cookie `name` (RFC 6265 §5.4), if sent once.
    func cookie(_ name: String) -> String? {
        var found: [String] = []
        for header in head.values(of: "Cookie") {
            for pair in header.split(separator: ";") {
                let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
                guard parts.count == 2 else { continue }
                if parts[0].drop(while: { $0 == " " }) == name { found.append(String(parts[1])) }
            }
        }
        return found.count == 1 ? found[0] : nil
    }
}

/// An answer other than the page asked for: its status and what to tell the person.
struct WebError: Error {
    let status: Int
    let message: String

    init(_ status: Int, _ message: String) {
        self.status = status
        self.message = message
    }

    static let notFound = WebError(404, "Not found.")
    static let forbidden = WebError(403, "This form has expired or was not sent by this site. Go back, reload the page and try again.")
}
