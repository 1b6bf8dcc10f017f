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

    /// Links `path` in as `transactionID`'s receipt, durably.
    /// - Returns: whether it was kept already (a resend after a crash).
    func keep(_ path: String, transactionID: String, kind: ReceiptKind) async throws -> Bool {
        let directory = self.directory
        let target = "\(directory)/\(transactionID).\(kind.fileExtension)"
        return try await files.run {
            try FileSystem.makeDirectories(directory, mode: 0o700)
            do {
                try FileSystem.link(path, to: target)
            } catch let error as SystemCallError where error.isExisting {
                return true
            }
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
