import Curl
import ExpenseCore
import SyncEngine

// contract.md's table, "How a client classifies an outcome": expense-server's
// answers as the engine's outcomes.
extension ExpenseServerBackend {
    /// The outcome of one job's request.
    static func outcome(of result: Result<HTTPResponse, TransportError>) -> SyncOutcome {
        switch result {
        case .failure(let error):
            return .unanswered(reason: error.message, requestSent: error.requestSent)
        case .success(let response):
            return outcome(status: response.status, body: response.body, retryAfter: response.header("retry-after"),
                           replayed: response.header("idempotent-replayed") == "true")
        }
    }

    /// The outcome of an answer with `status`: `2xx` applied, with the
    /// canonical expense the body holds; `401 403` refused; the rest failed,
    /// by class.
    static func outcome(status: Int, body: [UInt8], retryAfter: String?, replayed: Bool) -> SyncOutcome {
        if (200..<300).contains(status) {
            return .applied((try? JSONValue.parse(body)).flatMap(CanonicalExpense.init(json:)), replayed: replayed, code: "\(status)")
        }
        let error = ServerError(body: body)
        let summary = error.summary(status: status)
        if status == 401 || status == 403 { return .refused(code: "\(status)", summary: summary) }
        return .failed(SyncFailure(kind(status: status, errorCode: error.code), summary: summary,
                                   retryAfterMilliseconds: retryAfter.flatMap(Backoff.parseRetryAfter)))
    }

    /// The class of a failed answer, by its status and, for 409, its error code.
    static func kind(status: Int, errorCode: String?) -> SyncFailure.Kind {
        switch status {
        case 408, 425, 429, 500, 502, 503, 504: .transient
        case 409 where errorCode == "request_in_progress": .inProgress
        // The expense is not there: for a receipt, its create has not been
        // applied yet (contract.md, `PUT …/receipt`).
        case 404: .notFound
        case 410: .gone
        // Over the server's limit (said in the message): retrying the same
        // bytes cannot help until the limit changes.
        case 413: .tooLarge
        default: .rejected
        }
    }

    /// The outcome of a listing.
    static func changes(from result: Result<HTTPResponse, TransportError>) -> ChangesReply {
        let response: HTTPResponse
        switch result {
        case .failure(let error): return .unanswered(reason: error.message)
        case .success(let r): response = r
        }
        let status = response.status
        if status == 401 || status == 403 { return .refused(code: "\(status)") }
        if (200..<300).contains(status) { return page(body: response.body).map(ChangesReply.page) ?? .malformed }
        let error = ServerError(body: response.body)
        return .failed(SyncFailure(kind(status: status, errorCode: error.code), summary: error.summary(status: status)))
    }

    /// Reads a page of `GET /v1/expenses`; nil when it is not contract.md's shape.
    static func page(body: [UInt8]) -> ChangesPage? {
        guard let value = try? JSONValue.parse(body), case .array(let items)? = value["expenses"] else { return nil }
        let expenses = items.compactMap(CanonicalExpense.init(json:))
        guard expenses.count == items.count else { return nil }
        return ChangesPage(expenses: expenses, nextCursor: value["next_cursor"]?.stringValue, hasMore: value["has_more"]?.boolValue ?? false)
    }

    /// Percent-encodes everything but RFC 3986's unreserved characters.
    static func percentEncoded(_ text: String) -> String {
        var out = ""
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
                 UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "~"):
                out.unicodeScalars.append(Unicode.Scalar(byte))
            default:
                out += "%" + String(byte, radix: 16, uppercase: true).leftPadded(2)
            }
        }
        return out
    }
}
