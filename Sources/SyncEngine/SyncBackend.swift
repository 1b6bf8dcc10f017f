import ExpenseCore
import OutboxStore

/// What the sync engine needs of an expense backend: send one job, and
/// list what changed. expense-server's HTTP contract is the first
/// (`ExpenseServerBackend`); a backend is added without touching the engine.
///
/// The engine keeps one job per expense in flight, counts and backs off by
/// the ``SyncOutcome`` a backend reports, and gives each job the token of
/// its account. A backend owns the rest: its requests, its connections,
/// and how its answers map to outcomes.
///
/// A backend that cannot recognise a repeated create (no idempotency key)
/// looks the create's marker up before sending it again: a job whose
/// ``OutboxJob/sends`` is above 1 was handed to the network before, with
/// an outcome that may be unknown; ``send(_:receiptPath:token:answered:)``
/// may do that lookup first (asynchronously, as this one hashes a receipt
/// first) and answer `.applied(…, replayed: true)` when it finds the record.
public protocol SyncBackend: Sendable {
    /// Requests at once this backend can take, whatever the engine's
    /// concurrency (1 for one that must be written one request at a
    /// time); nil when it has no limit of its own.
    var maxRequestsInFlight: Int? { get }

    /// What an expense must have before it can be created here
    /// (``RequiredFields``; `.none` when any expense can). The engine
    /// holds the create of one that lacks them, and what waits behind it,
    /// until an edit completes it.
    var requiredFields: RequiredFields { get }

    /// Sends `job`. `answered` runs exactly once: as the answer arrives, on
    /// the backend's own thread, where it must not block (the engine hands
    /// over its next request from there); at once, when the backend is shut
    /// down; or from a task of the backend's, when work had to come before
    /// the request.
    /// - Parameters:
    ///   - receiptPath: the receipt file of a receipt job, in the state directory.
    ///   - token: the secret of the job's account, or nil without one.
    func send(_ job: OutboxJob, receiptPath: String?, token: String?, answered: @escaping @Sendable (SyncOutcome) -> Void)

    /// One page of what changed since `cursor` (nil: from the beginning),
    /// tombstones included, for `account` (``AccountName``), read with its
    /// token. A backend whose one pot holds every account's records (an
    /// ihatemoney project) tells them apart by the account.
    func fetchChanges(since cursor: String?, token: String?, account: String) async -> ChangesReply

    /// The receipt of `transactionID` as the backend holds it, read with
    /// `token` (``ReceiptFetch``).
    func fetchReceipt(transactionID: String, token: String?) async -> ReceiptFetch

    /// What `job`'s request is, for a debug line ("POST /v1/expenses").
    func describe(_ job: OutboxJob) -> String

    /// Ends every request in flight (each answered as unanswered) and
    /// takes no more.
    func shutdown()

    /// Cancels a resumable upload a receipt job left unfinished (its
    /// expense deleted, its receipt replaced), read with `token`.
    /// - Returns: true once the backend holds it no more; false to try
    ///   again in a later pass.
    func cancelUpload(url: String, token: String?) async -> Bool
}

extension SyncBackend {
    /// A backend without resumable uploads never has one to cancel.
    public func cancelUpload(url: String, token: String?) async -> Bool { true }
}

/// One page of changes, as the engine stores it.
public struct ChangesPage: Sendable, Equatable {
    public var expenses: [CanonicalExpense]
    /// Where the next page starts; nil when the backend gave none.
    public var nextCursor: String?
    public var hasMore: Bool

    public init(expenses: [CanonicalExpense], nextCursor: String?, hasMore: Bool) {
        self.expenses = expenses
        self.nextCursor = nextCursor
        self.hasMore = hasMore
    }
}

/// What asking for changes came to.
public enum ChangesReply: Sendable, Equatable {
    case page(ChangesPage)
    /// No answer at all.
    case unanswered(reason: String)
    /// Our credentials were refused; `code` names the answer (`401`).
    case refused(code: String)
    /// Answered with a failure of this class.
    case failed(SyncFailure)
    /// Answered, but not with a listing of the shape the backend documents.
    case malformed
}

/// Where a backend records, durably and before it sends a byte of it, the
/// resumable upload a receipt job has on the server and the bytes the
/// server holds (nil: none; the next send starts a new one).
public protocol UploadRecorder: Sendable {
    func recordUpload(jobUUID: String, url: String?, offset: Int64?) async throws
}

extension Store: UploadRecorder {}
