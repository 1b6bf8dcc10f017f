/// The listing index: one row per expense `list` shows, with the values it
/// shows (pending work folded over the cache, as ``ExpenseView/fold``
/// does), so that `list` filters, sorts and pages in SQL with indexes
/// instead of folding every expense in memory.
///
/// Triggers on `jobs` and `expenses` keep it in the transaction of every
/// change to either, whichever code path makes it: there is no second
/// write to forget. Since schema 15 an expense's first row is written by
/// the first read instead (``lazyMigration``): every reader of `listing`
/// goes through `Store.readListing`. The index only chooses the expenses and their order;
/// what each shows is folded again from its own rows (`Store.list`), and
/// `StoreListingTests` hold the two folds to the same answers.
///
/// Schema version 4 writes this SQL; it must not change once shipped (a
/// new migration replaces the triggers instead).
enum ListingSchema {
    static let migration = """
        CREATE TABLE listing (
            transaction_id TEXT PRIMARY KEY NOT NULL,
            -- whose expense it is, as its cache row or its jobs say (every
            -- list is confined to the caller's account scope)
            account TEXT NOT NULL,
            -- synced, queued, sending, needs_attention or deleting, as ExpenseView.State
            state TEXT NOT NULL,
            conflict INTEGER NOT NULL,
            merchant TEXT, amount TEXT, currency TEXT, date TEXT, category TEXT,
            -- the amount's value for sorting; its exact parts for totals: the
            -- signed integer part, the signed fraction digits as an integer,
            -- and how many fraction digits there are
            amount_value REAL, amount_units INTEGER, amount_fraction INTEGER, amount_digits INTEGER,
            -- milliseconds: the server's creation time once synced, the device's before
            added_at INTEGER NOT NULL
        ) WITHOUT ROWID;
        -- Synced expenses are the many and change seldom: one index per
        -- order, its key followed by the one that breaks ties, and one for
        -- each of the rare filters. Pending work is the few and changes with every
        -- add and answer: one index, so that an add writes two or three more
        -- pages, not ten. Each index's condition is the text the query uses
        -- (ListingQuery), which is how SQLite matches a partial index.
        -- Each holds, after its key, the columns the other filters read
        -- (state too, which SQLite does not take from the condition, and
        -- the account, which every list is confined to), so that walking it
        -- to the page's end reads no table row: a merchant matching one
        -- expense in 400 is found in the index alone. The account follows
        -- the key rather than leading it: a list of every account
        -- (--all-accounts) walks the same index in order, where one led by
        -- the account would sort every match first.
        CREATE INDEX listing_by_added ON listing (added_at, transaction_id, account, state, date, merchant, category) WHERE state = 'synced';
        CREATE INDEX listing_by_date ON listing (date, transaction_id, account, state, merchant, category) WHERE state = 'synced';
        CREATE INDEX listing_by_amount ON listing (amount_value, transaction_id, account, state, date, merchant, category) WHERE state = 'synced';
        CREATE INDEX listing_by_merchant ON listing (merchant COLLATE NOCASE, transaction_id, account, state, date, category) WHERE state = 'synced';
        CREATE INDEX listing_conflicts ON listing (added_at, account) WHERE conflict = 1 AND state = 'synced';
        CREATE INDEX listing_incomplete ON listing (added_at, account) WHERE \(incomplete) AND state = 'synced';
        -- Covering every column a page filters or sorts by: the pending half
        -- of a page is read from this index alone, with no lookup in the
        -- table per row (a fifth of the time with 10,000 pending).
        CREATE INDEX listing_pending ON listing (state, conflict, added_at, date, amount_value, amount, merchant, category, account)
            WHERE state != 'synced';

        \(jobInsertTrigger)
        \(jobUpdateTrigger)
        \(jobDeleteTrigger)
        CREATE TRIGGER listing_expense_insert AFTER INSERT ON expenses BEGIN \(refresh("NEW.transaction_id")) END;
        CREATE TRIGGER listing_expense_update AFTER UPDATE ON expenses BEGIN \(refresh("NEW.transaction_id")) END;
        CREATE TRIGGER listing_expense_delete AFTER DELETE ON expenses BEGIN \(refresh("OLD.transaction_id")) END;

        -- A database of an earlier version: every expense it holds.
        \(insert(from: "SELECT transaction_id AS t FROM expenses UNION SELECT transaction_id FROM jobs"));
        """

    /// The trigger of version 4 that refreshes an expense's row when one of
    /// its jobs is added (version 13 gives it the condition `NOT` ``newExpense``).
    static let jobInsertTrigger = "CREATE TRIGGER listing_job_insert AFTER INSERT ON jobs BEGIN \(refresh("NEW.transaction_id")) END;"

    /// The triggers of version 4 that refresh an expense's row when one of
    /// its jobs changes or goes (version 15 gives them the condition ``listed(_:)``).
    static let jobUpdateTrigger = "CREATE TRIGGER listing_job_update AFTER UPDATE OF state, payload ON jobs BEGIN \(refresh("NEW.transaction_id")) END;"
    static let jobDeleteTrigger = "CREATE TRIGGER listing_job_delete AFTER DELETE ON jobs BEGIN \(refresh("OLD.transaction_id")) END;"

    /// A job that is the first of an expense the device never had: a create
    /// with no other job and no cache row. Its row is its payload's fields
    /// alone, which is what the refresh would fold from it.
    static let newExpense = """
        NEW.kind = 'create' AND NOT EXISTS (SELECT 1 FROM expenses WHERE transaction_id = NEW.transaction_id)
            AND NOT EXISTS (SELECT 1 FROM jobs WHERE transaction_id = NEW.transaction_id AND seq != NEW.seq)
        """

    /// An upload queued beside an expense's other pending work: its row
    /// shows the expense pending already, and an upload changes none of its
    /// fields, nor its account or when it was added (both its first job's).
    static let uploadBesidePending = """
        NEW.kind = 'receipt' AND NEW.state = 'queued'
            AND EXISTS (SELECT 1 FROM listing WHERE transaction_id = NEW.transaction_id AND state != 'synced')
        """

    /// Schema version 13: the row of a new expense (every add) is written
    /// from its create alone, reading the payload once, instead of being
    /// folded from every job and the cache by the refresh (its eleven
    /// subqueries and twenty readings of the payload's JSON), and an upload
    /// queued with it (an add with a receipt) leaves the row as it is: an
    /// add's statement took 71 µs with the refresh, 49 µs with this, 19 µs
    /// with no listing (4,000 adds in one transaction). Every other job
    /// still refreshes. The payload is read as the store writes it
    /// (`JobPayload`: each field once, its key as it is): a payload with a
    /// field twice, or a key written with escapes, would be read otherwise
    /// than the refresh reads it.
    static let newExpenseMigration = """
        DROP TRIGGER listing_job_insert;
        CREATE TRIGGER listing_job_insert AFTER INSERT ON jobs WHEN NOT (\(newExpense)) AND NOT (\(uploadBesidePending))
        BEGIN \(refresh("NEW.transaction_id")) END;
        CREATE TRIGGER listing_new_expense AFTER INSERT ON jobs WHEN \(newExpense)
        BEGIN
            INSERT OR REPLACE INTO listing (transaction_id, account, state, conflict, merchant, amount, currency, date, category,
                                            amount_value, amount_units, amount_fraction, amount_digits, added_at)
            SELECT NEW.transaction_id, NEW.account,
                   CASE NEW.state WHEN 'needs_attention' THEN 'needs_attention' WHEN 'sending' THEN 'sending' ELSE 'queued' END, 0,
                   f.merchant, f.amount, f.currency, f.date, f.category, CAST(f.amount AS REAL),
                   -- The amount's parts as the refresh's UPDATE sets them (its
                   -- text is version 4's, which stays as shipped).
                   CASE WHEN f.amount IS NOT NULL THEN CAST(f.amount AS INTEGER) END,
                   CASE WHEN f.amount IS NULL THEN NULL WHEN instr(f.amount, '.') > 0
                        THEN CAST(substr(f.amount, instr(f.amount, '.') + 1) AS INTEGER) * (CASE WHEN f.amount LIKE '-%' THEN -1 ELSE 1 END)
                        ELSE 0 END,
                   CASE WHEN f.amount IS NULL THEN NULL WHEN instr(f.amount, '.') > 0 THEN length(f.amount) - instr(f.amount, '.') ELSE 0 END,
                   NEW.created_at
            -- One reading of the payload: a field shows when it is text (as
            -- the refresh reads it); a payload that is not JSON sets nothing.
            FROM (SELECT max(CASE WHEN key = 'merchant' AND type = 'text' THEN value END) AS merchant,
                         max(CASE WHEN key = 'amount' AND type = 'text' THEN value END) AS amount,
                         max(CASE WHEN key = 'currency' AND type = 'text' THEN value END) AS currency,
                         max(CASE WHEN key = 'date' AND type = 'text' THEN value END) AS date,
                         max(CASE WHEN key = 'category' AND type = 'text' THEN value END) AS category
                  FROM json_each(CASE WHEN json_valid(NEW.payload) AND json_type(NEW.payload, '$.fields') = 'object'
                                      THEN NEW.payload ELSE '{"fields":{}}' END, '$.fields')) f;
        END;
        """

    /// Schema version 15: an expense the device never had gets its row
    /// when it is first read, not when it is added. An add writes its job
    /// and nothing of the listing (the row and its entry in
    /// `listing_pending` were 2.55 of an add's 6.71 WAL pages), and while
    /// the expense has no row, neither the claim of its jobs nor their
    /// answers refresh it: an expense sent before anyone lists it costs
    /// the listing nothing until its answer caches it (the cache's
    /// triggers write its synced row, as before). A job changes the row of
    /// an expense that has one, or a cache row, at once, as before.
    ///
    /// What is left for later is found by the sequence: `listing_seq` in
    /// `counters` is the last job sequence number the listing has caught up
    /// with, and ``catchUp`` folds the expenses of every later job that
    /// have no row yet, before a read of the listing (``Store/list(_:in:)``,
    /// the known merchants). A row that exists is always current; one that
    /// is missing belongs to an expense with a job after `listing_seq`.
    static let lazyMigration = """
        DROP TRIGGER listing_new_expense;
        DROP TRIGGER listing_job_insert;
        DROP TRIGGER listing_job_update;
        DROP TRIGGER listing_job_delete;
        CREATE TRIGGER listing_job_insert AFTER INSERT ON jobs WHEN \(listed("NEW.transaction_id")) AND NOT (\(uploadBesidePending))
        BEGIN \(refresh("NEW.transaction_id")) END;
        CREATE TRIGGER listing_job_update AFTER UPDATE OF state, payload ON jobs WHEN \(listed("NEW.transaction_id"))
        BEGIN \(refresh("NEW.transaction_id")) END;
        CREATE TRIGGER listing_job_delete AFTER DELETE ON jobs WHEN \(listed("OLD.transaction_id"))
        BEGIN \(refresh("OLD.transaction_id")) END;
        -- Every row is current: the listing has caught up with every job so far.
        INSERT OR REPLACE INTO counters (name, value) SELECT 'listing_seq', value FROM counters WHERE name = 'seq';
        """

    /// An expense whose row the triggers keep at once: it has one, or a
    /// cache row (whose triggers would write it anyway).
    private static func listed(_ id: String) -> String {
        """
        (EXISTS (SELECT 1 FROM listing WHERE transaction_id = \(id)) OR EXISTS (SELECT 1 FROM expenses WHERE transaction_id = \(id)))
        """
    }

    /// Whether the listing has rows to catch up with (one row of one
    /// column, 1 or 0): a job after `listing_seq` whose expense has no row.
    /// Later jobs of listed expenses alone leave nothing to write.
    static let isBehind = "SELECT EXISTS (SELECT 1 FROM \(dueJobs))"

    /// The jobs (`j`) after `listing_seq` whose expense has no row yet.
    private static let dueJobs = """
        jobs j WHERE j.seq > (SELECT value FROM counters WHERE name = 'listing_seq')
                 AND NOT EXISTS (SELECT 1 FROM listing l WHERE l.transaction_id = j.transaction_id)
        """

    /// Writes the rows of the expenses with a job after `listing_seq` and
    /// no row yet, folded as the refresh folds them. The ids are gathered
    /// first: the insert's second statement finds them again, after the
    /// rows exist.
    static let catchUpRows = """
        CREATE TEMP TABLE IF NOT EXISTS listing_due (t TEXT PRIMARY KEY NOT NULL) WITHOUT ROWID;
        INSERT OR IGNORE INTO temp.listing_due (t) SELECT j.transaction_id FROM \(dueJobs);
        \(insert(from: "SELECT t FROM temp.listing_due"));
        DELETE FROM temp.listing_due;
        """

    /// ``catchUpRows``, then `listing_seq` moved to the last job.
    static let catchUp = catchUpRows + """
        UPDATE counters SET value = (SELECT value FROM counters WHERE name = 'seq') WHERE name = 'listing_seq';
        """

    /// An expense missing what an expense needs; the same text in the
    /// partial index and in the query, which is how SQLite matches them.
    static let incomplete = "(merchant IS NULL OR amount IS NULL OR date IS NULL)"

    /// The statements that bring one expense's row up to date.
    private static func refresh(_ id: String) -> String {
        "DELETE FROM listing WHERE transaction_id = \(id); \(insert(from: "SELECT \(id) AS t"));"
    }

    /// Inserts the rows of the expenses whose ids `ids` (a query of one
    /// column `t`) yields, those with something to show; then the amount's
    /// parts, which no index holds, so the second write touches the row alone.
    private static func insert(from ids: String) -> String {
        let fields = ["merchant", "amount", "currency", "date", "category"]
        return """
            INSERT INTO listing (transaction_id, account, state, conflict, \(fields.joined(separator: ", ")), amount_value, added_at)
            SELECT ids.t, \(account), \(state), coalesce(e.conflict, 0), \(fields.map(field).joined(separator: ", ")),
                   CAST(\(field("amount")) AS REAL), \(added)
            FROM (\(ids)) ids LEFT JOIN expenses e ON e.transaction_id = ids.t
            WHERE (e.transaction_id IS NOT NULL OR EXISTS (SELECT 1 FROM jobs j WHERE j.transaction_id = ids.t AND j.kind = 'create'))
              AND NOT (coalesce(e.deleted, 0) = 1 AND NOT EXISTS (SELECT 1 FROM jobs j WHERE j.transaction_id = ids.t));
            UPDATE listing SET amount_units = CAST(amount AS INTEGER),
                amount_digits = CASE WHEN instr(amount, '.') > 0 THEN length(amount) - instr(amount, '.') ELSE 0 END,
                amount_fraction = CASE WHEN instr(amount, '.') > 0
                    THEN CAST(substr(amount, instr(amount, '.') + 1) AS INTEGER) * (CASE WHEN amount LIKE '-%' THEN -1 ELSE 1 END)
                    ELSE 0 END
            WHERE transaction_id IN (\(ids)) AND amount IS NOT NULL
            """
    }

    /// Whose expense it is: its cache row's account, else its first job's,
    /// as ``Store/accountOf(_:)`` finds it for the jobs a change adds.
    private static let account = """
        coalesce(e.account, (SELECT j.account FROM jobs j WHERE j.transaction_id = ids.t ORDER BY j.seq LIMIT 1), '')
        """

    /// The state as ``ExpenseView/fold`` decides it.
    private static let state = """
        CASE WHEN EXISTS (SELECT 1 FROM jobs j WHERE j.transaction_id = ids.t AND j.state = 'needs_attention') THEN 'needs_attention'
             WHEN coalesce(e.deleted, 0) = 1 OR EXISTS (SELECT 1 FROM jobs j WHERE j.transaction_id = ids.t AND j.kind = 'delete') THEN 'deleting'
             WHEN EXISTS (SELECT 1 FROM jobs j WHERE j.transaction_id = ids.t AND j.state = 'sending') THEN 'sending'
             WHEN EXISTS (SELECT 1 FROM jobs j WHERE j.transaction_id = ids.t) THEN 'queued'
             ELSE 'synced' END
        """

    /// A field as it shows: the value of the last create or edit that sets
    /// or clears it (a clear is the blob x'00' until NULLIF, so that it is
    /// told apart from no job at all), else the cache's. A payload that is
    /// not JSON sets nothing, as `JobPayload.decode` reads it.
    private static func field(_ name: String) -> String {
        let type = "CASE WHEN json_valid(j.payload) THEN json_type(j.payload, '$.fields.\(name)') END"
        return """
            NULLIF(coalesce((SELECT CASE \(type) WHEN 'text' THEN json_extract(j.payload, '$.fields.\(name)') ELSE x'00' END
                             FROM jobs j WHERE j.transaction_id = ids.t AND j.kind IN ('create', 'edit') AND \(type) IN ('text', 'null')
                             ORDER BY j.seq DESC LIMIT 1), e.\(name)), x'00')
            """
    }

    /// When it was added, in milliseconds: the server's `created_at`
    /// (`…T09:15:02.123Z`) once cached, else the device's create job's.
    private static let added = """
        coalesce(strftime('%s', e.created_at) * 1000 + CAST(substr(strftime('%f', e.created_at), 4) AS INTEGER),
                 (SELECT min(j.created_at) FROM jobs j WHERE j.transaction_id = ids.t AND j.kind = 'create'), 0)
        """
}
