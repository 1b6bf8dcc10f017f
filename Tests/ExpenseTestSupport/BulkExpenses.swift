/// Many expenses written straight into a server's database in one
/// statement, for the export and listing tests and bench-server: far
/// faster than through the API, and with values a CSV must quote.
extension StorageFixture {
    /// Inserts `count` expenses for the user `userID`, transaction ids
    /// `cp-bulk` and 17 digits from `first`. Every 10th merchant holds a
    /// comma, quotes, a line break and an accent; every 5th expense has a
    /// receipt; every 3rd is in USD, the others in EUR; dates spread over 2026.
    public func insertExpenses(_ count: Int, userID: Int64, first: Int = 1) throws {
        let last = first + count - 1
        if database != nil {
            // The server's triggers, row by row, would update the user's one
            // totals row 100,000 times in one transaction (a version chain
            // each update walks): off for the insert, then what they keep
            // is written in one go.
            try execute("""
                BEGIN;
                SET LOCAL session_replication_role = replica;
                INSERT INTO receipts (size) SELECT 3 WHERE NOT EXISTS (SELECT 1 FROM receipts);
                INSERT INTO expenses (transaction_id, user_id, client_id, merchant, amount, currency, date, category, comment,
                                      receipt_id, receipt_type, receipt_sha256, receipt_size, version, created_at, updated_at, change_seq)
                SELECT 'cp-bulk' || lpad(i::text, 17, '0'), \(userID), 'k' || i,
                       CASE WHEN i % 10 = 0 THEN 'Caf' || chr(233) || ', "Le" ' || i || chr(10) || 'x' ELSE 'Shop ' || i END,
                       (i % 1000) || '.' || lpad((i % 100)::text, 2, '0'), CASE WHEN i % 3 = 0 THEN 'USD' ELSE 'EUR' END,
                       to_char(date '2026-01-01' + (i % 365), 'YYYY-MM-DD'), CASE WHEN i % 7 = 0 THEN 'Travel' ELSE 'Meals' END,
                       CASE WHEN i % 2 = 0 THEN NULL ELSE ' spaced ' END,
                       CASE WHEN i % 5 = 0 THEN (SELECT min(id) FROM receipts) END, CASE WHEN i % 5 = 0 THEN 'image/png' END,
                       CASE WHEN i % 5 = 0 THEN repeat('ab', 32) END, CASE WHEN i % 5 = 0 THEN 3 END,
                       1, '2026-01-01T00:00:00.000Z', '2026-01-01T00:00:00.000Z', 1000000000 + i
                FROM generate_series(\(first), \(last)) AS i;
                INSERT INTO expense_versions
                    SELECT id, version, merchant, amount, currency, date, category, comment, tax_tag, receipt_sha256, deleted, conflicts, updated_at
                    FROM expenses WHERE user_id = \(userID) ON CONFLICT DO NOTHING;
                DELETE FROM expense_totals WHERE user_id = \(userID);
                INSERT INTO expense_totals
                    SELECT user_id, coalesce(currency, ''), count(*), coalesce(sum(CAST(replace(amount, '.', '') AS bigint)), 0)
                    FROM expenses WHERE user_id = \(userID) AND NOT deleted GROUP BY 1, 2;
                COMMIT;
                """)
        } else {
            try execute("""
                WITH RECURSIVE n(i) AS (SELECT \(first) UNION ALL SELECT i + 1 FROM n WHERE i < \(last))
                INSERT INTO expenses (transaction_id, user_id, client_id, merchant, amount, currency, date, category, comment,
                                      receipt_file, receipt_type, receipt_sha256, receipt_size, version, created_at, updated_at, change_seq)
                SELECT printf('cp-bulk%017d', i), \(userID), 'k' || i,
                       CASE WHEN i % 10 = 0 THEN 'Caf' || char(233) || ', "Le" ' || i || char(10) || 'x' ELSE 'Shop ' || i END,
                       (i % 1000) || '.' || printf('%02d', i % 100), CASE WHEN i % 3 = 0 THEN 'USD' ELSE 'EUR' END,
                       date('2026-01-01', '+' || (i % 365) || ' days'), CASE WHEN i % 7 = 0 THEN 'Travel' ELSE 'Meals' END,
                       CASE WHEN i % 2 = 0 THEN NULL ELSE ' spaced ' END,
                       CASE WHEN i % 5 = 0 THEN 'bulk.png' END, CASE WHEN i % 5 = 0 THEN 'image/png' END,
                       CASE WHEN i % 5 = 0 THEN printf('%.64c', 'a') END, CASE WHEN i % 5 = 0 THEN 3 END,
                       1, '2026-01-01T00:00:00.000Z', '2026-01-01T00:00:00.000Z', 1000000000 + i
                FROM n
                """)
        }
    }

    /// The columns of `expense-server export --format csv` but `deleted`
    /// and `conflict`, read straight from the database (NULL as `nil`),
    /// by transaction id: what an export must give back.
    public func exportableRows() throws -> [[String?]] {
        try rows("""
            SELECT e.transaction_id, u.name, e.date, e.merchant, e.amount, e.currency, e.category, e.comment, e.tax_tag,
                   CASE WHEN e.receipt_sha256 IS NULL THEN NULL ELSE '/expenses/' || e.transaction_id || '/receipt' END,
                   e.receipt_type, e.receipt_sha256, CAST(e.receipt_size AS TEXT), CAST(e.version AS TEXT), e.created_at, e.updated_at
            FROM expenses e JOIN users u ON u.id = e.user_id WHERE NOT e.deleted ORDER BY e.transaction_id
            """, columns: 16)
    }
}
