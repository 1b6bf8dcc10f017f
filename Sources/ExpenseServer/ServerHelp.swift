import ExpenseCore

/// `expense-server`'s options, each written once: the parser knows an
/// option by these tables (``CommandLineParser``), and `--help` lists
/// them, laid out like argument-parser's.
enum ServerHelp {
    /// Every subcommand takes these.
    static let storage = OptionTable([
        CommandOption("--data-dir", valueName: "DIR", help: """
            Where the SQLite database and receipts live (created if missing); with
            PostgreSQL, where uploads are staged while they arrive (default: a
            private temporary folder).
            """),
        CommandOption("--database", valueName: "URL|PATH", help: """
            A postgresql:// URL (no password in it: use a password file), or the
            path of the SQLite database (default: DIR/expense-server.db).
            """),
    ])

    static let serve = OptionTable([
        CommandOption("--database-pool", valueName: "N", help: "Connections to PostgreSQL per process (default: 16)."),
        CommandOption("--listen", valueName: "HOST:PORT", help: """
            Address to listen on (default: 127.0.0.1:8080). Port 0 picks a free
            port. Ignored when systemd passes a socket (LISTEN_FDS).
            """),
        CommandOption("--receipt-max-bytes", valueName: "N", help: "Largest receipt accepted (default: 26214400, 25 MiB)."),
        CommandOption("--upload-expiry", valueName: "SECONDS", help: """
            Seconds a resumable upload is kept after its last append (default:
            86400); an expired one is removed with its bytes.
            """),
        CommandOption("--max-connections", valueName: "N", help: """
            Connections served at once (default: 256). At the limit, the one that
            has waited longest for its request head makes room for the new one.
            """),
        CommandOption("--max-connections-per-ip", valueName: "N", help: "Connections from one address at once (default: 0, no limit)."),
        CommandOption("--connection-timeout", valueName: "S", help: "Seconds a silent connection stays open (default: 30)."),
        CommandOption("--header-timeout", valueName: "S", help: """
            Seconds a request line and headers may take to arrive in full, from
            the connection's opening or the end of its previous exchange (default: 10).
            """),
        CommandOption("--request-timeout", valueName: "S", help: "Seconds a request body may take to arrive (default: 300)."),
        CommandOption("--idempotency-retention-hours", valueName: "H", help: "Hours idempotency keys are remembered (default: 48, minimum: 24)."),
        CommandOption("--tls-cert", valueName: "FILE", help: "Serve HTTPS with this PEM certificate (chain); with --tls-key."),
        CommandOption("--tls-key", valueName: "FILE", help: """
            The certificate's PEM private key, unencrypted. Both are read again
            on SIGHUP; connections open then finish with the old certificate.
            """),
    ])

    static let faults = OptionTable([
        CommandOption("--fault-drop-request", valueName: "P", help: "Close the connection before processing, with probability P."),
        CommandOption("--fault-drop-response", valueName: "P", help: "Process (commit), then close without answering, with probability P."),
        CommandOption("--fault-error-rate", valueName: "P", help: "Answer 503 with Retry-After without processing, with probability P."),
        CommandOption("--fault-delay-ms", valueName: "N", help: "Wait N milliseconds before processing each request."),
        CommandOption("--fault-seed", valueName: "S", help: "Seed of the fault generator (default: 1)."),
    ])

    /// `export`'s, described with the subcommand.
    static let export = OptionTable([
        CommandOption("--format", valueName: "csv|jsonl", help: "CSV (RFC 4180, the default) or JSON lines."),
        CommandOption("--since", valueName: "DATE", help: "Only expenses dated DATE (YYYY-MM-DD) or later."),
        CommandOption("--user", valueName: "NAME", help: "Only the expenses of the user NAME."),
        CommandOption("--base-url", valueName: "URL", help: "Receipt links as URL/expenses/ID/receipt, not the path alone\n(URL: http[s]://host[:port][/path])."),
    ])

    /// `user add`'s, described with the subcommand.
    static let userAdd = OptionTable([CommandOption("--admin", valueName: nil, help: "The user sees every user's expenses and manages users.")])

    static let general = OptionTable([CommandOption("-h, --help", valueName: nil, help: "Show this help.")])

    /// Help starts at column 26, as in expensectl; a left column of up to
    /// 23 characters keeps its help on the same line.
    static let layout = HelpLayout(column: 26, minimumGap: 1)

    static let subcommands: [(String, String)] = [
        ("serve", "Serve the API and the web interface (every path but /v1/ and /healthz)\nuntil SIGTERM or SIGINT."),
        ("user add NAME", "Create a user and print its bearer token (once; only a hash is kept).\nWith --admin, the user sees every user's expenses and manages users."),
        ("user list", "Print each user's name, creation time, role (admin, user) and state\n(active, revoked, deactivated), tab-separated."),
        ("user rotate NAME", "Give the user a new token and print it (once); the old one and its\nsessions stop working at once. A revoked user is active again."),
        ("user revoke NAME", "Refuse the user's token and sessions from now on (rotate gives a new one)."),
        ("user deactivate NAME", "Retire the user for good: no token works again; its expenses are kept,\nand admins still see them."),
        ("migrate", "Create or migrate the schema and print its version (serve does it too)."),
        ("backup DEST", "Copy SQLite data, while the server runs, into DEST: a new data directory\nto serve from. (For PostgreSQL use pg_dump.)"),
        ("export", "Write every expense (deleted ones left out), oldest date first, to\nstandard output, streamed from the database, as CSV (RFC 4180) or JSON lines."),
    ]

    static let text = """
        OVERVIEW: The reference expense backend: the HTTP API of docs/contract.md, stored in SQLite,
        or in PostgreSQL for several server processes that share one database.

        USAGE: expense-server serve --data-dir DIR [--listen HOST:PORT] [options]
               expense-server serve --database postgresql://... [--data-dir DIR] [options]
               expense-server user add NAME [--admin] (--data-dir DIR | --database URL)
               expense-server user list (--data-dir DIR | --database URL)
               expense-server user rotate NAME (--data-dir DIR | --database URL)
               expense-server user revoke NAME (--data-dir DIR | --database URL)
               expense-server user deactivate NAME (--data-dir DIR | --database URL)
               expense-server migrate (--data-dir DIR | --database URL)
               expense-server backup DEST --data-dir DIR [--database PATH]
               expense-server export [--format csv|jsonl] [--since DATE] [--user NAME] [--base-url URL] (--data-dir DIR | --database URL)

        SUBCOMMANDS:
        \(layout.rows(subcommands))
        STORAGE (every subcommand):
        \(storage.rendered(layout))
        OPTIONS (serve):
        \(serve.rendered(layout))
        FAULT INJECTION (serve; for tests, off by default, seeded and reproducible):
        \(faults.rendered(layout))
        OPTIONS (user add):
        \(userAdd.rendered(layout))
        OPTIONS (export):
        \(export.rendered(layout))
        OPTIONS:
        \(general.rendered(layout))
        Once serving, the server prints "expense-server: listening on HOST:PORT" to stderr and one
        access log line per request (docs/server.md). Exit status: 0 on success, 1 on failure, 64
        for a command line that cannot be run.
        """
}
