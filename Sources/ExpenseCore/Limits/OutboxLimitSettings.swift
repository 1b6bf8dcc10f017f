/// The outbox's limits as configured (`outbox_max_jobs`,
/// `outbox_max_receipt_bytes`, `disk_reserve`), some of which depend on
/// the size of the state directory's file system: ``resolve(fileSystemBytes:)``
/// turns them into the ``OutboxLimits`` the store checks.
public struct OutboxLimitSettings: Sendable, Equatable {
    public var maxJobs: Int
    /// Nil: the lesser of ``defaultReceiptBytesCap`` and a quarter of the file system.
    public var maxReceiptBytes: Int64?
    /// Nil: the lesser of 5% of the file system and ``defaultReserveCap``.
    public var diskReserve: DiskReserve?

    public init(maxJobs: Int = OutboxLimitSettings.defaultMaxJobs, maxReceiptBytes: Int64? = nil, diskReserve: DiskReserve? = nil) {
        self.maxJobs = maxJobs
        self.maxReceiptBytes = maxReceiptBytes
        self.diskReserve = diskReserve
    }

    public static let defaultMaxJobs = 100_000
    /// 2 GiB: two thousand scans of a megabyte, weeks of a busy office offline.
    public static let defaultReceiptBytesCap: Int64 = 2 << 30
    /// 1 GiB: with 5% of the file system, as journald keeps 15% capped at 4 GiB.
    public static let defaultReserveCap: Int64 = 1 << 30

    /// A free-space reserve: a size, or a share of the file system.
    public enum DiskReserve: Sendable, Equatable {
        case bytes(Int64)
        case percent(Int)

        func bytes(of fileSystemBytes: Int64) -> Int64 {
            switch self {
            case .bytes(let bytes): bytes
            case .percent(let percent): fileSystemBytes / 100 * Int64(percent)
            }
        }
    }

    /// The limits for a file system of `fileSystemBytes`.
    public func resolve(fileSystemBytes: Int64) -> OutboxLimits {
        OutboxLimits(maxJobs: maxJobs,
                     maxReceiptBytes: maxReceiptBytes ?? min(Self.defaultReceiptBytesCap, fileSystemBytes / 4),
                     diskReserveBytes: diskReserve?.bytes(of: fileSystemBytes) ?? min(fileSystemBytes / 20, Self.defaultReserveCap))
    }

    /// The headroom the daemon holds for its drain on a file system of
    /// `fileSystemBytes` (docs/sync.md): a 32nd of it, at least 1 MiB and
    /// at most 16 MiB. A claim or a batch of answers writes tens of pages;
    /// 1 MiB is hundreds of such commits, and the sends free more.
    public static func headroomBytes(fileSystemBytes: Int64) -> Int64 {
        min(max(fileSystemBytes / 32, 1 << 20), 16 << 20)
    }
}
