import Digest
import ExpenseCore
import Posix

/// Receipt bytes on disk: `receipts/` holds the files expenses point at,
/// `tmp/` the uploads still arriving. A file is written under `tmp/`,
/// fsynced, and renamed into `receipts/` (then the directory is fsynced)
/// before the row that points at it commits.
struct ReceiptFiles: Sendable {
    let directory: String
    let temporaryDirectory: String

    init(dataDirectory: String) throws(SystemCallError) {
        directory = "\(dataDirectory)/receipts"
        temporaryDirectory = "\(dataDirectory)/tmp"
        try FileSystem.makeDirectory(directory, mode: 0o700)
        try FileSystem.makeDirectory(temporaryDirectory, mode: 0o700)
    }

    /// A new, empty, exclusively created file under `tmp/`.
    func makeTemporary() throws(SystemCallError) -> (FileDescriptor, path: String) {
        let path = "\(temporaryDirectory)/\(Hex.encode(SecureRandom.bytes(16))).part"
        let fd = try FileDescriptor.open(path, [.writeOnly, .create, .exclusive, .noFollow], mode: 0o600)
        return (fd, path)
    }

    /// Makes the finished upload at `temporaryPath` durable under a new name
    /// in `receipts/` and returns that name.
    func keep(_ file: FileDescriptor, at temporaryPath: String, transactionID: String, kind: ReceiptKind) throws(SystemCallError) -> String {
        try file.sync()
        let name = "\(transactionID)-\(Hex.encode(SecureRandom.bytes(8))).\(kind.fileExtension)"
        try FileSystem.rename(temporaryPath, to: "\(directory)/\(name)")
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

    /// Removes what a crash can leave behind: uploads in `tmp/`, and files
    /// in `receipts/` that no row names, once older than `graceNanoseconds`
    /// (a younger one may belong to a commit still under way, in this or
    /// another server process).
    /// - Returns: the names removed.
    func sweep(referenced: Set<String>, graceNanoseconds: Int64, now: Int64) throws(SystemCallError) -> [String] {
        var removed: [String] = []
        for name in try FileSystem.contents(of: temporaryDirectory) {
            guard let text = name.string, text.hasSuffix(".part") else { continue }
            let path = "\(temporaryDirectory)/\(text)"
            if let st = try? FileSystem.status(path, followLinks: false), st.kind == .regular,
               now - st.modifiedNanoseconds > graceNanoseconds {
                try FileSystem.remove(path)
                removed.append("tmp/\(text)")
            }
        }
        for name in try FileSystem.contents(of: directory) {
            // Only names this server gives: cp-<22 hex>-<16 hex>.<ext>.
            guard let text = name.string, text.hasPrefix("cp-"), !referenced.contains(text) else { continue }
            let path = "\(directory)/\(text)"
            if let st = try? FileSystem.status(path, followLinks: false), st.kind == .regular,
               now - st.modifiedNanoseconds > graceNanoseconds {
                try FileSystem.remove(path)
                removed.append("receipts/\(text)")
            }
        }
        return removed
    }
}
