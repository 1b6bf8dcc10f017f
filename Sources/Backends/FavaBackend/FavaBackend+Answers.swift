import Curl
import ExpenseCore
import SyncEngine

// fava's answers as the engine's outcomes (docs/backends.md, "How a fava
// answer is classified"): `{"data": …}` on success, `{"error": "…"}` with
// the error's status otherwise; werkzeug's HTML page for a route it lacks.
extension FavaBackend {
    /// A write's outcome. A 2xx whose body is not fava's `{"data": …}` is
    /// transient: the write's fate is unknown, so the next send looks first.
    static func outcome(ofWrite result: Result<HTTPResponse, SyncOutcomeError>, applied: () -> (CanonicalExpense, String)) -> SyncOutcome {
        switch data(result, what: "answer") {
        case .failure(let box): return box.outcome
        case .success:
            let (expense, code) = applied()
            return .applied(expense, replayed: false, code: code)
        }
    }

    /// The `data` member of a fava answer, or the outcome the answer is.
    static func data(_ result: Result<HTTPResponse, SyncOutcomeError>, what: String) -> Result<JSONValue, SyncOutcomeError> {
        let response: HTTPResponse
        switch result {
        case .failure(let box): return .failure(box)
        case .success(let r): response = r
        }
        let status = response.status
        let isJSON = isJSON(response)
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

// A ledger fava serves under another slug. fava 1.30 rereads its ledger
// (`changed()`, which its own page asks every 5 s) without the lock its
// writes hold: a reread while an `add_entries` is writing the file loads
// half a ledger, without its `title`, and fava serves that under the slug
// of no title (`beancount`), answering a 404 page at ours until it reads
// the file again. Nothing was written by a request answered so.
extension FavaBackend {
    /// Sends `request`; a 404 page is checked with ``ledgerElsewhere()``
    /// and, when fava serves its ledger under another slug, answered as
    /// what that is.
    func send(_ request: HTTPRequest) async -> Result<HTTPResponse, SyncOutcomeError> {
        let result = await client.send(request)
        if case .success(let response) = result, response.status == 404, !Self.isJSON(response), let elsewhere = await ledgerElsewhere() {
            return .failure(elsewhere)
        }
        return result.mapError { SyncOutcomeError(.unanswered(reason: $0.message, requestSent: $0.requestSent)) }
    }

    /// The `data` of the answer to `request` (``data(_:what:)``).
    func data(_ request: HTTPRequest, what: String) async -> Result<JSONValue, SyncOutcomeError> {
        Self.data(await send(request), what: what)
    }

    /// After a 404 page: which ledger `GET <root>/` redirects to (fava's
    /// first). Under our slug, nil: the 404 was about something else.
    /// Under another, fava is asked to read its file again (`GET
    /// <root>/<that slug>/api/changed`). Back under ours, or still under
    /// `beancount` (the slug of a ledger read without its title: fava's
    /// watcher may notice the finished write only later), the request is
    /// tried again (transient). Under any other slug the ledger's title
    /// changed, or `server` names the wrong one: rejected, naming the slug
    /// of fava's first ledger. (`/` names only the first: a fava serving
    /// several ledgers, ours not the first, is told to reread only when
    /// its first lost its title.)
    func ledgerElsewhere() async -> SyncOutcomeError? {
        guard let (root, ours) = Self.rootAndSlug(of: settings.baseURL),
              let served = await servedSlug(root: root), served != ours else { return nil }
        _ = await client.send(request(url: "\(root)/\(served)/api/changed"))
        let now = await servedSlug(root: root) ?? served
        if now == ours {
            return SyncOutcomeError(.failed(SyncFailure(.transient, summary: "404 fava served its ledger under /\(served), not /\(ours), having read the file without its title while it was being written; it has read it again")))
        }
        if now == Self.untitledSlug {
            return SyncOutcomeError(.failed(SyncFailure(.transient, summary: "404 fava serves its ledger under /\(now), not /\(ours): it read the file without its title, likely while it was being written, and was asked to read it again")))
        }
        return SyncOutcomeError(.failed(SyncFailure(.rejected, summary: "404 fava serves no ledger under /\(ours); its first is under /\(now): set server = \(root)/\(now) if that is the ledger")))
    }

    /// fava's slug for a ledger without a `title` option (beancount's default title).
    static let untitledSlug = "beancount"

    /// The first path segment of where `GET <root>/` redirects, below the root's own path.
    func servedSlug(root: String) async -> String? {
        guard case .success(let response) = await client.send(request(url: root + "/")), (300..<400).contains(response.status),
              let location = response.header("location") else { return nil }
        return Self.slug(inLocation: location, root: root)
    }

    /// `http://host:port/prefix/slug` → (`http://host:port/prefix`, `slug`).
    static func rootAndSlug(of baseURL: String) -> (String, String)? {
        guard let slash = baseURL.lastIndex(of: "/") else { return nil }
        let root = String(baseURL[..<slash])
        let slug = String(baseURL[baseURL.index(after: slash)...])
        return root.hasSuffix("/") || !root.contains("://") || slug.isEmpty ? nil : (root, slug)
    }

    /// The slug in a redirect's `Location` (absolute, or a path), below `root`'s path.
    static func slug(inLocation location: String, root: String) -> String? {
        func path(_ url: String) -> Substring {
            let parts = url.split(separator: "://", maxSplits: 1, omittingEmptySubsequences: false)
            guard parts.count == 2 else { return Substring(url) }
            return parts[1].firstIndex(of: "/").map { parts[1][$0...] } ?? ""
        }
        let rootPath = path(root)
        var target = path(location)
        guard target.hasPrefix(rootPath + "/") else { return nil }
        target = target.dropFirst(rootPath.count + 1)
        let slug = target.prefix { $0 != "/" && $0 != "?" }
        return slug.isEmpty ? nil : String(slug)
    }

    static func isJSON(_ response: HTTPResponse) -> Bool {
        response.header("content-type")?.lowercased().hasPrefix("application/json") ?? false
    }
}
