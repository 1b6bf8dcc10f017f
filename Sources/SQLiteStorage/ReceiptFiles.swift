import Digest
import ExpenseCore
import Posix
import ServerStorage

/// Receipt bytes on disk: `receipts/` holds the files expenses point at.
/// An upload staged in `tmp/` is fsynced and renamed in here (then the
/// directory is fsynced) before the row that points at it commits.
struct ReceiptFiles: Sendable {
    let directory: String

    init(directory: String) throws(SystemCallError) {
        self.directory = directory
        try FileSystem.makeDirectory(directory, mode: 0o700)
    }

    /// Makes the staged upload durable under a new name in `receipts/` and
    /// returns that name.
    func keep(_ upload: StagedReceipt, transactionID: String) throws(SystemCallError) -> String {
        try upload.file.sync()
        let name = "\(transactionID)-\(Hex.encode(SecureRandom.bytes(8))).\(upload.kind.fileExtension)"
        try FileSystem.rename(upload.path, to: "\(directory)/\(name)")
        do {
            try FileSystem.syncDirectory(directory)
        } catch {
            // Not durable, so not usable: no row will point at it.
            try? remove(name)
            throw error
        }
        return name
    }

    func open(_ name: String) throws(SystemCallError) -> FileDescriptor {
        try FileDescriptor.open("\(directory)/\(name)", [.readOnly, .noFollow])
    }

    /// Removes a receipt no row points at (any more).
    func remove(_ name: String) throws(SystemCallError) {
        try FileSystem.remove("\(directory)/\(name)")
    }

    /// Removes files no row names, once older than `graceNanoseconds`: a
    /// younger one may belong to a commit still under way, in this or
    /// another server process.
    /// - Returns: the names removed, as `receipts/NAME`.
    func sweep(referenced: Set<String>, graceNanoseconds: Int64, now: Int64) throws(SystemCallError) -> [String] {
        // Only names this server gives: cp-<22 hex>-<16 hex>.<ext>.
        try UploadStaging.removeOldFiles(in: directory, label: "receipts", graceNanoseconds: graceNanoseconds, now: now) {
            $0.hasPrefix("cp-") && !referenced.contains($0)
        }
    }
}
