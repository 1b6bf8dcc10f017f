import Curl
import DaemonSupport
import ExpenseCore
import Posix
import Synchronization
import SyncEngine

/// A beancount ledger served by fava 1.30 (`<base>` = `…/<ledger slug>`,
/// its JSON API under `<base>/api/`) behind the sync engine's seam. fava
/// honours no idempotency key and corrupts its ledger under concurrent
/// writes, so (docs/backends.md): one request at a time; every
/// transaction carries the expense's transaction id as a link and as
/// metadata with the client id; a create whose earlier send had an unknown
/// outcome is sent again only after `GET <base>/api/changed` (fava reloads
/// the ledger lazily) and a query found no transaction with that link; a
/// receipt is a document named from the transaction id, so a second upload
/// is refused as already there, a replay.
public final class FavaBackend: SyncBackend {
    public struct Settings: Sendable, Equatable {
        /// `http://host:port/<slug>`, without a trailing slash.
        public var baseURL: String
        /// The expense account, `{category}` replaced (`Expenses:{category}`).
        public var expenseAccountTemplate: String
        /// Where the money came from (`Assets:Cash`).
        public var fundingAccount: String
        public var connectTimeoutMilliseconds: Int64
        public var requestTimeoutMilliseconds: Int64

        public init(baseURL: String, expenseAccountTemplate: String, fundingAccount: String, connectTimeoutMilliseconds: Int64,
                    requestTimeoutMilliseconds: Int64) {
            self.baseURL = baseURL
            self.expenseAccountTemplate = expenseAccountTemplate
            self.fundingAccount = fundingAccount
            self.connectTimeoutMilliseconds = connectTimeoutMilliseconds
            self.requestTimeoutMilliseconds = requestTimeoutMilliseconds
        }
    }

    let settings: Settings
    let client = HTTPClient(maxConnections: 1)
    /// Receipts are read here, off the HTTP thread and the cooperative pool.
    let files = BlockingExecutor(label: "fava-receipts", width: 1)
    /// The ledger's `documents` option, once read from `<base>/api/options`.
    let documentsFolder = Mutex<String?>(nil)

    public init(settings: Settings) {
        self.settings = settings
    }

    /// fava writes its ledger file without a lock: one request at a time.
    public var maxRequestsInFlight: Int? { 1 }

    /// A beancount transaction has a date, and its postings an amount in a
    /// currency: without them `add_entries` cannot write one (``FavaTransaction``).
    /// (An amount always comes with its currency; a currency alone is not
    /// enough.)
    public static let requiredFields = RequiredFields(["amount", "currency", "date"], backend: "fava")
    public var requiredFields: RequiredFields { Self.requiredFields }

    public func describe(_ job: OutboxJob) -> String {
        switch job.kind {
        case .create: job.sends > 1 ? "GET /api/changed, /api/query, then PUT /api/add_entries unless found" : "PUT /api/add_entries"
        case .receipt: "PUT /api/add_document"
        case .edit, .delete: "nothing: fava's API cannot change an entry"
        }
    }

    public func send(_ job: OutboxJob, receiptPath: String?, token: String?, answered: @escaping @Sendable (SyncOutcome) -> Void) {
        // Unstructured: the work takes several requests; this task ends by
        // calling `answered`, which the engine owns until then.
        Task { [self] in
            answered(await outcome(of: job, receiptPath: receiptPath))
        }
    }

    func outcome(of job: OutboxJob, receiptPath: String?) async -> SyncOutcome {
        switch job.kind {
        case .create: return await create(job)
        case .receipt: return await attach(job, receiptPath: receiptPath)
        case .edit, .delete:
            return .failed(SyncFailure(.unsupported, summary: "fava's API cannot \(job.kind == .edit ? "change" : "delete") a transaction: \(job.kind == .edit ? "change" : "delete") the one linked ^\(job.transactionID) in the ledger by hand, then 'expensectl discard \(job.transactionID)'"))
        }
    }

    /// Looks the link up first when an earlier send may have reached fava.
    func create(_ job: OutboxJob) async -> SyncOutcome {
        guard let transaction = FavaTransaction(job: job, expenseTemplate: settings.expenseAccountTemplate, funding: settings.fundingAccount) else {
            return .failed(SyncFailure(.rejected, summary: "400 a beancount transaction needs an amount and a currency; this expense has none"))
        }
        if job.sends > 1 {
            switch await lookUp(job) {
            case .failure(let box): return box.outcome
            case .success(let found?):
                return .applied(found.expense(receiptURL: nil), replayed: true, code: "found by link")
            case .success(nil):
                break
            }
        }
        var request = request("PUT", "/api/add_entries", json: ["entries": .array([transaction.json])])
        request.isReplaySafe = false
        let result = await send(request)
        return Self.outcome(ofWrite: result) {
            (transaction.expense(clientID: job.uuid, now: Timestamp.format(milliseconds: Clock.wallMilliseconds)), "200 stored")
        }
    }

    /// Uploads the receipt into the expense account's documents folder as
    /// `<date>.<transaction id>.<ext>` and links it to the transaction
    /// (`hash`: fava adds `document:` metadata to it).
    func attach(_ job: OutboxJob, receiptPath: String?) async -> SyncOutcome {
        guard let receiptPath else { return .receiptUnreadable(reason: "the job names no receipt file") }
        let found: FavaEntry
        switch await lookUp(job) {
        case .failure(let box): return box.outcome
        case .success(nil): return .failed(SyncFailure(.notFound, summary: "404 no transaction in the ledger is linked ^\(job.transactionID) yet"))
        case .success(let entry?): found = entry
        }
        let folder: String
        switch await documents() {
        case .failure(let box): return box.outcome
        case .success(let f): folder = f
        }
        let bytes: [UInt8]
        do {
            bytes = try await files.run { try Self.read(receiptPath) }
        } catch {
            return .receiptUnreadable(reason: "\(error)")
        }
        let kind = job.receiptKind ?? .jpeg
        let filename = "\(found.date).\(job.transactionID).\(kind.fileExtension)"
        var form = MultipartForm()
        form.add("folder", folder)
        form.add("account", found.expenseAccount)
        form.add("hash", found.hash)
        form.addFile("file", filename: filename, contentType: kind.contentType, bytes: bytes)
        var request = HTTPRequest(method: "PUT", url: settings.baseURL + "/api/add_document", headers: [form.contentType], body: .bytes(form.bytes),
                                  connectTimeoutMilliseconds: settings.connectTimeoutMilliseconds,
                                  totalTimeoutMilliseconds: settings.requestTimeoutMilliseconds + Int64(bytes.count) * 1000 / (64 * 1024))
        request.isReplaySafe = false
        let result = await send(request)
        let receiptURL = "\(settings.baseURL)/document/?filename=\(FavaQuery.percentEncoded("\(folder)/\(found.expenseAccount.split(separator: ":").joined(separator: "/"))/\(filename)"))"
        // Already there: an earlier upload of this very file got through.
        if case .success(let response) = result, response.status == 409 {
            return .applied(found.expense(receiptURL: receiptURL), replayed: true, code: "409 already there")
        }
        return Self.outcome(ofWrite: result) { (found.expense(receiptURL: receiptURL), "200 uploaded") }
    }

    /// `GET <base>/api/changed`, then the transaction carrying either half
    /// of `job`'s marker: the link, or the `transaction_id` metadata. Either
    /// alone is ours (only this daemon writes them), so an entry whose
    /// metadata or link was removed by hand is still found, not made twice;
    /// one whose metadata names another transaction is not this one.
    func lookUp(_ job: OutboxJob) async -> Result<FavaEntry?, SyncOutcomeError> {
        let id = job.transactionID
        switch await entries(where: "'\(id)' IN links OR entry_meta('transaction_id') = '\(id)'",
                             lookedUp: (transactionID: id, clientID: job.kind == .create ? job.uuid : nil)) {
        case .failure(let box): return .failure(box)
        case .success(let entries): return .success(entries.first { $0.transactionID == id })
        }
    }

    /// Our transactions matching `condition`, after making fava reload
    /// the ledger if the file changed (its reads lag its writes until then).
    /// - Parameter lookedUp: the marker the condition asks for, which a row
    ///   found by its link alone carries without the metadata.
    func entries(where condition: String, lookedUp: (transactionID: String, clientID: String?)? = nil) async -> Result<[FavaEntry], SyncOutcomeError> {
        if case .failure(let box) = await data(request("GET", "/api/changed"), what: "changed") { return .failure(box) }
        // `str(number)`: fava sends a Decimal as a JSON number, which would
        // lose its digits (99.00 read as 99.0); a string keeps them.
        let query = "SELECT id, date, payee, narration, entry_meta('transaction_id'), entry_meta('client_id'), account, str(number), currency WHERE \(condition)"
        switch await data(request("GET", "/api/query?query_string=" + FavaQuery.percentEncoded(query)), what: "query") {
        case .failure(let box): return .failure(box)
        case .success(let data):
            guard let entries = FavaEntry.entries(fromQuery: data, funding: settings.fundingAccount, lookedUp: lookedUp) else {
                return .failure(SyncOutcomeError(.failed(SyncFailure(.transient, summary: "200 fava's query answer is not what fava 1.30 sends")), isUnreadable: true))
            }
            return .success(entries)
        }
    }

    /// The ledger's `documents` folder, as `add_document` wants it.
    func documents() async -> Result<String, SyncOutcomeError> {
        if let known = documentsFolder.withLock({ $0 }) { return .success(known) }
        switch await data(request("GET", "/api/options"), what: "options") {
        case .failure(let box): return .failure(box)
        case .success(let data):
            guard let folder = data["beancount_options"]?["documents"]?.stringValue.flatMap(Self.firstOfPythonList) else {
                return .failure(SyncOutcomeError(.failed(SyncFailure(.rejected, summary: "422 the ledger has no documents option: add 'option \"documents\" \"…\"' to it"))))
            }
            documentsFolder.withLock { $0 = folder }
            return .success(folder)
        }
    }

    /// Every transaction of ours, as the ledger has it now (fava has no
    /// accounts: the configuration refuses `accounts_dir`).
    public func fetchChanges(since cursor: String?, token: String?, account: String) async -> ChangesReply {
        switch await entries(where: "str(entry_meta('transaction_id')) ~ '^cp-'") {
        case .success(let entries):
            return .page(ChangesPage(expenses: entries.map { $0.expense(receiptURL: nil) }, nextCursor: nil, hasMore: false))
        case .failure(let failure):
            return failure.changesReply
        }
    }

    /// The first string of a Python list's `repr` (`['/srv/docs']`): fava
    /// 1.30's options answer gives every beancount option as `str(value)`.
    static func firstOfPythonList(_ text: String) -> String? {
        var chars = Substring(text)
        guard chars.first == "[" else { return nil }
        chars = chars.dropFirst()
        guard let quote = chars.first, quote == "'" || quote == "\"" else { return nil }
        chars = chars.dropFirst()
        var out = ""
        var escaped = false
        for c in chars {
            if escaped {
                out.append(c)
                escaped = false
            } else if c == "\\" {
                escaped = true
            } else if c == quote {
                return out.isEmpty ? nil : out
            } else {
                out.append(c)
            }
        }
        return nil
    }

    public func shutdown() {
        client.shutdown()
    }

    /// A request to `<base><path>` (`<base>/api/…`), with the settings' timeouts.
    func request(_ method: String, _ path: String, json: JSONValue? = nil) -> HTTPRequest {
        request(method, url: settings.baseURL + path, json: json)
    }

    /// A request to `url`, with the settings' timeouts.
    func request(_ method: String = "GET", url: String, json: JSONValue? = nil) -> HTTPRequest {
        var headers: [(String, String)] = []
        var body = HTTPRequest.Body.none
        if let json {
            headers.append(("Content-Type", "application/json"))
            body = .bytes(json.serializedBytes())
        }
        return HTTPRequest(method: method, url: url, headers: headers, body: body,
                           connectTimeoutMilliseconds: settings.connectTimeoutMilliseconds,
                           totalTimeoutMilliseconds: settings.requestTimeoutMilliseconds)
    }

    static func read(_ path: String) throws -> [UInt8] {
        let fd = try FileDescriptor.open(path, [.readOnly, .noFollow])
        var out: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 256 * 1024)
        while true {
            let n = try fd.read(into: &buffer, at: Int64(out.count))
            if n == 0 { return out }
            out += buffer[0..<n]
        }
    }
}
