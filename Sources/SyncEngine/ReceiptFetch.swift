import ExpenseCore
import Posix

/// What asking a backend for an expense's receipt came to: classed as
/// every other request's outcome is, for the server's record.
public enum ReceiptFetch: Sendable, Equatable {
    /// The bytes, with the digest the backend sent for them (expense-server's
    /// `Repr-Digest`), if any.
    case bytes([UInt8], reprDigest: [UInt8]?)
    /// No answer at all: the server could not be reached.
    case unanswered(reason: String)
    /// The backend has no receipt for it: an answer, no fault of the server's.
    case notFound
    /// The account's token was refused; `code` names the answer (`401`).
    case credentialsRefused(code: String)
    /// Answered with a failure of this class: a transient one (5xx, 408,
    /// 429) says to try later.
    case failed(SyncFailure)
    /// Answered with more bytes than `receipt_max_bytes`: not taken.
    case tooLarge(limit: Int)
    /// The backend keeps no receipts the daemon can read back.
    case unsupported(reason: String)
}

extension SyncBackend {
    /// Backends whose receipts stay with the daemon (ihatemoney) or that
    /// have no read for them here (fava) answer this.
    public func fetchReceipt(transactionID: String, token: String?) async -> ReceiptFetch {
        .unsupported(reason: "this backend keeps no receipt the daemon can fetch")
    }
}

extension Drainer {
    /// The receipt of `transactionID` as the backend has it, fetched with
    /// `account`'s token: the client asking never sees the token. Its
    /// outcome is recorded in the server's state as a sync request's is:
    /// no answer is an outage, a refused token pauses the account.
    public func fetchReceipt(transactionID: String, account: String) async -> ReceiptFetch {
        let (token, _, generation) = tokens.source(for: account).current()
        let fetch = await backend.fetchReceipt(transactionID: transactionID, token: token)
        let now = Clock.wallMilliseconds
        switch fetch {
        case .unanswered(let reason):
            noteUnreachable("Server unreachable (\(reason)); the receipt of \(transactionID) was not fetched", reason: reason,
                            transactionID: transactionID, account: account)
        case .credentialsRefused(let code):
            noteAnswer { $0.answered(at: now) }
            _ = await pauseForCredentials(account: account, refusedGeneration: generation, code: code)
        case .failed(let failure):
            noteAnswer { $0.failed(account: account, failure.outcome.className, "receipt: \(failure.summary)", at: now) }
        case .bytes:
            noteAnswer { $0.succeeded(account: account, at: now) }
        case .notFound, .tooLarge:
            noteAnswer { $0.answered(at: now) }
        case .unsupported:
            break
        }
        return fetch
    }
}
