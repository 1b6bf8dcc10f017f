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
            -- seq is the per-device monotonic sequence, taken from
            -- counters('seq'), so it is never reused even after its row is
            -- gone. Every index costs each add another page write, so there
            -- are few: uuid is found through transaction_id (a create's id
            -- derives from it), and only jobs that have failed are indexed
            -- by their next attempt time.
            CREATE TABLE jobs (
                seq INTEGER PRIMARY KEY,
                uuid TEXT NOT NULL,
                kind TEXT NOT NULL CHECK (kind IN ('create', 'receipt', 'edit', 'delete')),
                transaction_id TEXT NOT NULL,
                payload TEXT NOT NULL,
                state TEXT NOT NULL DEFAULT 'queued' CHECK (state IN ('queued', 'sending', 'needs_attention')),
                -- rejections (toward needs_attention) and transient failures
                attempts INTEGER NOT NULL DEFAULT 0,
                transient_attempts INTEGER NOT NULL DEFAULT 0,
                -- times the request was handed to the network: a job sent
                -- even once is never rewritten (the server may hold it)
                sends INTEGER NOT NULL DEFAULT 0,
                last_error TEXT,
                last_error_class TEXT,
                next_attempt_at INTEGER NOT NULL DEFAULT 0,
                created_at INTEGER NOT NULL,
                receipt_file TEXT,
                receipt_type TEXT,
                receipt_size INTEGER
            );
            CREATE INDEX jobs_by_expense ON jobs (transaction_id, seq);
            CREATE INDEX jobs_retrying ON jobs (next_attempt_at) WHERE attempts > 0 OR transient_attempts > 0;

            -- The last sequence number and the count of jobs per state, on
            -- one page, kept by triggers in the same transaction as every
            -- change: a summary never scans the outbox.
            CREATE TABLE counters (name TEXT PRIMARY KEY, value INTEGER NOT NULL) WITHOUT ROWID;
            INSERT INTO counters (name, value) VALUES ('seq', 0), ('queued', 0), ('sending', 0), ('needs_attention', 0);
            CREATE TRIGGER jobs_count_insert AFTER INSERT ON jobs BEGIN
                UPDATE counters SET value = CASE WHEN name = 'seq' THEN max(value, NEW.seq) ELSE value + 1 END
                WHERE name IN ('seq', NEW.state);
            END;
            CREATE TRIGGER jobs_count_delete AFTER DELETE ON jobs BEGIN
                UPDATE counters SET value = value - 1 WHERE name = OLD.state;
            END;
            CREATE TRIGGER jobs_count_update AFTER UPDATE OF state ON jobs WHEN OLD.state != NEW.state BEGIN
                UPDATE counters SET value = value + (CASE name WHEN NEW.state THEN 1 ELSE -1 END)
                WHERE name IN (OLD.state, NEW.state);
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

            -- Spool files already turned into jobs but not yet removed from
            -- the spool: committed with the jobs, so a crash before the
            -- unlink never ingests a file twice. A file is known by its
            -- device and inode (unique while it exists) plus size and mtime.
            CREATE TABLE spool_intake (
                device INTEGER NOT NULL,
                inode INTEGER NOT NULL,
                size INTEGER NOT NULL,
                modified INTEGER NOT NULL,
                name BLOB NOT NULL,
                client_id TEXT NOT NULL,
                taken_at INTEGER NOT NULL,
                PRIMARY KEY (device, inode)
            );
            """),
        Migration(version: 2, sql: """
            -- A spool file taken is recognized after a crash only by what the
            -- daemon recorded itself, never by what a new file can share with
            -- it (an inode the file system handed out again, a size, an mtime
            -- a writer copied): the private name it is renamed to before its
            -- removal, chosen before the commit and unique to the intake (it
            -- is made of the job's client id); the SHA-256 of the bytes read;
            -- and the inode's change time (st_ctim), which no writer can set.
            -- Rows of schema 1 have neither digest nor change time: they
            -- prove nothing, and start-up takes their files again rather than
            -- remove one that may be new (docs/spool.md, crash safety). Their
            -- private name was '.expensed-taken-<inode>', unique per device.
            CREATE TABLE spool_intake_new (
                taken_name BLOB NOT NULL,
                name BLOB NOT NULL,
                device INTEGER NOT NULL,
                inode INTEGER NOT NULL,
                size INTEGER NOT NULL,
                modified INTEGER NOT NULL,
                changed INTEGER,
                digest BLOB,
                client_id TEXT NOT NULL,
                taken_at INTEGER NOT NULL,
                PRIMARY KEY (taken_name, device)
            );
            INSERT INTO spool_intake_new (taken_name, name, device, inode, size, modified, changed, digest, client_id, taken_at)
                SELECT CAST('.expensed-taken-' || inode AS BLOB), name, device, inode, size, modified, NULL, NULL, client_id, taken_at
                FROM spool_intake;
            DROP TABLE spool_intake;
            ALTER TABLE spool_intake_new RENAME TO spool_intake;
            """),
        Migration(version: 3, sql: """
            -- Accounts: every job and cached expense belongs to one, a local
            -- user's name or '' (the default account, token_file's). What
            -- was queued or cached before accounts existed is the default
            -- account's, sent with the token it was always sent with.
            ALTER TABLE jobs ADD COLUMN account TEXT NOT NULL DEFAULT '';
            ALTER TABLE expenses ADD COLUMN account TEXT NOT NULL DEFAULT '';

            -- The counts per state are kept per account too, on the same
            -- page ('acct/<account>/<state>'; no user name holds a '/'), so
            -- a person's status never scans the outbox either. An account's
            -- rows are made by the first job that needs them.
            DROP TRIGGER jobs_count_insert;
            DROP TRIGGER jobs_count_delete;
            DROP TRIGGER jobs_count_update;
            CREATE TRIGGER jobs_count_insert AFTER INSERT ON jobs BEGIN
                INSERT OR IGNORE INTO counters (name, value) VALUES ('acct/' || NEW.account || '/' || NEW.state, 0);
                UPDATE counters SET value = CASE WHEN name = 'seq' THEN max(value, NEW.seq) ELSE value + 1 END
                WHERE name IN ('seq', NEW.state, 'acct/' || NEW.account || '/' || NEW.state);
            END;
            CREATE TRIGGER jobs_count_delete AFTER DELETE ON jobs BEGIN
                UPDATE counters SET value = value - 1 WHERE name IN (OLD.state, 'acct/' || OLD.account || '/' || OLD.state);
            END;
            CREATE TRIGGER jobs_count_update AFTER UPDATE OF state ON jobs WHEN OLD.state != NEW.state BEGIN
                INSERT OR IGNORE INTO counters (name, value) VALUES ('acct/' || NEW.account || '/' || NEW.state, 0);
                UPDATE counters SET value = value + (CASE WHEN name IN (NEW.state, 'acct/' || NEW.account || '/' || NEW.state) THEN 1 ELSE -1 END)
                WHERE name IN (OLD.state, NEW.state, 'acct/' || OLD.account || '/' || OLD.state, 'acct/' || NEW.account || '/' || NEW.state);
            END;
            INSERT INTO counters (name, value) SELECT 'acct//' || state, count(*) FROM jobs GROUP BY state;
            -- The totals `stats` shows were all the default account's
            -- (transport failures are the server's, shown to every account).
            INSERT INTO counters (name, value)
                SELECT 'acct//' || name, value FROM counters
                WHERE (name LIKE 'failures.%' OR name LIKE 'latency.%') AND name != 'failures.transport';
            """),
        // `list` in SQL: the listing index and the triggers that keep it.
        Migration(version: 4, sql: ListingSchema.migration),
        Migration(version: 5, sql: """
            -- Where each expense came from, written in the transaction that
            -- queues it and kept after it syncs (the cache is the server's;
            -- this is the device's own knowledge). kind 'spool': name is the
            -- spool file's bytes (the receipt's, for a pair), sidecar the
            -- sidecar's, dropped_at its change time in ms; stem is set for a
            -- receipt taken without a sidecar, so a late one finds it by name
            -- within spool_sidecar_window (docs/spool.md). kind 'file': name
            -- is the path given to `add --receipt`, as UTF-8.
            CREATE TABLE expense_sources (
                transaction_id TEXT PRIMARY KEY NOT NULL,
                kind TEXT NOT NULL CHECK (kind IN ('spool', 'file')),
                name BLOB NOT NULL,
                sidecar BLOB,
                dropped_at INTEGER,
                stem BLOB,
                account TEXT NOT NULL,
                taken_at INTEGER NOT NULL
            );
            CREATE INDEX expense_sources_by_stem ON expense_sources (stem, taken_at) WHERE stem IS NOT NULL;
            """),
        Migration(version: 6, sql: """
            -- The SHA-256 of every receipt the daemon took, recorded in the
            -- transaction that queues its upload, so `receipt` can check the
            -- bytes it hands out: the daemon's copy while it waits, the
            -- server's (or the kept copy) once it is there. A row stays with
            -- its job until the job is gone; the upload that applies marks
            -- its row `applied` (the expense's receipt now) and the previous
            -- applied row goes. A job removed without applying (discarded,
            -- replaced by a newer file, its expense deleted) takes its row
            -- with it, so a digest never outlives both its job and its use.
            CREATE TABLE receipt_digests (
                job_uuid TEXT PRIMARY KEY NOT NULL,
                transaction_id TEXT NOT NULL,
                sha256 BLOB NOT NULL,
                applied INTEGER NOT NULL DEFAULT 0
            );
            CREATE INDEX receipt_digests_by_expense ON receipt_digests (transaction_id);
            CREATE TRIGGER receipt_digests_job_gone AFTER DELETE ON jobs WHEN OLD.kind = 'receipt' BEGIN
                DELETE FROM receipt_digests WHERE job_uuid = OLD.uuid AND applied = 0;
            END;
            """),
        Migration(version: 7, sql: """
            -- An account's oldest job (its status, and every watch of it)
            -- without scanning the outbox in seq order up to its first job,
            -- which behind another account's thousands of paused jobs is a
            -- scan of them all. Each add appends an entry at its account's
            -- end of the index (seq only grows): one more page written.
            CREATE INDEX jobs_by_account ON jobs (account, seq);
            """),
        Migration(version: 8, sql: """
            -- What a receipt upload sends (docs/receipts.md): made once per
            -- upload job after the job was acknowledged, by the sandboxed
            -- decoder. `file` NULL: the receipt goes as it is; otherwise the
            -- legible copy in receipts/, its kind, size and SHA-256. A job
            -- without a row is not sent yet.
            CREATE TABLE receipt_copies (
                job_uuid TEXT PRIMARY KEY,
                file TEXT,
                kind TEXT,
                size INTEGER,
                sha256 BLOB,
                made_at INTEGER NOT NULL
            );
            CREATE TRIGGER receipt_copies_job_gone AFTER DELETE ON jobs WHEN OLD.kind = 'receipt' BEGIN
                DELETE FROM receipt_copies WHERE job_uuid = OLD.uuid;
            END;
            -- The bytes as received of a receipt sent as a copy, kept in
            -- receipts/ beside the copy (`expensectl receipt --original`).
            CREATE TABLE receipt_originals (
                transaction_id TEXT NOT NULL,
                job_uuid TEXT PRIMARY KEY,
                file TEXT NOT NULL,
                kind TEXT NOT NULL,
                size INTEGER NOT NULL,
                sha256 BLOB,
                taken_at INTEGER NOT NULL
            );
            CREATE INDEX receipt_originals_by_expense ON receipt_originals (transaction_id);
            -- Uploads queued before copies were made go as they are.
            INSERT INTO receipt_copies (job_uuid, made_at) SELECT uuid, 0 FROM jobs WHERE kind = 'receipt';
            """),
        Migration(version: 9, sql: """
            -- The SHA-256 of the bytes as received of each expense's
            -- receipt, by account: a receipt taken again for another
            -- expense of the account is held as the same receipt
            -- (docs/receipts.md, "The same receipt twice"). A receipt
            -- replaced takes its row with it; the rows of expenses gone
            -- are passed over when matched.
            CREATE TABLE received_receipts (
                account TEXT NOT NULL,
                sha256 BLOB NOT NULL,
                transaction_id TEXT NOT NULL,
                taken_at INTEGER NOT NULL,
                PRIMARY KEY (account, sha256, transaction_id)
            ) WITHOUT ROWID;
            CREATE INDEX received_receipts_by_expense ON received_receipts (transaction_id);
            -- An original removed as receipt_original_retention says keeps
            -- its row, so that `receipt --original` says when it went.
            ALTER TABLE receipt_originals ADD COLUMN removed_at INTEGER;
            -- What was taken before: the digests recorded with uploads (a
            -- copy's, once applied, unless the original's is kept).
            INSERT OR IGNORE INTO received_receipts (account, sha256, transaction_id, taken_at)
                SELECT coalesce((SELECT account FROM expenses e WHERE e.transaction_id = o.transaction_id),
                                (SELECT account FROM jobs j WHERE j.transaction_id = o.transaction_id ORDER BY seq LIMIT 1), ''),
                       o.sha256, o.transaction_id, o.taken_at
                FROM receipt_originals o WHERE o.sha256 IS NOT NULL;
            INSERT OR IGNORE INTO received_receipts (account, sha256, transaction_id, taken_at)
                SELECT coalesce((SELECT account FROM expenses e WHERE e.transaction_id = d.transaction_id),
                                (SELECT account FROM jobs j WHERE j.transaction_id = d.transaction_id ORDER BY seq LIMIT 1), ''),
                       d.sha256, d.transaction_id, coalesce((SELECT created_at FROM jobs j WHERE j.uuid = d.job_uuid), 0)
                FROM receipt_digests d
                WHERE NOT EXISTS (SELECT 1 FROM receipt_originals o WHERE o.transaction_id = d.transaction_id);
            """),
        Migration(version: 10, sql: """
            -- The receipt bytes the outbox holds (docs/sync.md, "A bounded
            -- outbox"): every upload's bytes as received while its job is
            -- there, and the legible copy made of it, kept on the counters'
            -- page by triggers in the transaction of every change, so that
            -- an add checks outbox_max_receipt_bytes without a scan. An
            -- original kept after its upload (receipt_original_retention)
            -- is the user's choice, not the outbox's: its job is gone.
            -- Made so that running it again recounts and changes nothing else.
            INSERT OR REPLACE INTO counters (name, value) VALUES ('receipt_bytes',
                coalesce((SELECT sum(receipt_size) FROM jobs WHERE receipt_size IS NOT NULL), 0)
                + coalesce((SELECT sum(size) FROM receipt_copies WHERE file IS NOT NULL AND size IS NOT NULL), 0));
            CREATE TRIGGER IF NOT EXISTS jobs_receipt_bytes_insert AFTER INSERT ON jobs WHEN NEW.receipt_size IS NOT NULL BEGIN
                UPDATE counters SET value = value + NEW.receipt_size WHERE name = 'receipt_bytes';
            END;
            CREATE TRIGGER IF NOT EXISTS jobs_receipt_bytes_delete AFTER DELETE ON jobs WHEN OLD.receipt_size IS NOT NULL BEGIN
                UPDATE counters SET value = value - OLD.receipt_size WHERE name = 'receipt_bytes';
            END;
            CREATE TRIGGER IF NOT EXISTS copies_receipt_bytes_insert AFTER INSERT ON receipt_copies WHEN NEW.file IS NOT NULL AND NEW.size IS NOT NULL BEGIN
                UPDATE counters SET value = value + NEW.size WHERE name = 'receipt_bytes';
            END;
            CREATE TRIGGER IF NOT EXISTS copies_receipt_bytes_delete AFTER DELETE ON receipt_copies WHEN OLD.file IS NOT NULL AND OLD.size IS NOT NULL BEGIN
                UPDATE counters SET value = value - OLD.size WHERE name = 'receipt_bytes';
            END;
            """),
        Migration(version: 11, sql: """
            -- Receipts to read (docs/receipts.md, "Reading"): one row per
            -- upload whose bytes as received are still to be read, written
            -- in the transaction that queues the upload when reading is on,
            -- and removed in the transaction that applies the reading (or
            -- records that nothing came of it). A row left by a crash is
            -- read again at the next start. The upload waits for its row
            -- to go (the file is read before it may be sent and removed);
            -- a receipt-only expense's create waits for it too, at most
            -- reading_wait after queued_at. A job gone takes its row.
            CREATE TABLE receipt_readings (
                job_uuid TEXT PRIMARY KEY NOT NULL,
                transaction_id TEXT NOT NULL,
                account TEXT NOT NULL,
                receipt_only INTEGER NOT NULL,
                queued_at INTEGER NOT NULL
            );
            CREATE INDEX receipt_readings_by_expense ON receipt_readings (transaction_id);
            CREATE TRIGGER receipt_readings_job_gone AFTER DELETE ON jobs WHEN OLD.kind = 'receipt' BEGIN
                DELETE FROM receipt_readings WHERE job_uuid = OLD.uuid;
            END;
            -- The fields a reading filled, with its confidence and the value
            -- it wrote: shown as read while the expense still has that value;
            -- an edit of the field removes its row. Kept after the expense
            -- syncs (the device's knowledge, as expense_sources is).
            CREATE TABLE read_marks (
                transaction_id TEXT NOT NULL,
                field TEXT NOT NULL,
                value TEXT NOT NULL,
                confidence REAL NOT NULL,
                read_at INTEGER NOT NULL,
                PRIMARY KEY (transaction_id, field)
            ) WITHOUT ROWID;
            """),
        Migration(version: 12, sql: """
            -- The uploads whose legible copy is still to be made: the copier
            -- looks for them after every add, edit and spool take, and
            -- without this list that look read every job in the outbox (an
            -- add with 20,000 jobs queued took 4 times as long as one with
            -- none), or every upload still queued once copied. Kept by
            -- triggers, whichever code path makes the change: an upload
            -- joins it when queued, leaves it when its copy is recorded or
            -- the job goes. One that needs attention stays (a retry copies
            -- it again).
            CREATE TABLE copies_to_make (
                job_uuid TEXT PRIMARY KEY NOT NULL,
                transaction_id TEXT NOT NULL
            ) WITHOUT ROWID;
            INSERT INTO copies_to_make (job_uuid, transaction_id)
                SELECT uuid, transaction_id FROM jobs WHERE kind = 'receipt' AND receipt_file IS NOT NULL
                AND NOT EXISTS (SELECT 1 FROM receipt_copies WHERE job_uuid = jobs.uuid);
            CREATE TRIGGER copies_to_make_queued AFTER INSERT ON jobs WHEN NEW.kind = 'receipt' AND NEW.receipt_file IS NOT NULL BEGIN
                INSERT OR IGNORE INTO copies_to_make (job_uuid, transaction_id) VALUES (NEW.uuid, NEW.transaction_id);
            END;
            CREATE TRIGGER copies_to_make_made AFTER INSERT ON receipt_copies BEGIN
                DELETE FROM copies_to_make WHERE job_uuid = NEW.job_uuid;
            END;
            CREATE TRIGGER copies_to_make_job_gone AFTER DELETE ON jobs WHEN OLD.kind = 'receipt' BEGIN
                DELETE FROM copies_to_make WHERE job_uuid = OLD.uuid;
            END;
            """),
        Migration(version: 13, sql: ListingSchema.newExpenseMigration),
        Migration(version: 14, sql: """
            -- Resumable uploads (docs/sync.md, "Resumable uploads"): the
            -- upload a receipt job made on the server, and the bytes the
            -- server said it held, written before any byte is sent, so a
            -- cut, a timeout or a crash resumes there and never from 0.
            ALTER TABLE jobs ADD COLUMN upload_url TEXT;
            ALTER TABLE jobs ADD COLUMN upload_offset INTEGER;
            -- Uploads to cancel on the server: a job that made one went
            -- without completing it (its expense deleted, its receipt
            -- replaced, the job discarded). A trigger fills it, whichever
            -- code path removes the job; the drainer sends each DELETE.
            CREATE TABLE upload_cancellations (
                url TEXT PRIMARY KEY NOT NULL,
                account TEXT NOT NULL
            ) WITHOUT ROWID;
            CREATE TRIGGER upload_cancellations_job_gone AFTER DELETE ON jobs WHEN OLD.upload_url IS NOT NULL BEGIN
                INSERT OR IGNORE INTO upload_cancellations (url, account) VALUES (OLD.upload_url, OLD.account);
            END;
            """),
        Migration(version: 15, sql: ListingSchema.lazyMigration),
    ]
}
