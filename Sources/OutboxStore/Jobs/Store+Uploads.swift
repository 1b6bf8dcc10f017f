import ExpenseCore
import SQLite

/// Resumable uploads (docs/sync.md, "Resumable uploads"): where a receipt
/// job's upload is on the server, and the uploads to cancel there.
extension Store {
    /// Records, durably, the upload the job `jobUUID` has on the server
    /// and the bytes the server said it holds (nil: the job has none, it
    /// starts again with a new one). Nothing when the job is gone.
    public func recordUpload(jobUUID: String, url: String?, offset: Int64?) async throws {
        try await database.write { db in
            try db.execute("UPDATE jobs SET upload_url = ?, upload_offset = ? WHERE uuid = ?",
                           [.text(url), offset.map { .integer($0) } ?? .null, .text(jobUUID)])
        }
    }

    /// The server finished with the job's upload (completed it, or its
    /// expense is gone there): removing the job cancels nothing.
    static func forgetUpload(_ db: Connection, _ job: OutboxJob) throws {
        try db.execute("UPDATE jobs SET upload_url = NULL WHERE seq = ? AND upload_url IS NOT NULL", [.integer(job.seq)])
    }

    /// Uploads to cancel on the server, with the account whose token made
    /// them (``startPass()`` reads them for the drainer).
    public func uploadCancellations() async throws -> [(url: String, account: String)] {
        try await database.read { db in try Store.uploadCancellations(db) }
    }

    static func uploadCancellations(_ db: Connection) throws -> [(url: String, account: String)] {
        try db.query("SELECT url, account FROM upload_cancellations ORDER BY url") { ($0.string(0), $0.string(1)) }
    }

    /// The server cancelled `url` (or had nothing there).
    public func forgetCancellation(url: String) async throws {
        try await database.write(durability: .deferred) { db in
            try db.execute("DELETE FROM upload_cancellations WHERE url = ?", [.text(url)])
        }
    }
}
