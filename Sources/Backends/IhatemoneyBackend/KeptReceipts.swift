import DaemonSupport
import ExpenseCore
import Posix

/// The folder of receipts a backend that stores no files leaves with the
/// daemon: `<state dir>/kept-receipts/<transaction id>.<ext>`, a hard link
/// to the daemon's own receipt file (so the store removing its name after
/// the job leaves this one). Nothing here is ever deleted by the daemon.
final class KeptReceipts: Sendable {
    let directory: String
    /// Linking and syncing the folder block: not on the HTTP thread or the pool.
    private let files = BlockingExecutor(label: "kept-receipts", width: 1)

    init(directory: String) {
        self.directory = directory
    }

    /// Links `path` in as `transactionID`'s receipt, durably. A receipt
    /// kept before for the expense that is another file (`edit --receipt`
    /// replaced it) is moved aside to `<transaction id>.replaced-<ms>.<ext>`,
    /// never deleted.
    /// - Returns: whether it was kept already (a resend after a crash).
    func keep(_ path: String, transactionID: String, kind: ReceiptKind) async throws -> Bool {
        let directory = self.directory
        let target = "\(directory)/\(transactionID).\(kind.fileExtension)"
        return try await files.run {
            try FileSystem.makeDirectories(directory, mode: 0o700)
            let new = try FileSystem.status(path)
            for other in ReceiptKind.allCases {
                let existing = "\(directory)/\(transactionID).\(other.fileExtension)"
                guard let kept = try? FileSystem.status(existing, followLinks: false) else { continue }
                // The same file: linked before a crash ended the job.
                if kept.device == new.device && kept.inode == new.inode { return true }
                try FileSystem.rename(existing, to: "\(directory)/\(transactionID).replaced-\(Clock.wallMilliseconds).\(other.fileExtension)")
            }
            try FileSystem.link(path, to: target)
            try FileSystem.syncDirectory(directory)
            return false
        }
    }

    /// `file://` URL of the kept receipt of `transactionID`, if one is kept.
    func url(for transactionID: String) -> String? {
        for kind in [ReceiptKind.jpeg, .png, .pdf] {
            let path = "\(directory)/\(transactionID).\(kind.fileExtension)"
            if FileSystem.exists(path) { return "file://\(path)" }
        }
        return nil
    }
}
