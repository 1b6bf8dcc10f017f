import Posix
import Synchronization

/// Space set aside for the drain (docs/sync.md, "A bounded outbox"): a
/// file of its own in the state directory, allocated with
/// `posix_fallocate`, that the daemon gives up when a write of the drain
/// finds the file system full. Sending is what frees space, and sending
/// needs a little (a claim, the answers, in the WAL): a file system filled
/// by someone else must not stop it. Adds never use it: while it is given
/// up, adds are refused as on a full disk, and it is set aside again once
/// there is room.
final class Headroom: Sendable {
    let path: String
    let bytes: Int64
    private let held = Mutex(false)

    init(path: String, bytes: Int64) {
        self.path = path
        self.bytes = bytes
    }

    var isHeld: Bool { held.withLock { $0 } }

    /// Makes the file hold ``bytes`` (creating it, or growing or shrinking
    /// one a run with another size left). A file that cannot be allocated
    /// whole is removed: half a headroom would be counted as a whole one.
    /// Blocking.
    func establish() throws(SystemCallError) {
        do {
            let file = try FileDescriptor.open(path, [.writeOnly, .create, .noFollow], mode: 0o600)
            if try file.status().size > bytes { try file.truncate(to: bytes) }
            try file.allocate(length: bytes)
        } catch {
            try? FileSystem.remove(path)
            held.withLock { $0 = false }
            throw error
        }
        held.withLock { $0 = true }
    }

    /// Gives the space up (removes the file). Blocking.
    /// - Returns: true when it held it.
    func release() -> Bool {
        let wasHeld = held.withLock { held -> Bool in
            defer { held = false }
            return held
        }
        if wasHeld { try? FileSystem.remove(path) }
        return wasHeld
    }
}
