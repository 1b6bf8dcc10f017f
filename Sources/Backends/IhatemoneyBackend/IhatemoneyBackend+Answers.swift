import Curl
import ExpenseCore
import SyncEngine

// ihatemoney's answers as the engine's outcomes (docs/backends.md,
// "ihatemoney: how an answer is classified"). Its errors are a form's
// field errors as JSON (`{"amount": ["This field is required."]}`), a
// plain string, or werkzeug's HTML page.
extension IhatemoneyBackend {
    /// The outcome of a write (POST, PUT, DELETE). `applied` reads a 2xx
    /// body; when it cannot, the answer is not ihatemoney's (a proxy's
    /// page, a truncated body) and the write's fate is unknown: transient,
    /// so that the next send looks the marker up first.
    static func outcome(ofWrite result: Result<HTTPResponse, TransportError>,
                        applied: ([UInt8]) -> (CanonicalExpense, String)?) -> SyncOutcome {
        let response: HTTPResponse
        switch result {
        case .failure(let error): return .unanswered(reason: error.message, requestSent: error.requestSent)
        case .success(let r): response = r
        }
        let status = response.status
        if (200..<300).contains(status) {
            guard let (expense, code) = applied(response.body) else {
                return .failed(SyncFailure(.transient, summary: "\(status) \(describeUnreadable(response)); its outcome is unknown, so the marker is looked up before sending again"))
            }
            return .applied(expense, replayed: false, code: code)
        }
        return failure(response)
    }

    /// A non-2xx answer: `401 403` refused, `400` rejected with the fields
    /// ihatemoney named, `404` gone, 408/425/429/5xx transient, anything
    /// else rejected.
    static func failure(_ response: HTTPResponse) -> SyncOutcome {
        let status = response.status
        let summary = "\(status) \(reason(response))"
        switch status {
        case 401, 403:
            return .refused(code: "\(status)", summary: "\(status) ihatemoney refused the project id and private code")
        case 408, 425, 429, 500...599:
            return .failed(SyncFailure(.transient, summary: summary,
                                       retryAfterMilliseconds: response.header("retry-after").flatMap(Backoff.parseRetryAfter)))
        case 404:
            return .failed(SyncFailure(.gone, summary: summary))
        default:
            return .failed(SyncFailure(.rejected, summary: summary))
        }
    }

    /// What ihatemoney said, without personal data: the names of the
    /// fields it refused and their messages (its own, not our values), or
    /// what kind of body it was.
    static func reason(_ response: HTTPResponse) -> String {
        guard isJSON(response), let value = try? JSONValue.parse(response.body) else {
            return describeUnreadable(response)
        }
        if case .object(let members) = value {
            let fields = members.keys.sorted().map { key in
                let messages = members[key]?.arrayValue?.compactMap(\.stringValue) ?? [members[key]?.stringValue ?? ""]
                return "\(key): \(messages.joined(separator: " ").prefix(120))"
            }
            return "ihatemoney refused " + fields.joined(separator: "; ")
        }
        if let text = value.stringValue { return "ihatemoney: \(text.prefix(120))" }
        return "ihatemoney answered \(value.typeName)"
    }

    static func isJSON(_ response: HTTPResponse) -> Bool {
        response.header("content-type")?.lowercased().hasPrefix("application/json") ?? false
    }

    /// "an HTML page (text/html), not ihatemoney's JSON" or "invalid JSON".
    static func describeUnreadable(_ response: HTTPResponse) -> String {
        let type = response.header("content-type").map { String($0.prefix { $0 != ";" }) } ?? "no content type"
        if !isJSON(response) { return "answered \(type.contains("html") ? "an HTML page" : "a body") (\(type)), not ihatemoney's JSON" }
        if (try? JSONValue.parse(response.body)) == nil { return "answered invalid JSON" }
        return "answered JSON that is not what ihatemoney 7.2.1 sends"
    }

    /// A listing (`GET …/bills`, `…/members`): `read` parses it; an answer
    /// it cannot read is transient (a proxy's page, a truncated body).
    static func listing<T>(_ result: Result<HTTPResponse, TransportError>, what: String,
                           read: (JSONValue) -> T?) -> Result<T, SyncOutcomeError> {
        let response: HTTPResponse
        switch result {
        case .failure(let error): return .failure(SyncOutcomeError(.unanswered(reason: error.message, requestSent: error.requestSent)))
        case .success(let r): response = r
        }
        guard (200..<300).contains(response.status) else { return .failure(SyncOutcomeError(failure(response))) }
        guard isJSON(response), let value = try? JSONValue.parse(response.body), let read = read(value) else {
            return .failure(SyncOutcomeError(.failed(SyncFailure(.transient, summary: "\(response.status) the \(what) \(describeUnreadable(response))")), isUnreadable: true))
        }
        return .success(read)
    }

    /// A refresh: the bills that carry our marker (paid by member `paidBy`
    /// when given), all on one page (the API has no cursor); others' bills
    /// are not ours to show.
    static func changes(from result: Result<HTTPResponse, TransportError>, paidBy: Int64? = nil,
                        receiptURL: (String) -> String?) -> ChangesReply {
        let listed = listing(result, what: "bill list") { value -> [IhatemoneyBill]? in
            guard let items = value.arrayValue else { return nil }
            let bills = items.compactMap(IhatemoneyBill.init(json:))
            return bills.count == items.count ? bills : nil
        }
        switch listed {
        case .success(let bills):
            let expenses = bills.filter { paidBy == nil || $0.payerID == paidBy }.compactMap { bill in
                bill.marker.map { bill.expense(marker: $0, receiptURL: receiptURL($0.transactionID)) }
            }
            return .page(ChangesPage(expenses: expenses, nextCursor: nil, hasMore: false))
        case .failure(let failure):
            return failure.changesReply
        }
    }
}
