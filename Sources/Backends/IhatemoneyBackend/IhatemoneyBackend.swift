import Curl
import DaemonSupport
import Digest
import ExpenseCore
import Posix
import Synchronization
import SyncEngine

/// An ihatemoney project's bills (ihatemoney 7.2.1, `…/api/projects/<id>`)
/// behind the sync engine's seam. ihatemoney honours no idempotency key,
/// so exactly once is built here (docs/backends.md): every bill carries
/// the expense's marker in `external_link`; a create whose earlier send
/// had an unknown outcome is sent again only after the project's bills
/// were listed and none carried it; and a create never goes on a reused
/// connection, where libcurl would send it twice by itself.
public final class IhatemoneyBackend: SyncBackend {
    public struct Settings: Sendable, Equatable {
        /// `http://host:port/api/projects/<project id>`, without a trailing slash.
        public var projectURL: String
        /// HTTP Basic's user; the private code (the token) is its password.
        public var projectID: String
        /// The member who pays the default account's expenses; nil when
        /// none is configured (its creates then need attention).
        public var payer: String?
        /// Each account's paying member, by account name; nil without
        /// `accounts_dir`, where the one account's refresh shows every
        /// bill carrying our marker instead of only its payer's.
        public var payers: [String: String]?
        /// The members paid for; nil for every active member.
        public var payedFor: [String]?
        public var connections: Int
        public var connectTimeoutMilliseconds: Int64
        public var requestTimeoutMilliseconds: Int64
        /// Where receipts stay: ihatemoney stores no files.
        public var keptReceiptsDirectory: String

        public init(projectURL: String, projectID: String, payer: String?, payers: [String: String]? = nil, payedFor: [String]?, connections: Int,
                    connectTimeoutMilliseconds: Int64, requestTimeoutMilliseconds: Int64, keptReceiptsDirectory: String) {
            self.projectURL = projectURL
            self.projectID = projectID
            self.payer = payer
            self.payers = payers
            self.payedFor = payedFor
            self.connections = connections
            self.connectTimeoutMilliseconds = connectTimeoutMilliseconds
            self.requestTimeoutMilliseconds = requestTimeoutMilliseconds
            self.keptReceiptsDirectory = keptReceiptsDirectory
        }

        /// The member who pays `account`'s expenses, if one is configured.
        public func payer(of account: String) -> String? {
            account == AccountName.defaultName ? payer : payers?[account]
        }
    }

    let settings: Settings
    let client: HTTPClient
    let kept: KeptReceipts
    /// The project's members as last read (``memberList(including:auth:)``).
    let members = Mutex<[Member]?>(nil)

    struct Member: Sendable, Equatable {
        let name: String
        let id: Int64
        let active: Bool
    }

    struct Members: Sendable, Equatable {
        let payer: Int64
        let owers: [Int64]
    }

    public init(settings: Settings) {
        self.settings = settings
        client = HTTPClient(maxConnections: settings.connections)
        kept = KeptReceipts(directory: settings.keptReceiptsDirectory)
    }

    /// ihatemoney takes concurrent requests: the engine's concurrency decides.
    public var maxRequestsInFlight: Int? { nil }

    /// A bill's amount and date: ihatemoney's `BillForm` requires both
    /// (`DataRequired`), and fills a missing date with its own today, so
    /// a bill without them would be a `0` in the household's balances, or
    /// dated the day it was scanned. Its `what` (the merchant) and currency
    /// have honest stand-ins ("Receipt", `XXX`: the project's own).
    public static let requiredFields = RequiredFields(["amount", "date"], backend: "ihatemoney")
    public var requiredFields: RequiredFields { Self.requiredFields }

    public func describe(_ job: OutboxJob) -> String {
        switch job.kind {
        case .create: job.sends > 1 ? "GET /bills, then POST /bills unless found" : "POST /bills"
        case .receipt: "keep the receipt locally"
        case .edit: "GET /bills, PUT /bills/<id>"
        case .delete: "GET /bills, DELETE /bills/<id>"
        }
    }

    /// Every job takes a lookup or a file first, so each runs in a task of
    /// its own that ends by calling `answered` (the engine owns it until then).
    public func send(_ job: OutboxJob, receiptPath: String?, token: String?, answered: @escaping @Sendable (SyncOutcome) -> Void) {
        Task { [self] in
            answered(await outcome(of: job, receiptPath: receiptPath, token: token))
        }
    }

    func outcome(of job: OutboxJob, receiptPath: String?, token: String?) async -> SyncOutcome {
        let auth = authorization(token)
        switch job.kind {
        case .create: return await create(job, auth: auth)
        case .receipt: return await keep(job, receiptPath: receiptPath, auth: auth)
        case .edit: return await edit(job, auth: auth)
        case .delete: return await delete(job, auth: auth)
        }
    }

    /// Looks the marker up first when an earlier send may have reached
    /// ihatemoney; sends the bill only when no bill carries it.
    func create(_ job: OutboxJob, auth: [(String, String)]) async -> SyncOutcome {
        let marker = IhatemoneyMarker(transactionID: job.transactionID, clientID: job.uuid)
        if job.sends > 1 {
            switch await bills(auth: auth) {
            case .failure(let box): return box.outcome
            case .success(let bills):
                if let bill = bills.first(where: { $0.marker?.transactionID == job.transactionID }) {
                    return .applied(bill.expense(marker: marker, receiptURL: kept.url(for: job.transactionID)), replayed: true,
                                    code: "found by marker as bill \(bill.id)")
                }
            }
        }
        guard let payer = settings.payer(of: job.account) else {
            return .failed(SyncFailure(.unsupported, summary: Self.noPayer(job.account)))
        }
        let ids: Members
        switch await memberIDs(payer: payer, auth: auth) {
        case .failure(let box): return box.outcome
        case .success(let found): ids = found
        }
        let form = IhatemoneyForm.bill(fields: job.fields, payer: ids.payer, owers: ids.owers, link: marker.link,
                                       fallbackDate: Timestamp.format(milliseconds: job.createdMilliseconds).prefix(10))
        var request = request("POST", "/bills", auth: auth, form: form)
        request.isReplaySafe = false
        let result = await client.send(request)
        return Self.outcome(ofWrite: result) { body in
            guard let id = Self.createdID(body) else { return nil }
            let fields = IhatemoneyForm.sentFields(job.fields, fallbackDate: form.date)
            return (CanonicalExpense(transactionID: job.transactionID, clientID: job.uuid, fields: fields,
                                     createdAt: Timestamp.format(milliseconds: Clock.wallMilliseconds),
                                     updatedAt: Timestamp.format(milliseconds: Clock.wallMilliseconds)), "201 bill \(id)")
        }
    }

    /// ihatemoney answers a create with the new bill's id, as JSON.
    static func createdID(_ body: [UInt8]) -> Int64? {
        (try? JSONValue.parse(body))?.intValue
    }

    /// Keeps the receipt in the folder of kept receipts; the cache's
    /// receipt URL then names that file.
    func keep(_ job: OutboxJob, receiptPath: String?, auth: [(String, String)]) async -> SyncOutcome {
        guard let receiptPath else { return .receiptUnreadable(reason: "the job names no receipt file") }
        let keptAlready: Bool
        do {
            keptAlready = try await kept.keep(receiptPath, transactionID: job.transactionID, kind: job.receiptKind ?? .jpeg)
        } catch {
            return .receiptUnreadable(reason: "cannot keep it in '\(settings.keptReceiptsDirectory)': \(error)")
        }
        // The cache's row gets the receipt with the bill as ihatemoney has it now.
        switch await bills(auth: auth) {
        case .failure(let box): return box.outcome
        case .success(let bills):
            guard let bill = bills.first(where: { $0.marker?.transactionID == job.transactionID }), let marker = bill.marker else {
                return .failed(SyncFailure(.notFound, summary: "404 no bill in ihatemoney carries this expense's marker yet"))
            }
            return .applied(bill.expense(marker: marker, receiptURL: kept.url(for: job.transactionID)), replayed: keptAlready,
                            code: "kept locally")
        }
    }

    /// PUTs the bill as it is now with the edit's fields over it: payer and
    /// owers stay what ihatemoney holds (someone may have changed them there).
    func edit(_ job: OutboxJob, auth: [(String, String)]) async -> SyncOutcome {
        await withFoundBill(job, auth: auth) { bill, marker in
            let current = bill.expense(marker: marker, receiptURL: nil)
            var fields = ExpenseFields(merchant: current.merchant, amount: current.amount, currency: current.currency, date: current.date,
                                       comment: current.comment).merging(job.fields)
            if fields.date == nil { fields.date = bill.date }
            let form = IhatemoneyForm.bill(fields: fields, payer: bill.payerID, owers: bill.owerIDs, link: marker.link, fallbackDate: Substring(bill.date))
            let result = await client.send(request("PUT", "/bills/\(bill.id)", auth: auth, form: form))
            return Self.outcome(ofWrite: result) { _ in
                var expense = current
                expense.merchant = fields.merchant
                expense.amount = fields.amount
                expense.currency = fields.currency
                expense.date = fields.date
                expense.comment = fields.comment
                expense.receiptURL = kept.url(for: job.transactionID)
                expense.updatedAt = Timestamp.format(milliseconds: Clock.wallMilliseconds)
                return (expense, "200 bill \(bill.id)")
            }
        }
    }

    /// DELETEs the bill; a bill already gone is a delete done.
    func delete(_ job: OutboxJob, auth: [(String, String)]) async -> SyncOutcome {
        await withFoundBill(job, auth: auth) { bill, marker in
            let result = await client.send(request("DELETE", "/bills/\(bill.id)", auth: auth))
            if case .success(let response) = result, response.status == 404 {
                return .failed(SyncFailure(.gone, summary: "404 bill \(bill.id) is no longer in ihatemoney"))
            }
            return Self.outcome(ofWrite: result) { _ in
                var tombstone = bill.expense(marker: marker, receiptURL: kept.url(for: job.transactionID))
                tombstone.deleted = true
                return (tombstone, "200 bill \(bill.id) deleted")
            }
        }
    }

    /// `body` with the bill carrying `job`'s marker and that marker; what
    /// finding it came to (`.gone` when no bill carries it) otherwise.
    private func withFoundBill(_ job: OutboxJob, auth: [(String, String)],
                               _ body: (IhatemoneyBill, IhatemoneyMarker) async -> SyncOutcome) async -> SyncOutcome {
        switch await find(job.transactionID, auth: auth) {
        case .failure(let box):
            return box.outcome
        case .success(let bill):
            guard let marker = bill.marker else { preconditionFailure("found by its marker") }
            return await body(bill, marker)
        }
    }

    /// The bill carrying `transactionID`'s marker; `.gone` when none does.
    func find(_ transactionID: String, auth: [(String, String)]) async -> Result<IhatemoneyBill, SyncOutcomeError> {
        switch await bills(auth: auth) {
        case .failure(let outcome): return .failure(outcome)
        case .success(let bills):
            guard let bill = bills.first(where: { $0.marker?.transactionID == transactionID }) else {
                return .failure(SyncOutcomeError(.failed(SyncFailure(.gone, summary: "404 no bill in ihatemoney carries this expense's marker"))))
            }
            return .success(bill)
        }
    }

    /// Every bill of the project (ihatemoney cannot filter by `external_link`).
    func bills(auth: [(String, String)]) async -> Result<[IhatemoneyBill], SyncOutcomeError> {
        let result = await client.send(request("GET", "/bills", auth: auth))
        return Self.listing(result, what: "bill list") { value in
            guard let items = value.arrayValue else { return nil }
            let bills = items.compactMap(IhatemoneyBill.init(json:))
            return bills.count == items.count ? bills : nil
        }
    }

    /// What a create of an account without a paying member says: nothing
    /// was sent, and the configuration must name one.
    static func noPayer(_ account: String) -> String {
        account == AccountName.defaultName
            ? "not sent: the default account has no paying member; set ihatemoney_payer = <member>, then retry"
            : "not sent: account '\(account)' has no paying member; add \(account):<member> to ihatemoney_payers, then retry"
    }

    /// The project's members, read from `GET …/members` once and again
    /// whenever one of `names` is not among them (a member may have been
    /// added since).
    func memberList(including names: [String], auth: [(String, String)]) async -> Result<[Member], SyncOutcomeError> {
        if let known = members.withLock({ $0 }), names.allSatisfy({ name in known.contains { $0.name == name } }) {
            return .success(known)
        }
        let result = await client.send(request("GET", "/members", auth: auth))
        let listed = Self.listing(result, what: "member list") { value -> [Member]? in
            guard let items = value.arrayValue else { return nil }
            let members = items.compactMap { item -> Member? in
                guard let name = item["name"]?.stringValue, let id = item["id"]?.intValue else { return nil }
                return Member(name: name, id: id, active: item["activated"]?.boolValue ?? true)
            }
            return members.count == items.count ? members : nil
        }
        if case .success(let list) = listed { members.withLock { $0 = list } }
        return listed
    }

    /// The id of member `name`; one ihatemoney lacks is a configuration to
    /// fix, refused naming the key that names it.
    static func id(of name: String, in list: [Member], key: String) -> Result<Int64, SyncOutcomeError> {
        guard let member = list.first(where: { $0.name == name }) else {
            return .failure(SyncOutcomeError(.failed(SyncFailure(.rejected, summary: "400 the ihatemoney project has no member '\(name)' (\(key))"))))
        }
        return .success(member.id)
    }

    /// The key that names `payer`, for the message when it is missing.
    func payerKey(_ payer: String) -> String {
        settings.payer == payer ? "ihatemoney_payer" : "ihatemoney_payers"
    }

    /// A create's payer and owers: `payer`'s id, and those of
    /// `ihatemoney_payed_for` (every active member when not set).
    func memberIDs(payer: String, auth: [(String, String)]) async -> Result<Members, SyncOutcomeError> {
        let list: [Member]
        switch await memberList(including: [payer] + (settings.payedFor ?? []), auth: auth) {
        case .failure(let outcome): return .failure(outcome)
        case .success(let found): list = found
        }
        let payerID: Int64
        switch Self.id(of: payer, in: list, key: payerKey(payer)) {
        case .failure(let outcome): return .failure(outcome)
        case .success(let id): payerID = id
        }
        guard let names = settings.payedFor else { return .success(Members(payer: payerID, owers: list.filter(\.active).map(\.id))) }
        var owers: [Int64] = []
        for name in names {
            switch Self.id(of: name, in: list, key: "ihatemoney_payed_for") {
            case .failure(let outcome): return .failure(outcome)
            case .success(let id): owers.append(id)
            }
        }
        return .success(Members(payer: payerID, owers: owers))
    }

    /// `GET …/bills`: every bill of ours, with its receipt when one is
    /// kept. With accounts, an account's are the bills its member paid
    /// (ihatemoney's project is one pot: the payer is whose a bill is); an
    /// account without a paying member has none.
    public func fetchChanges(since cursor: String?, token: String?, account: String) async -> ChangesReply {
        let auth = authorization(token)
        var payerID: Int64?
        if settings.payers != nil {
            guard let payer = settings.payer(of: account) else {
                return .page(ChangesPage(expenses: [], nextCursor: nil, hasMore: false))
            }
            // Only the payer's id: the members paid for are the creates' concern.
            let found = await memberList(including: [payer], auth: auth).flatMap { Self.id(of: payer, in: $0, key: payerKey(payer)) }
            switch found {
            case .failure(let failure): return failure.changesReply
            case .success(let id): payerID = id
            }
        }
        let result = await client.send(request("GET", "/bills", auth: auth))
        return Self.changes(from: result, paidBy: payerID, receiptURL: kept.url(for:))
    }

    public func shutdown() {
        client.shutdown()
    }

    /// `Authorization: Basic base64(project id:private code)`.
    func authorization(_ token: String?) -> [(String, String)] {
        guard let token else { return [] }
        return [("Authorization", "Basic " + Base64.encode(Array("\(settings.projectID):\(token)".utf8)))]
    }

    func request(_ method: String, _ path: String, auth: [(String, String)], form: IhatemoneyForm? = nil) -> HTTPRequest {
        var headers = auth
        var body = HTTPRequest.Body.none
        if let form {
            headers.append(("Content-Type", "application/x-www-form-urlencoded"))
            body = .bytes(form.bytes)
        }
        return HTTPRequest(method: method, url: settings.projectURL + path, headers: headers, body: body,
                           connectTimeoutMilliseconds: settings.connectTimeoutMilliseconds,
                           totalTimeoutMilliseconds: settings.requestTimeoutMilliseconds)
    }
}
