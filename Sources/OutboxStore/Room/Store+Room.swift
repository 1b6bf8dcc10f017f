import ExpenseCore
import Posix
import SQLite
import Synchronization

/// How much the store may hold, and what it sets aside for the drain
/// (docs/sync.md, "A bounded outbox").
public struct RoomSettings: Sendable {
    public var limits: OutboxLimits
    /// The drain's headroom (``OutboxLimitSettings/headroomBytes(fileSystemBytes:)``); 0: none.
    public var headroomBytes: Int64
    /// Reads the space of the file system of a path: `statvfs` unless a
    /// test gives its own.
    public var space: @Sendable (String) throws -> FileSystemSpace
    /// Told when the headroom is given up to the drain or set aside again.
    public var onHeadroom: @Sendable (HeadroomEvent) -> Void

    public init(limits: OutboxLimits = .none, headroomBytes: Int64 = 0,
                space: @escaping @Sendable (String) throws -> FileSystemSpace = { try FileSystem.space(of: $0) },
                onHeadroom: @escaping @Sendable (HeadroomEvent) -> Void = { _ in }) {
        self.limits = limits
        self.headroomBytes = headroomBytes
        self.space = space
        self.onHeadroom = onHeadroom
    }
}

/// What became of the drain's headroom.
public enum HeadroomEvent: Sendable, Equatable {
    /// A write of the drain found the file system full: the headroom
    /// (`bytes`, at `path`) was given up and the WAL checkpointed and
    /// truncated, and the write tried again.
    case released(bytes: Int64, path: String)
    /// A write of the drain found the file system full with the headroom
    /// given up already: only the WAL could be truncated.
    case walTruncated
    /// There is room again: the headroom is set aside anew.
    case restored(bytes: Int64)
}

/// The store's side of the limits: the settings, the headroom, and the
/// refusals counted since the daemon started.
final class Room: Sendable {
    let limits: OutboxLimits
    let directory: String
    let headroom: Headroom?
    let space: @Sendable (String) throws -> FileSystemSpace
    let onHeadroom: @Sendable (HeadroomEvent) -> Void
    let refusalsSinceStart = Mutex<[OutboxRefusal.Reason: Int]>([:])

    init(_ settings: RoomSettings, directory: String) {
        limits = settings.limits
        self.directory = directory
        headroom = settings.headroomBytes > 0 ? Headroom(path: "\(directory)/\(Room.headroomName)", bytes: settings.headroomBytes) : nil
        space = settings.space
        onHeadroom = settings.onHeadroom
    }

    /// The headroom's file in the state directory.
    static let headroomName = "expensed.headroom"

    /// The free space of the file system; nil when it cannot be read.
    func free() -> Int64? {
        try? space(directory).availableBytes
    }

    /// The drain's headroom is not set aside (it took it, or it could not be made).
    var headroomMissing: Bool { headroom.map { !$0.isHeld } ?? false }

    /// Whether an add must look at the file system at all.
    var checksDisk: Bool { limits.diskReserveBytes > 0 || headroom != nil }
}

extension Store {
    /// The outbox's jobs and receipt bytes, from the counters' page.
    static func outboxCounts(_ db: Connection) throws -> (jobs: Int, receiptBytes: Int64) {
        var jobs = 0
        var bytes: Int64 = 0
        for (name, value) in try db.query("SELECT name, value FROM counters WHERE name IN ('queued', 'sending', 'needs_attention', 'receipt_bytes')",
                                          [], { ($0.string(0), $0.int64(1)) }) {
            if name == "receipt_bytes" { bytes = value } else { jobs += Int(value) }
        }
        return (jobs, bytes)
    }

    /// Refuses `incoming` when it does not fit, inside the caller's
    /// transaction: its counts include every write before it in the same
    /// group commit, so concurrent adds cannot pass a limit together.
    /// - Throws: ``OutboxRefusal``.
    static func admit(_ db: Connection, _ incoming: OutboxLimits.Incoming, room: Room) throws {
        guard room.limits != .none || room.checksDisk else { return }
        let (jobs, bytes) = try outboxCounts(db)
        let use = OutboxLimits.Use(jobs: jobs, receiptBytes: bytes, diskFreeBytes: room.checksDisk ? room.free() : nil,
                                   headroomMissing: room.headroomMissing)
        if let refusal = room.limits.admit(incoming, into: use, directory: room.directory) { throw refusal }
    }

    /// Refuses `incoming` before anything of it is written (a receipt
    /// before it is copied). The commit checks again: this one only saves
    /// the copy of a receipt that could not be taken. An add retried with
    /// the client id of an expense already here (`retrying`) is never
    /// refused: it adds nothing, and is answered as its first try was.
    /// - Throws: ``OutboxRefusal``.
    public func admit(_ incoming: OutboxLimits.Incoming, retrying clientID: String? = nil) async throws {
        try await database.read { [room] db in
            if let clientID, try !Store.owners(db, transactionID: TransactionID.derive(from: clientID)).isEmpty { return }
            try Store.admit(db, incoming, room: room)
        }
    }

    /// The accounts of the expense `transactionID` (its create queued, or
    /// it is known from the server): one, or none when it is not here.
    /// The transaction id derives from the client id, so its index finds a retried add.
    static func owners(_ db: Connection, transactionID: String) throws -> [String] {
        try db.query("SELECT account FROM jobs WHERE transaction_id = ?1 AND kind = 'create' UNION SELECT account FROM expenses WHERE transaction_id = ?1",
                     [.text(transactionID)]) { $0.string(0) }
    }

    /// The refusal an add's failure stands for when it is a full file
    /// system: `ENOSPC` (or `EDQUOT`) copying its receipt, `SQLITE_FULL` at
    /// its commit. Nil for any other error.
    public func refusal(forFailure error: Error) -> OutboxRefusal? {
        switch error {
        case let refusal as OutboxRefusal:
            return refusal
        case let error as SQLiteError where error.isDiskFull:
            return .diskFull(directory: room.directory, cause: "the database could not commit: \(error.message)")
        case ReceiptError.io(let error) where error.isNoRoom:
            return .diskFull(directory: room.directory, cause: "the receipt could not be stored: \(error.call): \(error.reason)")
        case let error as SystemCallError where error.isNoRoom:
            return .diskFull(directory: room.directory, cause: "\(error.call): \(error.reason)")
        default:
            return nil
        }
    }

    /// Counts a refusal, since start and in the totals across restarts.
    /// The totals' write is deferred and may itself find the disk full:
    /// such a refusal is counted since start only.
    public func countRefusal(_ refusal: OutboxRefusal) {
        room.refusalsSinceStart.withLock { $0[refusal.reason, default: 0] += 1 }
        database.write(durability: .deferred, { db in try Store.increment(db, "refusals." + refusal.reason.rawValue) }, completion: { _ in })
    }

    /// Refusals by reason (``OutboxRefusal/Reason``): since the daemon
    /// started, and in total across restarts.
    public func refusalCounts() async throws -> (sinceStart: [String: Int], total: [String: Int]) {
        let sinceStart = room.refusalsSinceStart.withLock { counts in
            Dictionary(uniqueKeysWithValues: counts.map { ($0.key.rawValue, $0.value) })
        }
        let total = try await database.read { db in
            try db.query("SELECT name, value FROM counters WHERE name LIKE 'refusals.%'", [], { (String($0.string(0).dropFirst(9)), $0.int(1)) })
        }
        return (sinceStart, Dictionary(total, uniquingKeysWith: +))
    }

    /// The outbox's use against its limits now.
    public func roomState() async throws -> OutboxRoomState {
        let (jobs, bytes) = try await database.read { db in try Store.outboxCounts(db) }
        return OutboxRoomState(limits: room.limits, use: OutboxLimits.Use(jobs: jobs, receiptBytes: bytes, diskFreeBytes: room.free(),
                                                                         headroomMissing: room.headroomMissing),
                               headroomHeld: room.headroom?.isHeld)
    }

    /// Whether the drain's headroom is given up (the file system filled):
    /// until it is set aside again, its room is the drain's alone, and
    /// nothing else (an add, a legible copy) may write into it.
    public var isHeadroomGivenUp: Bool { room.headroomMissing }

    /// Sets the drain's headroom aside, at start. Blocking.
    /// - Throws: what kept it from being allocated (a full file system):
    ///   adds count it as taken until ``restoreHeadroom()`` finds room.
    public func establishHeadroom() throws(SystemCallError) {
        try room.headroom?.establish()
    }

    /// Sets the headroom aside again, on the store's queue and without
    /// waiting, once it was given up and the file system has room for it
    /// twice over (so that the drain, which gave it up, is not short again
    /// at once). Cheap while it is held: called after every drain change,
    /// and at every refusal (a daemon with no server has no drain to ask).
    public func restoreHeadroom() {
        guard let headroom = room.headroom, !headroom.isHeld else { return }
        database.probe { [room] in
            guard !headroom.isHeld, let available = try? room.space(room.directory).availableBytes, available >= 2 * headroom.bytes,
                  (try? headroom.establish()) != nil else { return }
            room.onHeadroom(.restored(bytes: headroom.bytes))
        }
    }

    /// A write of the drain found the file system full: gives up the
    /// headroom and checkpoints the WAL into the database and truncates it
    /// (its pages are the database's again, and its file's space is free),
    /// on the store's queue, between transactions.
    /// - Returns: whether anything was freed, worth trying the write again.
    func makeRoomForDrain() async -> Bool {
        let (released, truncated) = (try? await database.read { [room] db -> (Bool, Bool) in
            let released = room.headroom?.release() ?? false
            // (busy, frames in the log, frames checkpointed): busy 0 means the log was truncated.
            let busy = (try? db.queryFirst("PRAGMA wal_checkpoint(TRUNCATE)") { $0.int(0) }) ?? nil
            return (released, busy == 0)
        }) ?? (false, false)
        if released, let headroom = room.headroom {
            room.onHeadroom(.released(bytes: headroom.bytes, path: headroom.path))
        } else if truncated {
            room.onHeadroom(.walTruncated)
        }
        return released || truncated
    }
}
