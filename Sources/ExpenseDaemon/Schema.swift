import SQLite

/// The store's schema history. Each migration is applied in the
/// transaction that records it; never edit one that has shipped.
enum Schema {
    static let migrations: [Migration] = [
        Migration(version: 1, sql: """
            -- "EXPD": marks the file as an expensed database, in the same
            -- transaction as the tables.
            PRAGMA application_id = 1163415620;

            CREATE TABLE settings (
                key TEXT PRIMARY KEY,
                value TEXT NOT NULL
            );

            -- The outbox: one row per operation waiting for the server.
            -- seq is the per-device monotonic sequence (AUTOINCREMENT never
            -- reuses a value, even after the row is gone).
            CREATE TABLE jobs (
                seq INTEGER PRIMARY KEY AUTOINCREMENT,
                uuid TEXT NOT NULL UNIQUE,
                kind TEXT NOT NULL CHECK (kind IN ('create', 'receipt', 'edit', 'delete')),
                transaction_id TEXT NOT NULL,
                payload TEXT NOT NULL,
                state TEXT NOT NULL DEFAULT 'queued' CHECK (state IN ('queued', 'sending', 'needs_attention')),
                attempts INTEGER NOT NULL DEFAULT 0,
                transient_attempts INTEGER NOT NULL DEFAULT 0,
                last_error TEXT,
                last_error_class TEXT,
                next_attempt_at INTEGER NOT NULL DEFAULT 0,
                created_at INTEGER NOT NULL,
                receipt_file TEXT UNIQUE,
                receipt_type TEXT,
                receipt_size INTEGER,
                receipt_sha256 TEXT
            );
            CREATE INDEX jobs_by_expense ON jobs (transaction_id, seq);
            CREATE INDEX jobs_ready ON jobs (state, next_attempt_at, seq);

            -- Counts per state, kept by triggers in the same transaction as
            -- every change, so a summary never scans the outbox.
            CREATE TABLE job_counts (state TEXT PRIMARY KEY, n INTEGER NOT NULL);
            INSERT INTO job_counts (state, n) VALUES ('queued', 0), ('sending', 0), ('needs_attention', 0);
            CREATE TRIGGER jobs_count_insert AFTER INSERT ON jobs BEGIN
                UPDATE job_counts SET n = n + 1 WHERE state = NEW.state;
            END;
            CREATE TRIGGER jobs_count_delete AFTER DELETE ON jobs BEGIN
                UPDATE job_counts SET n = n - 1 WHERE state = OLD.state;
            END;
            CREATE TRIGGER jobs_count_update AFTER UPDATE OF state ON jobs WHEN OLD.state != NEW.state BEGIN
                UPDATE job_counts SET n = n - 1 WHERE state = OLD.state;
                UPDATE job_counts SET n = n + 1 WHERE state = NEW.state;
            END;

            -- The cache: a disposable projection of the server's expenses.
            CREATE TABLE expenses (
                transaction_id TEXT PRIMARY KEY NOT NULL,
                client_id TEXT NOT NULL,
                merchant TEXT, amount TEXT, currency TEXT, date TEXT,
                category TEXT, comment TEXT, tax_tag TEXT,
                receipt_url TEXT,
                assigned INTEGER NOT NULL DEFAULT 0,
                version INTEGER NOT NULL,
                created_at TEXT NOT NULL,
                updated_at TEXT NOT NULL,
                deleted INTEGER NOT NULL DEFAULT 0,
                conflict INTEGER NOT NULL DEFAULT 0,
                conflicts TEXT NOT NULL DEFAULT '{}',
                stored_at INTEGER NOT NULL
            );
            CREATE INDEX expenses_by_client ON expenses (client_id);
            """),
    ]
}
