import Posix
import ServerStorage
import SQLite

extension SQLiteStore {
    /// What a backup holds.
    public struct BackupSummary: Sendable {
        public let expenses: Int
        public let receipts: Int
        /// Snapshots taken (more than one when receipts changed under the first).
        public let snapshots: Int
    }

    /// Where a backup is, for ``backup(to:at:)``'s observer.
    public enum BackupStep: Sendable, Equatable {
        /// Every receipt file there was is linked; no snapshot yet.
        case linkedFiles
        /// Snapshot `n` (from 1) is taken; the files it names are not all linked yet.
        case tookSnapshot(Int)
    }

    /// Writes a complete, consistent copy of the data to `destination`, a
    /// new folder laid out as a data directory (restore by serving from it).
    ///
    /// The database is copied with SQLite's online backup API while the
    /// server writes on; the receipt files are hard links (copies on
    /// another file system), so a file the server removes afterwards stays
    /// in the backup. Every file is linked before the snapshot, and the
    /// ones the snapshot names that appeared since are linked after it; if
    /// one of those was replaced and removed in between, the snapshot is
    /// taken again. Files the snapshot does not name are left out.
    /// - Throws: ``SystemCallError`` (the destination exists, say),
    ///   ``SQLiteError``, or ``StorageError`` when the receipts changed
    ///   under five snapshots in a row.
    /// - Parameter step: called at each ``BackupStep`` (tests change the
    ///   data there, to land in the windows between the steps).
    public func backup(to destination: String, at step: (BackupStep) throws -> Void = { _ in }) throws -> BackupSummary {
        let copies = "\(destination)/receipts"
        try FileSystem.makeDirectory(destination, mode: 0o700, mustBeNew: true)
        try FileSystem.makeDirectory(copies, mode: 0o700, mustBeNew: true)
        // A file removed since the folder was listed is no longer needed.
        for name in try receiptNames(in: receipts.directory) {
            _ = try keepUnlessGone(name, in: copies)
        }
        try step(.linkedFiles)
        for snapshot in 1...5 {
            let backupPath = "\(destination)/\(Self.databaseName)"
            let source = try Connection(path: databasePath, create: false)
            source.setBusyTimeout(milliseconds: 10_000)
            let copy = try Connection(path: backupPath)
            try source.backup(into: copy)
            try step(.tookSnapshot(snapshot))
            let referenced = Set(try copy.query("SELECT receipt_file FROM expenses WHERE receipt_file IS NOT NULL") { $0.string(0) })
            let present = Set(try receiptNames(in: copies))
            var complete = true
            // One replaced and removed since the first links: snapshot again.
            for name in referenced.subtracting(present) {
                if try !keepUnlessGone(name, in: copies) { complete = false }
            }
            guard complete else { continue }
            for name in present.subtracting(referenced) { try FileSystem.remove("\(copies)/\(name)") }
            try FileSystem.syncDirectory(copies)
            try FileSystem.syncDirectory(destination)
            let expenses = Int(try copy.scalarInt("SELECT count(*) FROM expenses") ?? 0)
            return BackupSummary(expenses: expenses, receipts: referenced.count, snapshots: snapshot)
        }
        throw StorageError(.unavailable, "the receipts kept changing while the database was copied; try again")
    }

    /// Names this server gives receipt files, in `folder`.
    private func receiptNames(in folder: String) throws -> [String] {
        try FileSystem.contents(of: folder).compactMap { $0.string }.filter { $0.hasPrefix("cp-") }
    }

    /// ``keep(_:from:in:)`` from `receipts/`.
    /// - Returns: false when the file is not there (any more).
    private func keepUnlessGone(_ name: String, in folder: String) throws -> Bool {
        guard case .failure(let error) = Result(catching: { try keep(name, from: receipts.directory, in: folder) }) else { return true }
        guard (error as? SystemCallError)?.isNotFound == true else { throw error }
        return false
    }

    /// Links `name` into `folder`; copies it (and syncs the copy) when the
    /// two are on different file systems.
    private func keep(_ name: String, from source: String, in folder: String) throws {
        let linked = Result { () throws(SystemCallError) in try FileSystem.link("\(source)/\(name)", to: "\(folder)/\(name)") }
        guard case .failure(let error) = linked else { return }
        guard error.isCrossDevice else { throw error }
        let input = try FileDescriptor.open("\(source)/\(name)", [.readOnly, .noFollow])
        let output = try FileDescriptor.open("\(folder)/\(name)", [.writeOnly, .create, .exclusive, .noFollow], mode: 0o600)
        var offset: Int64 = 0
        while try output.copy(from: input, offset: &offset, count: 1 << 20) > 0 {}
        try output.sync()
    }
}
