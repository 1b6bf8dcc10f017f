import Curl
import ExpenseCore
import SyncEngine

// fava's answers as the engine's outcomes (docs/backends.md, "How a fava
// answer is classified"): `{"data": …}` on success, `{"error": "…"}` with
// the error's status otherwise; werkzeug's HTML page for a route it lacks.
extension FavaBackend {
    /// A write's outcome. A 2xx whose body is not fava's `{"data": …}` is
    /// transient: the write's fate is unknown, so the next send looks first.
    static func outcome(ofWrite result: Result<HTTPResponse, TransportError>, applied: () -> (CanonicalExpense, String)) -> SyncOutcome {
        switch data(result, what: "answer") {
        case .failure(let box): return box.outcome
        case .success:
            let (expense, code) = applied()
            return .applied(expense, replayed: false, code: code)
        }
    }

    /// The `data` member of a fava answer, or the outcome the answer is.
    static func data(_ result: Result<HTTPResponse, TransportError>, what: String) -> Result<JSONValue, SyncOutcomeError> {
        let response: HTTPResponse
        switch result {
        case .failure(let error): return .failure(SyncOutcomeError(.unanswered(reason: error.message, requestSent: error.requestSent)))
        case .success(let r): response = r
        }
        let status = response.status
        let isJSON = response.header("content-type")?.lowercased().hasPrefix("application/json") ?? false
        let value = isJSON ? try? JSONValue.parse(response.body) : nil
        if (200..<300).contains(status) {
            guard let data = value?["data"] else {
                let kind = !isJSON ? "a page that is not fava's JSON (\(response.header("content-type") ?? "no content type"))"
                    : value == nil ? "invalid JSON" : "JSON without fava's 'data'"
                return .failure(SyncOutcomeError(.failed(SyncFailure(.transient, summary: "\(status) fava's \(what) was \(kind); its outcome is unknown, so the link is looked up before sending again")),
                                               isUnreadable: true))
            }
            return .success(data)
        }
        let message = value?["error"]?.stringValue.map { "fava: \($0.prefix(160))" } ?? (isJSON ? "fava answered an error without a message" : "fava answered a page, not its JSON")
        let summary = "\(status) \(message)"
        switch status {
        case 401, 403: return .failure(SyncOutcomeError(.refused(code: "\(status)", summary: summary)))
        case 408, 425, 429, 500...599:
            return .failure(SyncOutcomeError(.failed(SyncFailure(.transient, summary: summary,
                                                               retryAfterMilliseconds: response.header("retry-after").flatMap(Backoff.parseRetryAfter)))))
        default: return .failure(SyncOutcomeError(.failed(SyncFailure(.rejected, summary: summary))))
        }
    }
}
