import SQLite

/// The server's database schema, one migration per step.
enum Schema {
    static let migrations: [Migration] = [
        Migration(version: 1, sql: """
            CREATE TABLE users (
                id INTEGER PRIMARY KEY,
                name TEXT NOT NULL UNIQUE,
                -- SHA-256 (hex) of the bearer token; the token itself is never stored.
                token_hash TEXT NOT NULL UNIQUE,
                created_at TEXT NOT NULL
            );
            CREATE TABLE expenses (
                id INTEGER PRIMARY KEY,
                -- The only arbiter of duplicates (contract.md, "Identity").
                transaction_id TEXT NOT NULL UNIQUE,
                user_id INTEGER NOT NULL REFERENCES users (id),
                client_id TEXT NOT NULL,
                merchant TEXT, amount TEXT, currency TEXT, date TEXT,
                category TEXT, comment TEXT, tax_tag TEXT,
                device_id TEXT, device_seq INTEGER, created_at_device TEXT,
                -- A file name under receipts/, and what was stored there.
                receipt_file TEXT, receipt_type TEXT, receipt_sha256 TEXT, receipt_size INTEGER,
                assigned INTEGER NOT NULL DEFAULT 0,
                version INTEGER NOT NULL,
                created_at TEXT NOT NULL,
                updated_at TEXT NOT NULL,
                deleted INTEGER NOT NULL DEFAULT 0,
                -- JSON: field -> {"server": ..., "client": ...}
                conflicts TEXT NOT NULL DEFAULT '{}',
                -- Position in the change feed (GET /v1/expenses?since=).
                change_seq INTEGER NOT NULL UNIQUE
            );
            CREATE INDEX expenses_by_user_change ON expenses (user_id, change_seq);
            CREATE TABLE idempotency_keys (
                user_id INTEGER NOT NULL REFERENCES users (id),
                key TEXT NOT NULL,
                method TEXT NOT NULL,
                path TEXT NOT NULL,
                -- SHA-256 (hex) over method, path and the SHA-256 of the canonical body.
                fingerprint TEXT NOT NULL,
                status INTEGER NOT NULL,
                transaction_id TEXT NOT NULL,
                created_at_ms INTEGER NOT NULL,
                PRIMARY KEY (user_id, key)
            ) WITHOUT ROWID;
            CREATE INDEX idempotency_keys_by_age ON idempotency_keys (created_at_ms);
            """),
        Migration(version: 2, sql: """
            -- Roles and token lifecycle: a user is active, revoked (its token
            -- refused until rotated) or deactivated (kept for its expenses).
            ALTER TABLE users ADD COLUMN is_admin INTEGER NOT NULL DEFAULT 0;
            ALTER TABLE users ADD COLUMN state TEXT NOT NULL DEFAULT 'active'
                CHECK (state IN ('active', 'revoked', 'deactivated'));
            -- Signed-in browsers. A session holds the hash of the token it was
            -- opened with: a rotated or revoked token ends it at the next request.
            CREATE TABLE sessions (
                id_hash TEXT PRIMARY KEY,
                user_id INTEGER NOT NULL REFERENCES users (id),
                token_hash TEXT NOT NULL,
                csrf TEXT NOT NULL,
                expires_at_ms INTEGER NOT NULL
            ) WITHOUT ROWID;
            CREATE INDEX sessions_by_expiry ON sessions (expires_at_ms);
            -- The web list's order and filters, per user: a page deep in the
            -- list is found in the index alone.
            CREATE INDEX expenses_by_user_date ON expenses (user_id, deleted, date, id);
            -- Each user's count and sum (minor units) of the expenses not
            -- deleted, per currency: the list's totals without reading every
            -- row. Kept by triggers, in the transaction of each write.
            CREATE TABLE expense_totals (
                user_id INTEGER NOT NULL REFERENCES users (id),
                currency TEXT NOT NULL,
                count INTEGER NOT NULL,
                minor_units INTEGER NOT NULL,
                PRIMARY KEY (user_id, currency)
            ) WITHOUT ROWID;
            INSERT INTO expense_totals
                SELECT user_id, coalesce(currency, ''), count(*), coalesce(sum(CAST(replace(amount, '.', '') AS INTEGER)), 0)
                FROM expenses WHERE deleted = 0 GROUP BY 1, 2;
            CREATE TRIGGER expense_totals_on_insert AFTER INSERT ON expenses WHEN NEW.deleted = 0 BEGIN
                INSERT INTO expense_totals VALUES (NEW.user_id, coalesce(NEW.currency, ''), 1, coalesce(CAST(replace(NEW.amount, '.', '') AS INTEGER), 0))
                    ON CONFLICT (user_id, currency) DO UPDATE SET count = count + 1, minor_units = minor_units + excluded.minor_units;
            END;
            CREATE TRIGGER expense_totals_on_update AFTER UPDATE OF amount, currency, deleted ON expenses BEGIN
                UPDATE expense_totals SET count = count - 1, minor_units = minor_units - coalesce(CAST(replace(OLD.amount, '.', '') AS INTEGER), 0)
                    WHERE OLD.deleted = 0 AND user_id = OLD.user_id AND currency = coalesce(OLD.currency, '');
                INSERT INTO expense_totals
                    SELECT NEW.user_id, coalesce(NEW.currency, ''), 1, coalesce(CAST(replace(NEW.amount, '.', '') AS INTEGER), 0) WHERE NEW.deleted = 0
                    ON CONFLICT (user_id, currency) DO UPDATE SET count = count + 1, minor_units = minor_units + excluded.minor_units;
            END;
            -- Every version of every expense, written by the transaction that
            -- makes it (a trigger: no write path can forget it).
            CREATE TABLE expense_versions (
                expense_id INTEGER NOT NULL REFERENCES expenses (id),
                version INTEGER NOT NULL,
                merchant TEXT, amount TEXT, currency TEXT, date TEXT,
                category TEXT, comment TEXT, tax_tag TEXT,
                receipt_sha256 TEXT,
                deleted INTEGER NOT NULL,
                conflicts TEXT NOT NULL,
                at TEXT NOT NULL,
                PRIMARY KEY (expense_id, version)
            ) WITHOUT ROWID;
            INSERT INTO expense_versions
                SELECT id, version, merchant, amount, currency, date, category, comment, tax_tag, receipt_sha256, deleted, conflicts, updated_at
                FROM expenses;
            CREATE TRIGGER expense_versions_on_insert AFTER INSERT ON expenses BEGIN
                INSERT OR REPLACE INTO expense_versions VALUES (NEW.id, NEW.version, NEW.merchant, NEW.amount, NEW.currency, NEW.date,
                    NEW.category, NEW.comment, NEW.tax_tag, NEW.receipt_sha256, NEW.deleted, NEW.conflicts, NEW.updated_at);
            END;
            CREATE TRIGGER expense_versions_on_update AFTER UPDATE OF version ON expenses BEGIN
                INSERT OR REPLACE INTO expense_versions VALUES (NEW.id, NEW.version, NEW.merchant, NEW.amount, NEW.currency, NEW.date,
                    NEW.category, NEW.comment, NEW.tax_tag, NEW.receipt_sha256, NEW.deleted, NEW.conflicts, NEW.updated_at);
            END;
            """),
        Migration(version: 3, sql: """
            -- Resumable receipt uploads (contract.md, "Resumable uploads"):
            -- one per (user, Idempotency-Key), its bytes in parts of at most
            -- 1 MiB, each part written by the transaction that moves the offset.
            CREATE TABLE uploads (
                id TEXT PRIMARY KEY,
                user_id INTEGER NOT NULL REFERENCES users (id),
                idem_key TEXT NOT NULL,
                transaction_id TEXT NOT NULL,
                content_type TEXT NOT NULL,
                length INTEGER NOT NULL,
                sha256 TEXT NOT NULL,
                upload_offset INTEGER NOT NULL DEFAULT 0,
                touched_at_ms INTEGER NOT NULL,
                UNIQUE (user_id, idem_key)
            );
            CREATE INDEX uploads_by_age ON uploads (touched_at_ms);
            CREATE TABLE upload_parts (
                upload_id TEXT NOT NULL REFERENCES uploads (id) ON DELETE CASCADE,
                start INTEGER NOT NULL,
                bytes BLOB NOT NULL,
                PRIMARY KEY (upload_id, start)
            );
            """),
    ]

    /// Pragmas for every connection: WAL, and commits that are on disk
    /// when they return (`synchronous=FULL`).
    static func configure(_ connection: Connection) throws {
        try connection.execute("PRAGMA journal_mode = WAL")
        try connection.execute("PRAGMA synchronous = FULL")
        try connection.execute("PRAGMA foreign_keys = ON")
        // The indexes on the transaction id and the idempotency key are
        // random by nature: a cache that holds them spares the writer reads.
        try connection.execute("PRAGMA cache_size = -65536")
        connection.setBusyTimeout(milliseconds: 5000)
    }
}
