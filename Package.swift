// swift-tools-version:6.0
// The expensed package: the daemon, its client, and the reference server.
import PackageDescription

/// A `.systemLibrary` target for one C library installed from Debian.
func cLibrary(_ name: String, pkgConfig: String, apt: [String]) -> Target {
    .systemLibrary(name: name, path: "Sources/\(name)", pkgConfig: pkgConfig, providers: [.apt(apt)])
}

let package = Package(
    name: "expensed",
    products: [
        .executable(name: "expensed", targets: ["expensed"]),
        .executable(name: "expensed-decode", targets: ["expensed-decode"]),
        .executable(name: "expensectl", targets: ["expensectl"]),
        .executable(name: "expense-server", targets: ["expense-server"]),
    ],
    targets: [
        // C libraries, each behind its own module map.
        cLibrary("CSQLite", pkgConfig: "sqlite3", apt: ["libsqlite3-dev"]),
        cLibrary("CCurl", pkgConfig: "libcurl", apt: ["libcurl4-openssl-dev"]),
        cLibrary("CSystemd", pkgConfig: "libsystemd", apt: ["libsystemd-dev"]),
        cLibrary("CMicroHTTPD", pkgConfig: "libmicrohttpd", apt: ["libmicrohttpd-dev"]),
        cLibrary("CCrypto", pkgConfig: "libcrypto", apt: ["libssl-dev"]),
        cLibrary("CPQ", pkgConfig: "libpq", apt: ["libpq-dev"]),
        // The receipt decoder's libvips and libseccomp calls (variadic, GLib
        // types), in C. libvips's pkg-config flags carry -pthread, which
        // SwiftPM refuses from a system library: GLib's two include folders
        // (Debian's, from `pkg-config --cflags vips`) and the libraries are named here.
        // The reader's Tesseract (its C API) and poppler-glib (a PDF's text
        // layer; libvips reads PDFs through it already) are here too, with
        // poppler's cairo folder from `pkg-config --cflags poppler-glib`:
        // their headers only, as the reading mode loads them (reader.c).
        .target(name: "CDecoder",
                cSettings: [.unsafeFlags(["-I/usr/include/glib-2.0", "-I/usr/lib/x86_64-linux-gnu/glib-2.0/include",
                                          "-I/usr/include/poppler/glib", "-I/usr/include/cairo"])],
                linkerSettings: [.linkedLibrary("vips"), .linkedLibrary("gobject-2.0"), .linkedLibrary("glib-2.0"), .linkedLibrary("seccomp")]),
        // Socket and process calls that need _GNU_SOURCE or CMSG_* macros.
        .target(name: "CShims"),

        // One Swift wrapper per C module; the only importer of it.
        .target(name: "Posix", dependencies: ["CShims"]),
        .target(name: "SQLite", dependencies: ["CSQLite"]),
        .target(name: "Curl", dependencies: ["CCurl", "Posix"]),
        .target(name: "Systemd", dependencies: ["CSystemd", "Posix"]),
        .target(name: "HTTPD", dependencies: ["CMicroHTTPD", "Posix"]),
        .target(name: "Digest", dependencies: ["CCrypto"]),
        .target(name: "Postgres", dependencies: ["CPQ"]),

        // Domain: types, validation, policies. No I/O.
        .target(name: "ExpenseCore", dependencies: ["Digest"]),
        // The control socket's requests and answers, typed: encoded by the
        // daemon, decoded by expensectl. No I/O.
        .target(name: "ControlProtocol", dependencies: ["ExpenseCore"]),

        // The daemon, one module per subsystem (docs/architecture.md). Each
        // imports only what it needs: no subsystem imports a sibling but the
        // store, and ExpenseDaemon alone wires them.
        // What every subsystem uses: the log, fault points, blocking work.
        .target(name: "DaemonSupport", dependencies: ["ExpenseCore", "Posix", "Systemd"]),
        // The outbox and the cache in one SQLite database, and the receipt files.
        .target(name: "OutboxStore", dependencies: ["DaemonSupport", "ExpenseCore", "SQLite", "Posix", "Digest", "ReceiptReading"]),
        // Sending the outbox: passes, retries, refresh, the server's record.
        // It sees a backend only through its SyncBackend protocol: no HTTP here.
        .target(name: "SyncEngine", dependencies: ["DaemonSupport", "OutboxStore", "ExpenseCore", "Posix"]),
        // One module per backend behind the engine's seam; the only HTTP
        // code besides the Curl wrapper.
        .target(name: "ExpenseServerBackend", dependencies: ["SyncEngine", "OutboxStore", "DaemonSupport", "ExpenseCore", "Curl", "Digest", "Posix"],
                path: "Sources/Backends/ExpenseServerBackend"),
        .target(name: "IhatemoneyBackend", dependencies: ["SyncEngine", "DaemonSupport", "ExpenseCore", "Curl", "Digest", "Posix"],
                path: "Sources/Backends/IhatemoneyBackend"),
        .target(name: "FavaBackend", dependencies: ["SyncEngine", "DaemonSupport", "ExpenseCore", "Curl", "Posix"],
                path: "Sources/Backends/FavaBackend"),
        // The control socket's I/O: connections, framing, peer checks, limits,
        // watchers. It hands typed requests to the daemon and never touches
        // the store or the engine.
        .target(name: "ControlSocket", dependencies: ["ControlProtocol", "DaemonSupport", "ExpenseCore", "Posix"]),
        // The spool: a watched directory whose files become jobs in the store.
        // It tells the engine and the publisher only through SpoolEvents.
        .target(name: "SpoolIntake", dependencies: ["DaemonSupport", "OutboxStore", "ExpenseCore", "Digest", "Posix"]),
        // Wiring: configuration, lifecycle, watchdog, the op -> service table.
        .target(name: "ExpenseDaemon", dependencies: ["ControlProtocol", "ControlSocket", "DaemonSupport", "OutboxStore", "SpoolIntake",
                                                      "SyncEngine", "ExpenseServerBackend", "IhatemoneyBackend", "FavaBackend", "ExpenseCore", "Digest", "Posix", "Systemd",
                                                      "ReceiptCopy", "ReceiptReading"]),

        // The client's commands and the server, as libraries.
        .target(name: "ExpenseCtl", dependencies: ["ControlProtocol", "ExpenseCore", "Posix"]),
        // The server, by concern: storage behind one seam (ServerStorage) with
        // an engine per database; accounts; the HTTP API. Only the engines see
        // a database library; the API sees neither an engine nor a database;
        // ExpenseServer wires them from the command line.
        .target(name: "ServerStorage", dependencies: ["ExpenseCore", "Digest", "Posix"]),
        .target(name: "SQLiteStorage", dependencies: ["ServerStorage", "ExpenseCore", "Digest", "Posix", "SQLite"]),
        .target(name: "PostgresStorage", dependencies: ["ServerStorage", "ExpenseCore", "Digest", "Posix", "Postgres"]),
        .target(name: "ServerAccounts", dependencies: ["ServerStorage", "ExpenseCore", "Digest", "Posix"]),
        .target(name: "ServerAPI", dependencies: ["ServerStorage", "ServerAccounts", "ExpenseCore", "Digest", "Posix", "HTTPD", "Systemd"]),
        // The web interface, for people: beside the API (whose paths it hands
        // over), over the same seam; no engine, no database.
        .target(name: "ServerWeb", dependencies: ["ServerAPI", "ServerAccounts", "ServerStorage", "ExpenseCore", "Digest", "Posix", "HTTPD"]),
        .target(name: "ExpenseServer", dependencies: ["ServerWeb", "ServerAPI", "ServerAccounts", "ServerStorage", "SQLiteStorage", "PostgresStorage",
                                                     "ExpenseCore", "Posix", "HTTPD", "Systemd"]),

        // Reading a receipt's text into suggested fields: pure, no I/O.
        .target(name: "ReceiptReading", dependencies: ["ExpenseCore"]),
        // Thin executables.
        .target(name: "ReceiptCopy", dependencies: ["ExpenseCore", "Posix", "ReceiptReading"]),
        .executableTarget(name: "expensed", dependencies: ["ExpenseDaemon"]),
        // The sandboxed child that reads one untrusted receipt and writes its legible copy.
        .executableTarget(name: "expensed-decode", dependencies: ["CDecoder", "ReceiptCopy", "ReceiptReading", "ExpenseCore", "Posix"]),
        .executableTarget(name: "expensectl", dependencies: ["ExpenseCtl", "Posix"]),
        .executableTarget(name: "expense-server", dependencies: ["ExpenseServer", "Posix"]),
        // Load on a live expense-server (bench/README.md).
        .executableTarget(name: "bench-server", dependencies: ["ExpenseTestSupport", "Digest", "Postgres"], path: "bench/server"),

        // Benchmarks: print figures, assert nothing (bench/README.md).
        .executableTarget(name: "bench-daemon", dependencies: ["ControlProtocol", "Digest", "OutboxStore", "ExpenseCore", "ExpenseDaemon", "ExpenseTestSupport", "Posix", "SQLite"], path: "bench/daemon"),
        .executableTarget(name: "bench-list", dependencies: ["OutboxStore", "ExpenseCore", "ExpenseTestSupport", "Posix", "SQLite"], path: "bench/list"),
        .executableTarget(name: "bench-backends", dependencies: ["ExpenseCore", "ExpenseTestSupport", "Curl", "Digest", "Posix"], path: "bench/backends"),
        .executableTarget(name: "bench-spool", dependencies: ["ExpenseCore", "ExpenseTestSupport", "Posix"], path: "bench/spool"),
        .executableTarget(name: "bench-copy", dependencies: ["ExpenseCore", "ExpenseTestSupport", "Posix", "ReceiptCopy"], path: "bench/copy"),
        .executableTarget(name: "bench-read", dependencies: ["ExpenseCore", "ExpenseTestSupport", "Posix", "ReceiptCopy", "ReceiptReading", "SQLite"], path: "bench/read"),
        .executableTarget(name: "bench-upload", dependencies: ["ExpenseServerBackend", "OutboxStore", "SyncEngine", "ExpenseCore", "ExpenseTestSupport", "Digest", "Posix"], path: "bench/upload"),
        .executableTarget(name: "bench-receipt", dependencies: ["ExpenseCore", "ExpenseTestSupport", "Posix"], path: "bench/receipt"),
        .executableTarget(name: "bench-sync", dependencies: ["ExpenseCore", "ExpenseTestSupport", "Curl", "Digest", "Posix"], path: "bench/sync"),

        // Shared test helpers: temporary folders, child processes, raw sockets.
        .target(name: "ExpenseTestSupport", dependencies: ["TestProcess", "Posix", "ExpenseCore", "SQLite", "Postgres", "Digest", "ReceiptReading"],
                path: "Tests/ExpenseTestSupport"),
        // The test process ignores SIGPIPE, as the daemon and the server do (a C constructor, before any test).
        .target(name: "TestProcess", path: "Tests/TestProcess"),

        .testTarget(name: "ExpenseCoreTests", dependencies: ["ExpenseCore", "ExpenseTestSupport"]),
        .testTarget(name: "ControlProtocolTests", dependencies: ["ControlProtocol", "ExpenseCore"]),
        .testTarget(name: "WrapperTests", dependencies: ["Posix", "SQLite", "Postgres", "Digest", "Systemd", "Curl", "ExpenseTestSupport"]),
        .testTarget(name: "DaemonSupportTests", dependencies: ["DaemonSupport"]),
        .testTarget(name: "ControlSocketTests", dependencies: ["ControlSocket", "ControlProtocol", "DaemonSupport", "ExpenseCore", "ExpenseTestSupport", "Posix"]),
        .testTarget(name: "OutboxStoreTests", dependencies: ["OutboxStore", "ExpenseCore", "ExpenseTestSupport", "SQLite", "Posix", "Digest"]),
        .testTarget(name: "SyncEngineTests", dependencies: ["SyncEngine", "ExpenseCore", "ExpenseTestSupport"]),
        .testTarget(name: "ExpenseServerBackendTests", dependencies: ["ExpenseServerBackend", "SyncEngine", "ExpenseCore", "ExpenseTestSupport"]),
        .testTarget(name: "SpoolIntakeTests", dependencies: ["SpoolIntake", "DaemonSupport", "OutboxStore", "ExpenseCore", "ExpenseTestSupport",
                                                         "Posix", "SQLite"]),
        .testTarget(name: "ReceiptReadingTests", dependencies: ["ReceiptReading", "ExpenseCore"]),
        .testTarget(name: "ReceiptCopyTests", dependencies: ["ReceiptCopy", "ReceiptReading", "ExpenseCore", "ExpenseTestSupport", "Posix"]),
        .testTarget(name: "ExpenseDaemonTests", dependencies: ["ExpenseDaemon", "ExpenseCore", "SyncEngine", "ReceiptReading"]),
        .testTarget(name: "ExpenseServerTests", dependencies: ["ExpenseServer", "ServerWeb", "ServerAPI", "ServerAccounts", "ServerStorage", "SQLiteStorage", "PostgresStorage",
                                                           "ExpenseTestSupport", "ExpenseCore", "SQLite", "Postgres", "Digest", "Posix", "HTTPD"]),
        // expensectl against a real daemon: help, exit statuses, --json shapes.
        .testTarget(name: "ExpenseCtlTests", dependencies: ["ExpenseCtl", "ExpenseCore", "ExpenseTestSupport"], exclude: ["Help"]),
        // The real backends (ihatemoney, fava) started on loopback, and the fault proxy.
        .testTarget(name: "BackendTests", dependencies: ["IhatemoneyBackend", "FavaBackend", "SyncEngine", "ExpenseTestSupport", "ExpenseCore", "Curl", "SQLite", "Digest"]),
        .testTarget(name: "EndToEndTests", dependencies: ["ExpenseCore", "ExpenseTestSupport", "SQLite", "Posix"]),
    ],
    swiftLanguageModes: [.v6]
)
