@testable import OutboxStore
import SQLite

/// Takes a store's database back to an older schema version, as if the
/// later migrations had never run, so that a test can open it with
/// today's store and see the way up. One entry per migration after 3, in
/// the order they undo; a new migration adds its own here.
enum SchemaRollback {
    static let undo: [Int: [String]] = [
        // Version 14 keeps every row at once: the rows left for the first read are written first.
        15: [ListingSchema.catchUp, "DROP TRIGGER listing_job_update", "DROP TRIGGER listing_job_delete",
             ListingSchema.jobUpdateTrigger, ListingSchema.jobDeleteTrigger,
             ListingSchema.newExpenseMigration, "DELETE FROM counters WHERE name = 'listing_seq'"],
        14: ["DROP TRIGGER upload_cancellations_job_gone", "DROP TABLE upload_cancellations",
             "ALTER TABLE jobs DROP COLUMN upload_offset", "ALTER TABLE jobs DROP COLUMN upload_url"],
        13: ["DROP TRIGGER listing_new_expense", "DROP TRIGGER listing_job_insert", ListingSchema.jobInsertTrigger],
        12: ["DROP TRIGGER copies_to_make_queued", "DROP TRIGGER copies_to_make_made", "DROP TRIGGER copies_to_make_job_gone",
             "DROP TABLE copies_to_make"],
        11: ["DROP TRIGGER receipt_readings_job_gone", "DROP TABLE receipt_readings", "DROP TABLE read_marks"],
        10: ["DROP TRIGGER jobs_receipt_bytes_insert", "DROP TRIGGER jobs_receipt_bytes_delete",
             "DROP TRIGGER copies_receipt_bytes_insert", "DROP TRIGGER copies_receipt_bytes_delete",
             "DELETE FROM counters WHERE name = 'receipt_bytes'"],
        9: ["DROP TABLE received_receipts", "ALTER TABLE receipt_originals DROP COLUMN removed_at"],
        8: ["DROP TRIGGER receipt_copies_job_gone", "DROP TABLE receipt_copies", "DROP TABLE receipt_originals"],
        7: ["DROP INDEX jobs_by_account"],
        6: ["DROP TRIGGER receipt_digests_job_gone", "DROP TABLE receipt_digests"],
        5: ["DROP TABLE expense_sources"],
        4: ["listing_job_insert", "listing_job_update", "listing_job_delete",
            "listing_expense_insert", "listing_expense_update", "listing_expense_delete"].map { "DROP TRIGGER \($0)" }
            + ["DROP TABLE listing"],
    ]

    /// Undoes every migration after `version` in `db`.
    static func back(_ db: Connection, to version: Int) throws {
        let latest = Schema.migrations.map(\.version).max() ?? 0
        precondition(Set(undo.keys) == Set(4...latest), "SchemaRollback.undo must say how to undo every migration after 3")
        for step in stride(from: latest, to: version, by: -1) {
            for statement in undo[step] ?? [] { try db.execute(statement) }
        }
        try db.execute("DELETE FROM schema_migrations WHERE version > ?", [.integer(Int64(version))])
    }
}
