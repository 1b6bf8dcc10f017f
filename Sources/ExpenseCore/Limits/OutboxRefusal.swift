/// Why an add or a spool drop was refused for room: which limit, with the
/// figures a person needs to act (docs/sync.md, "A bounded outbox"). The
/// control socket answers it as `outbox_full`; `expensectl` exits 75
/// (try again later); the spool leaves the file where it is.
public enum OutboxRefusal: Error, Sendable, Equatable, CustomStringConvertible {
    /// `queued` jobs wait already; `incoming` more would pass `limit` (`outbox_max_jobs`).
    case jobs(queued: Int, incoming: Int, limit: Int)
    /// `held` receipt bytes wait to be sent; `incoming` more would pass `limit` (`outbox_max_receipt_bytes`).
    case receiptBytes(held: Int64, incoming: Int64, limit: Int64)
    /// The file system of `directory` has `free` bytes for adds; writing
    /// `incoming` more would leave less than `reserve` (`disk_reserve`).
    case diskReserve(directory: String, free: Int64, incoming: Int64, reserve: Int64)
    /// The file system of `directory` was full when the add wrote (`ENOSPC`
    /// on its receipt, `SQLITE_FULL` on its commit); `cause` says which.
    case diskFull(directory: String, cause: String)

    /// The reasons `stats` counts refusals by.
    public enum Reason: String, Sendable, CaseIterable, Hashable {
        case jobs
        case receiptBytes = "receipt_bytes"
        case diskReserve = "disk_reserve"
        case diskFull = "disk_full"
    }

    public var reason: Reason {
        switch self {
        case .jobs: .jobs
        case .receiptBytes: .receiptBytes
        case .diskReserve: .diskReserve
        case .diskFull: .diskFull
        }
    }

    /// What the caller is told: the limit, the figures, and what frees room.
    public var message: String {
        switch self {
        case .jobs(let queued, let incoming, let limit):
            return "the outbox is full: \(queued) jobs queued (limit \(limit), outbox_max_jobs), and this needs \(incoming) more; "
                + "they leave as the server takes them; nothing was stored, try again later"
        case .receiptBytes(let held, let incoming, let limit):
            return "the outbox is full: receipts held use \(SizeText.describe(bytes: held)) of \(SizeText.describe(bytes: limit)) "
                + "(outbox_max_receipt_bytes), and this receipt is \(SizeText.describe(bytes: incoming)); "
                + "they leave as the server takes them; nothing was stored, try again later"
        case .diskReserve(let directory, let free, let incoming, let reserve):
            let shortfall = incoming > 0
                ? "; this receipt's \(SizeText.describe(bytes: incoming)) would leave less than the reserve of \(SizeText.describe(bytes: reserve))"
                : ", below the reserve of \(SizeText.describe(bytes: reserve))"
            return "the outbox is full: the file system of \(directory) has \(SizeText.describe(bytes: max(0, free))) free\(shortfall) (disk_reserve); "
                + "sending frees room, as does freeing space there; nothing was stored, try again later"
        case .diskFull(let directory, let cause):
            return "the outbox is full: the file system of \(directory) is full (\(cause)); "
                + "sending frees room, as does freeing space there; nothing was stored, try again later"
        }
    }

    public var description: String { message }
}
