/// `expense-server --help`, laid out like argument-parser's.
enum ServerHelp {
    static let text = """
        OVERVIEW: The reference expense backend: the HTTP API of docs/contract.md, stored in SQLite,
        or in PostgreSQL for several server processes that share one database.

        USAGE: expense-server serve --data-dir DIR [--listen HOST:PORT] [options]
               expense-server serve --database postgresql://... [--data-dir DIR] [options]
               expense-server user add NAME (--data-dir DIR | --database URL)
               expense-server user list (--data-dir DIR | --database URL)
               expense-server migrate (--data-dir DIR | --database URL)
               expense-server backup DEST --data-dir DIR [--database PATH]

        SUBCOMMANDS:
          serve                   Serve the API until SIGTERM or SIGINT.
          user add NAME           Create a user and print its bearer token (once; only a hash is kept).
          user list               Print each user's name and creation time.
          migrate                 Create or migrate the schema and print its version (serve does it too).
          backup DEST             Copy SQLite data, while the server runs, into DEST: a new data directory
                                  to serve from. (For PostgreSQL use pg_dump.)

        STORAGE (every subcommand):
          --data-dir DIR          Where the SQLite database and receipts live (created if missing); with
                                  PostgreSQL, where uploads are staged while they arrive (default: a
                                  private temporary folder).
          --database URL|PATH     A postgresql:// URL (no password in it: use a password file), or the
                                  path of the SQLite database (default: DIR/expense-server.db).

        OPTIONS (serve):
          --database-pool N       Connections to PostgreSQL per process (default: 16).
          --listen HOST:PORT      Address to listen on (default: 127.0.0.1:8080). Port 0 picks a free
                                  port. Ignored when systemd passes a socket (LISTEN_FDS).
          --receipt-max-bytes N   Largest receipt accepted (default: 26214400, 25 MiB).
          --max-connections N     Connections served at once (default: 256). At the limit, the one that
                                  has waited longest for its request head makes room for the new one.
          --max-connections-per-ip N
                                  Connections from one address at once (default: 0, no limit).
          --connection-timeout S  Seconds a silent connection stays open (default: 30).
          --header-timeout S      Seconds a request line and headers may take to arrive in full, from
                                  the connection's opening or the end of its previous exchange (default: 10).
          --request-timeout S     Seconds a request body may take to arrive (default: 300).
          --idempotency-retention-hours H
                                  Hours idempotency keys are remembered (default: 48, minimum: 24).

        FAULT INJECTION (serve; for tests, off by default, seeded and reproducible):
          --fault-drop-request P  Close the connection before processing, with probability P.
          --fault-drop-response P Process (commit), then close without answering, with probability P.
          --fault-error-rate P    Answer 503 with Retry-After without processing, with probability P.
          --fault-delay-ms N      Wait N milliseconds before processing each request.
          --fault-seed S          Seed of the fault generator (default: 1).

        OPTIONS:
          -h, --help              Show this help.

        Once serving, the server prints "expense-server: listening on HOST:PORT" to stderr and one
        access log line per request (docs/server.md). Exit status: 0 on success, 1 on failure, 64
        for a command line that cannot be run.
        """
}
