/// How much the outbox may hold (docs/sync.md, "A bounded outbox"): the
/// jobs not yet finished, the receipt bytes not yet sent, and the free
/// space kept on the state directory's file system. An add or a spool
/// drop that would go past one is refused before anything is written,
/// and the caller is told which limit and what frees room.
///
/// A value: ``admit(_:into:directory:)`` is the whole decision, tested
/// with a table; the store reads the use (counters kept by triggers, and
/// `statvfs`) inside the add's transaction and asks it.
public struct OutboxLimits: Sendable, Equatable {
    /// Jobs in the outbox (queued, sending, needing attention) at most.
    public var maxJobs: Int
    /// Receipt bytes held for uploads not yet done (the bytes as received
    /// and the legible copies made of them) at most.
    public var maxReceiptBytes: Int64
    /// Free space of the state directory's file system that adds never take.
    public var diskReserveBytes: Int64

    public init(maxJobs: Int, maxReceiptBytes: Int64, diskReserveBytes: Int64) {
        self.maxJobs = maxJobs
        self.maxReceiptBytes = maxReceiptBytes
        self.diskReserveBytes = diskReserveBytes
    }

    /// No limit at all: what a store made without limits (tests, tools) has.
    public static let none = OutboxLimits(maxJobs: .max, maxReceiptBytes: .max, diskReserveBytes: 0)

    /// What the outbox holds now.
    public struct Use: Sendable, Equatable {
        public var jobs: Int
        public var receiptBytes: Int64
        /// Free space of the file system (what `statvfs` reports available
        /// to an unprivileged writer). Nil when it cannot be read: no disk
        /// check, the commit's `ENOSPC` still refuses.
        public var diskFreeBytes: Int64?
        /// The drain's headroom is not set aside: the file system filled
        /// and the drain took it (or it could not be made at start). The
        /// space it frees is the drain's until it is set aside again.
        public var headroomMissing: Bool

        public init(jobs: Int, receiptBytes: Int64, diskFreeBytes: Int64?, headroomMissing: Bool = false) {
            self.jobs = jobs
            self.receiptBytes = receiptBytes
            self.diskFreeBytes = diskFreeBytes
            self.headroomMissing = headroomMissing
        }
    }

    /// What an add brings.
    public struct Incoming: Sendable, Equatable {
        /// Jobs it queues: a create, and an upload with a receipt.
        public var jobs: Int
        /// Receipt bytes it adds to those held.
        public var receiptBytes: Int64
        /// Bytes it will still write to the file system: its receipt before
        /// the copy is made, nothing once the copy is on disk (then
        /// `statvfs` counts it already).
        public var unwrittenBytes: Int64

        public init(jobs: Int, receiptBytes: Int64 = 0, unwrittenBytes: Int64 = 0) {
            self.jobs = jobs
            self.receiptBytes = receiptBytes
            self.unwrittenBytes = unwrittenBytes
        }

        /// An add of an expense, with a receipt of `receiptBytes` (nil: none)
        /// still to be copied (`copied: false`) or copied already.
        public static func add(receiptBytes: Int64?, copied: Bool) -> Incoming {
            guard let receiptBytes else { return Incoming(jobs: 1) }
            return Incoming(jobs: 2, receiptBytes: receiptBytes, unwrittenBytes: copied ? 0 : receiptBytes)
        }

        /// A receipt of `receiptBytes` attached to an expense already here
        /// (`edit --receipt`): one upload.
        public static func attach(receiptBytes: Int64, copied: Bool) -> Incoming {
            Incoming(jobs: 1, receiptBytes: receiptBytes, unwrittenBytes: copied ? 0 : receiptBytes)
        }
    }

    /// Whether `incoming` fits: nil when it does, else the first limit it
    /// would go past, jobs before receipt bytes before the disk. A limit
    /// is reached when the add would take the use past it: at exactly the
    /// limit the add is taken. While the drain's headroom is missing, the
    /// file system counts as full.
    /// - Parameter directory: the state directory, named in a disk refusal.
    public func admit(_ incoming: Incoming, into use: Use, directory: String) -> OutboxRefusal? {
        if incoming.jobs > 0, use.jobs > maxJobs - incoming.jobs {
            return .jobs(queued: use.jobs, incoming: incoming.jobs, limit: maxJobs)
        }
        if incoming.receiptBytes > 0, use.receiptBytes > maxReceiptBytes - incoming.receiptBytes {
            return .receiptBytes(held: use.receiptBytes, incoming: incoming.receiptBytes, limit: maxReceiptBytes)
        }
        if use.headroomMissing {
            return .diskFull(directory: directory, cause: "the drain is using the room set aside for it")
        }
        if let free = use.diskFreeBytes, free - incoming.unwrittenBytes < diskReserveBytes {
            return .diskReserve(directory: directory, free: free, incoming: incoming.unwrittenBytes, reserve: diskReserveBytes)
        }
        return nil
    }
}
