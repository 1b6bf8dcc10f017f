import Postgres

/// The server's schema in PostgreSQL, one migration per step. The server
/// migrates at start (and `expense-server migrate`), under an advisory
/// lock so that processes starting together take turns.
enum PostgresSchema {
    /// The advisory lock migrations take (any constant the server's other
    /// locks, hashes of idempotency keys, are unlikely to meet).
    static let migrationLock: Int64 = 0x6578_7065_6e73_6501
    /// The first key of the two-key advisory locks that number a user's
    /// changes (the second is the user's id). Two-key locks are a key space
    /// apart from the one-key locks of migrations and claims.
    static let changeLockSpace: Int32 = 0x4558_5045

    static let migrations: [Migration] = [
        Migration(version: 1, sql: """
            CREATE TABLE users (
                id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
                name text NOT NULL UNIQUE,
                -- SHA-256 (hex) of the bearer token; the token itself is never stored.
                token_hash text NOT NULL UNIQUE,
                created_at text NOT NULL
            );
            -- Receipt bytes, in chunks of at most 256 KiB, written in the
            -- transaction that points an expense at them.
            CREATE TABLE receipts (
                id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
                size bigint NOT NULL
            );
            CREATE TABLE receipt_chunks (
                receipt_id bigint NOT NULL REFERENCES receipts (id) ON DELETE CASCADE,
                seq integer NOT NULL,
                bytes bytea NOT NULL,
                PRIMARY KEY (receipt_id, seq)
            );
            -- Images and PDFs are compressed already: store them as they are.
            ALTER TABLE receipt_chunks ALTER COLUMN bytes SET STORAGE EXTERNAL;
            CREATE TABLE expenses (
                id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
                -- The only arbiter of duplicates (contract.md, "Identity").
                transaction_id text NOT NULL UNIQUE,
                user_id bigint NOT NULL REFERENCES users (id),
                client_id text NOT NULL,
                merchant text, amount text, currency text, date text,
                category text, comment text, tax_tag text,
                device_id text, device_seq bigint, created_at_device text,
                receipt_id bigint REFERENCES receipts (id),
                receipt_type text, receipt_sha256 text, receipt_size bigint,
                assigned boolean NOT NULL DEFAULT false,
                version integer NOT NULL,
                created_at text NOT NULL,
                updated_at text NOT NULL,
                deleted boolean NOT NULL DEFAULT false,
                -- JSON: field -> {"server": ..., "client": ...}
                conflicts text NOT NULL DEFAULT '{}',
                -- Position in the user's change feed (GET /v1/expenses?since=),
                -- one past the user's last, under the user's advisory lock.
                change_seq bigint NOT NULL,
                UNIQUE (user_id, change_seq)
            );
            CREATE INDEX expenses_by_receipt ON expenses (receipt_id);
            CREATE TABLE idempotency_keys (
                user_id bigint NOT NULL REFERENCES users (id),
                key text NOT NULL,
                method text NOT NULL,
                path text NOT NULL,
                -- SHA-256 (hex) over method, path and the SHA-256 of the canonical body.
                fingerprint text NOT NULL,
                status integer NOT NULL,
                transaction_id text NOT NULL,
                created_at_ms bigint NOT NULL,
                PRIMARY KEY (user_id, key)
            );
            CREATE INDEX idempotency_keys_by_age ON idempotency_keys (created_at_ms);
            """),
        Migration(version: 2, sql: """
            -- Roles and token lifecycle: a user is active, revoked (its token
            -- refused until rotated) or deactivated (kept for its expenses).
            ALTER TABLE users ADD COLUMN is_admin boolean NOT NULL DEFAULT false;
            ALTER TABLE users ADD COLUMN state text NOT NULL DEFAULT 'active'
                CHECK (state IN ('active', 'revoked', 'deactivated'));
            -- Signed-in browsers. A session holds the hash of the token it was
            -- opened with: a rotated or revoked token ends it at the next request.
            CREATE TABLE sessions (
                id_hash text PRIMARY KEY,
                user_id bigint NOT NULL REFERENCES users (id),
                token_hash text NOT NULL,
                csrf text NOT NULL,
                expires_at_ms bigint NOT NULL
            );
            CREATE INDEX sessions_by_expiry ON sessions (expires_at_ms);
            -- The web list's order and filters, per user: a page deep in the
            -- list is found in the index alone.
            CREATE INDEX expenses_by_user_date ON expenses (user_id, deleted, date, id);
            -- Each user's count and sum (minor units) of the expenses not
            -- deleted, per currency: the list's totals without reading every
            -- row. Kept by a trigger, in the transaction of each write (one
            -- user's writes are already serialized by the user's change lock).
            CREATE TABLE expense_totals (
                user_id bigint NOT NULL REFERENCES users (id),
                currency text NOT NULL,
                count bigint NOT NULL,
                minor_units bigint NOT NULL,
                PRIMARY KEY (user_id, currency)
            );
            INSERT INTO expense_totals
                SELECT user_id, coalesce(currency, ''), count(*), coalesce(sum(CAST(replace(amount, '.', '') AS bigint)), 0)
                FROM expenses WHERE NOT deleted GROUP BY 1, 2;
            CREATE FUNCTION expense_totals_record() RETURNS trigger LANGUAGE plpgsql AS $$
            BEGIN
                IF TG_OP = 'UPDATE' AND NOT OLD.deleted THEN
                    UPDATE expense_totals SET count = count - 1, minor_units = minor_units - coalesce(CAST(replace(OLD.amount, '.', '') AS bigint), 0)
                        WHERE user_id = OLD.user_id AND currency = coalesce(OLD.currency, '');
                END IF;
                IF NOT NEW.deleted THEN
                    INSERT INTO expense_totals VALUES (NEW.user_id, coalesce(NEW.currency, ''), 1, coalesce(CAST(replace(NEW.amount, '.', '') AS bigint), 0))
                        ON CONFLICT (user_id, currency) DO UPDATE
                        SET count = expense_totals.count + 1, minor_units = expense_totals.minor_units + excluded.minor_units;
                END IF;
                RETURN NULL;
            END $$;
            CREATE TRIGGER expense_totals_on_insert AFTER INSERT ON expenses FOR EACH ROW EXECUTE FUNCTION expense_totals_record();
            CREATE TRIGGER expense_totals_on_update AFTER UPDATE OF amount, currency, deleted ON expenses
                FOR EACH ROW EXECUTE FUNCTION expense_totals_record();
            -- Every version of every expense, written by the transaction that
            -- makes it (a trigger: no write path can forget it).
            CREATE TABLE expense_versions (
                expense_id bigint NOT NULL REFERENCES expenses (id),
                version integer NOT NULL,
                merchant text, amount text, currency text, date text,
                category text, comment text, tax_tag text,
                receipt_sha256 text,
                deleted boolean NOT NULL,
                conflicts text NOT NULL,
                at text NOT NULL,
                PRIMARY KEY (expense_id, version)
            );
            INSERT INTO expense_versions
                SELECT id, version, merchant, amount, currency, date, category, comment, tax_tag, receipt_sha256, deleted, conflicts, updated_at
                FROM expenses;
            CREATE FUNCTION expense_versions_record() RETURNS trigger LANGUAGE plpgsql AS $$
            BEGIN
                INSERT INTO expense_versions VALUES (NEW.id, NEW.version, NEW.merchant, NEW.amount, NEW.currency, NEW.date,
                    NEW.category, NEW.comment, NEW.tax_tag, NEW.receipt_sha256, NEW.deleted, NEW.conflicts, NEW.updated_at)
                ON CONFLICT (expense_id, version) DO NOTHING;
                RETURN NULL;
            END $$;
            CREATE TRIGGER expense_versions_on_insert AFTER INSERT ON expenses FOR EACH ROW EXECUTE FUNCTION expense_versions_record();
            CREATE TRIGGER expense_versions_on_update AFTER UPDATE OF version ON expenses
                FOR EACH ROW WHEN (NEW.version IS DISTINCT FROM OLD.version) EXECUTE FUNCTION expense_versions_record();
            """),
        Migration(version: 3, sql: """
            -- Resumable receipt uploads (contract.md, "Resumable uploads"):
            -- one per (user, Idempotency-Key), its bytes in parts of at most
            -- 1 MiB, each part written by the transaction that moves the offset.
            CREATE TABLE uploads (
                id text PRIMARY KEY,
                user_id bigint NOT NULL REFERENCES users (id),
                idem_key text NOT NULL,
                transaction_id text NOT NULL,
                content_type text NOT NULL,
                length bigint NOT NULL,
                sha256 text NOT NULL,
                upload_offset bigint NOT NULL DEFAULT 0,
                touched_at_ms bigint NOT NULL,
                UNIQUE (user_id, idem_key)
            );
            CREATE INDEX uploads_by_age ON uploads (touched_at_ms);
            CREATE TABLE upload_parts (
                upload_id text NOT NULL REFERENCES uploads (id) ON DELETE CASCADE,
                start bigint NOT NULL,
                bytes bytea NOT NULL,
                PRIMARY KEY (upload_id, start)
            );
            ALTER TABLE upload_parts ALTER COLUMN bytes SET STORAGE EXTERNAL;
            """),
    ]

    /// The latest version this program knows.
    static var version: Int { migrations.map(\.version).max() ?? 0 }
}
