import ExpenseTestSupport
import Foundation
import Testing
@testable import ExpenseServer
@testable import ServerAPI

/// The executable's interface: subcommands, exit statuses, signals,
/// socket activation.
@Suite struct CommandLineTests {
    let binary = BuiltProducts.path("expense-server")

    @Test func help_describesEveryOption_andExits0() throws {
        let result = try runCommand(binary, ["--help"])
        #expect(result.status == 0)
        #expect(result.stdout.hasPrefix("OVERVIEW: "))
        for section in ["USAGE:", "SUBCOMMANDS:", "OPTIONS (serve):", "FAULT INJECTION"] {
            #expect(result.stdout.contains(section))
        }
        for option in CommandLineParser.serveOptions.spellings {
            #expect(result.stdout.contains(option), "\(option) is not in --help")
        }
        #expect(try runCommand(binary, ["serve", "-h"]).stdout == result.stdout)
    }

    /// docs/server.md's option tables and the man page's OPTIONS describe
    /// each option `--help` does, and name every subcommand.
    @Test func docsAndManPage_describeEveryOptionAndSubcommand() throws {
        let docs = try String(contentsOfFile: "\(BuiltProducts.packageRoot)/docs/server.md", encoding: .utf8)
        let man = try String(contentsOfFile: "\(BuiltProducts.packageRoot)/man/expense-server.8", encoding: .utf8)
        let help = try runCommand(binary, ["--help"]).stdout
        let tableRows = docs.split(separator: "\n").filter { $0.hasPrefix("| `--") }
        for option in CommandLineParser.serveOptions.spellings {
            #expect(tableRows.contains { $0.hasPrefix("| `\(option) ") || $0.hasPrefix("| `\(option)`") }, "\(option) has no row in docs/server.md's tables")
            // `.BI \-\-name " ARG"`: the name, then its argument.
            let roff = option.replacingOccurrences(of: "-", with: "\\-")
            #expect(man.split(separator: "\n").contains { $0.hasPrefix(".BI ") && $0.contains("\(roff) \"") }, "\(option) is not in the man page's OPTIONS")
        }
        for subcommand in ["serve", "user add", "user list", "user rotate", "user revoke", "user deactivate", "migrate", "backup", "export"] {
            #expect(help.contains("expense-server \(subcommand) "), "\(subcommand) is not in --help's USAGE")
            #expect(docs.contains("expense-server \(subcommand) "), "\(subcommand) is not in docs/server.md")
            #expect(man.contains(".B expense-server \(subcommand)"), "\(subcommand) is not in the man page's SYNOPSIS")
        }
    }

    /// Command lines that cannot be run, and what the message must name.
    static let unusable: [(arguments: [String], says: String)] = [
        ([], "missing subcommand"),
        (["frobnicate"], "unknown subcommand 'frobnicate'"),
        ([""], "unknown subcommand ''"),
        (["serve"], "--data-dir is required"),
        (["serve", "--data-dir"], "option '--data-dir' needs a value"),
        (["serve", "--data-dir", ""], "--data-dir must not be empty"),
        (["serve", "--data-dir="], "--data-dir must not be empty"),
        (["serve", "--data-dir", "--listen", "127.0.0.1:0"], "option '--data-dir' needs a value"),
        (["serve", "--data-dir", "DIR", "--data-dir", "DIR2"], "option '--data-dir' given twice"),
        (["serve", "--data-dir", "DIR", "--bogus", "1"], "unknown option '--bogus' for 'serve'"),
        (["serve", "--data-dir", "DIR", "--b\u{E4}\u{1B}[2Jd"], "unknown option '--b\u{E4}\\u{1B}[2Jd' for 'serve'"),
        (["serve", "--data-dir", "DIR", "extra"], "serve takes no arguments, got 'extra'"),
        (["serve", "--data-dir", "DIR", "-x"], "unknown option '-x' for 'serve'"),
        (["serve", "--data-dir", "DIR", "--listen", "localhost"], "--listen must be HOST:PORT"),
        (["serve", "--data-dir", "DIR", "--listen", "999.1.1.1:80"], "--listen must be HOST:PORT"),
        (["serve", "--data-dir", "DIR", "--listen", "127.0.0.1:65536"], "--listen must be HOST:PORT"),
        (["serve", "--data-dir", "DIR", "--listen", ""], "--listen must be HOST:PORT"),
        (["serve", "--data-dir", "DIR", "--receipt-max-bytes", "-1"], "--receipt-max-bytes must be a whole number from 1 to 1099511627776, got '-1'"),
        (["serve", "--data-dir", "DIR", "--receipt-max-bytes", "1e6"], "--receipt-max-bytes must be a whole number"),
        (["serve", "--data-dir", "DIR", "--receipt-max-bytes", "99999999999999999999"], "--receipt-max-bytes must be a whole number"),
        (["serve", "--data-dir", "DIR", "--max-connections", "0"], "--max-connections must be a whole number from 1 to 100000, got '0'"),
        (["serve", "--data-dir", "DIR", "--max-connections", "100001"], "--max-connections must be a whole number from 1 to 100000"),
        (["serve", "--data-dir", "DIR", "--max-connections", ""], "--max-connections must be a whole number from 1 to 100000, got ''"),
        (["serve", "--data-dir", "DIR", "--max-connections-per-ip", "-1"], "--max-connections-per-ip must be a whole number from 0 to 100000"),
        (["serve", "--data-dir", "DIR", "--connection-timeout", "0"], "--connection-timeout must be a whole number from 1 to 86400"),
        (["serve", "--data-dir", "DIR", "--connection-timeout", "abc"], "--connection-timeout must be a whole number from 1 to 86400, got 'abc'"),
        (["serve", "--data-dir", "DIR", "--header-timeout", "0"], "--header-timeout must be a whole number from 1 to 3600, got '0'"),
        (["serve", "--data-dir", "DIR", "--header-timeout", "3601"], "--header-timeout must be a whole number from 1 to 3600"),
        (["serve", "--data-dir", "DIR", "--header-timeout", "1.5"], "--header-timeout must be a whole number from 1 to 3600, got '1.5'"),
        (["serve", "--data-dir", "DIR", "--header-timeout="], "--header-timeout must be a whole number from 1 to 3600, got ''"),
        (["serve", "--data-dir", "DIR", "--request-timeout", "-5"], "--request-timeout must be a whole number from 1 to 86400"),
        (["serve", "--data-dir", "DIR", "--request-timeout", "86401"], "--request-timeout must be a whole number from 1 to 86400"),
        (["serve", "--data-dir", "DIR", "--idempotency-retention-hours", "1"], "--idempotency-retention-hours must be a whole number from 24 to 87600"),
        (["serve", "--data-dir", "DIR", "--fault-drop-request", "1.5"], "--fault-drop-request must be a probability from 0 to 1"),
        (["serve", "--data-dir", "DIR", "--fault-drop-response", "nan"], "--fault-drop-response must be a probability from 0 to 1, like 0.25, got 'nan'"),
        (["serve", "--data-dir", "DIR", "--fault-error-rate", "-0.1"], "--fault-error-rate must be a probability from 0 to 1"),
        (["serve", "--data-dir", "DIR", "--fault-error-rate", "0x1p-2"], "--fault-error-rate must be a probability from 0 to 1"),
        (["serve", "--data-dir", "DIR", "--fault-error-rate", ""], "--fault-error-rate must be a probability from 0 to 1"),
        (["serve", "--data-dir", "DIR", "--fault-delay-ms", "600001"], "--fault-delay-ms must be a whole number from 0 to 600000"),
        (["serve", "--data-dir", "DIR", "--fault-seed", "-1"], "--fault-seed must be a whole number from 0 to 18446744073709551615, got '-1'"),
        (["serve", "--data-dir", "DIR", "--fault-seed", "+1"], "--fault-seed must be a whole number"),
        (["serve", "--data-dir", "DIR", "--fault-seed", "18446744073709551616"], "--fault-seed must be a whole number"),
        (["serve", "--data-dir", "DIR", "--tls-cert", "c.pem"], "--tls-cert and --tls-key go together"),
        (["serve", "--data-dir", "DIR", "--tls-key", "k.pem"], "--tls-cert and --tls-key go together"),
        (["serve", "--data-dir", "DIR", "--tls-cert", "", "--tls-key", "k.pem"], "--tls-cert and --tls-key must not be empty"),
        (["serve", "--data-dir", "DIR", "--tls-cert=c.pem", "--tls-key="], "--tls-cert and --tls-key must not be empty"),
        (["serve", "--data-dir", "DIR", "--tls-cert"], "option '--tls-cert' needs a value"),
        (["serve", "--data-dir", "DIR", "--tls-cert", "a", "--tls-cert", "b", "--tls-key", "k"], "option '--tls-cert' given twice"),
        (["user"], "missing user subcommand"),
        (["user", "remove", "bob", "--data-dir", "DIR"], "unknown user subcommand 'remove'"),
        (["user", "add", "bob"], "--data-dir is required"),
        (["user", "add", "bob", "--data-dir", ""], "--data-dir must not be empty"),
        (["user", "add", "--data-dir", "DIR"], "user add takes exactly one NAME, got 0"),
        (["user", "add", "bob", "carol", "--data-dir", "DIR"], "user add takes exactly one NAME, got 2"),
        (["user", "add", "bob", "--data-dir", "DIR", "--listen", "127.0.0.1:0"], "unknown option '--listen' for 'user add'"),
        (["user", "add", "", "--data-dir", "DIR"], "invalid user name ''"),
        (["user", "add", "bob", "--admin=yes", "--data-dir", "DIR"], "option '--admin' takes no value"),
        (["user", "add", "bob", "--admin", "--admin", "--data-dir", "DIR"], "option '--admin' given twice"),
        (["user", "add", "--admin", "--data-dir", "DIR"], "user add takes exactly one NAME, got 0"),
        (["user", "add", "bob", "--data-dir", "--admin"], "option '--data-dir' needs a value"),
        (["user", "list", "--admin", "--data-dir", "DIR"], "unknown option '--admin' for 'user list'"),
        (["user", "rotate", "--data-dir", "DIR"], "user rotate takes exactly one NAME, got 0"),
        (["user", "rotate", "bob", "carol", "--data-dir", "DIR"], "user rotate takes exactly one NAME, got 2"),
        (["user", "rotate", "bob"], "--data-dir is required"),
        (["user", "rotate", "bob", "--admin", "--data-dir", "DIR"], "unknown option '--admin' for 'user rotate'"),
        (["user", "rotate", "bad/name", "--data-dir", "DIR"], "invalid user name 'bad/name'"),
        (["user", "revoke", "--data-dir", "DIR"], "user revoke takes exactly one NAME, got 0"),
        (["user", "revoke", "bob", "--database", "postgresql://bob:secret-password@/x?host=/nonexistent"], "--database must not hold a password"),
        (["user", "revoke", "bob", "--data-dir", "DIR", "--listen", "127.0.0.1:0"], "unknown option '--listen' for 'user revoke'"),
        (["user", "deactivate", "", "--data-dir", "DIR"], "invalid user name ''"),
        (["user", "deactivate", "a", "b", "--data-dir", "DIR"], "user deactivate takes exactly one NAME, got 2"),
        (["user", "deactivate", "bob", "--data-dir="], "--data-dir must not be empty"),
        (["user", "Rotate", "bob", "--data-dir", "DIR"], "unknown user subcommand 'Rotate'; expected add, list, rotate, revoke or deactivate"),
        (["user", "list"], "--data-dir is required"),
        (["user", "list", "--data-dir="], "--data-dir must not be empty"),
        (["user", "list", "bob", "--data-dir", "DIR"], "user list takes no arguments, got 'bob'"),
        // Storage: --database and --database-pool.
        (["serve", "--database"], "option '--database' needs a value"),
        (["serve", "--database", "--data-dir", "DIR"], "option '--database' needs a value"),
        (["serve", "--database", ""], "--database must not be empty"),
        (["serve", "--database="], "--database must not be empty"),
        (["serve", "--database", nowhere, "--database", nowhere], "option '--database' given twice"),
        (["serve", "--database", "mysql://localhost/expenses"], "--database must be a postgresql:// URL or the path of an SQLite file, not a 'mysql' URL"),
        (["serve", "--database", "my\u{1B}[2Jsql://x"], "not a 'my\\u{1B}[2Jsql' URL"),
        (["serve", "--database", "postgresql://alice:secret-password@/expenses?host=/nonexistent"], "--database must not hold a password"),
        (["serve", "--database", "postgres://:secret-password@/x?host=/nonexistent"], "--database must not hold a password"),
        (["serve", "--database", "postgresql:///x?host=/nonexistent&password=secret-password"], "--database must not hold a password"),
        (["serve", "--database", "DIR"], "--data-dir is required with an SQLite --database"),
        (["serve", "--database", nowhere, "--data-dir", ""], "--data-dir must not be empty"),
        (["serve", "--data-dir", "DIR", "--database-pool"], "option '--database-pool' needs a value"),
        (["serve", "--data-dir", "DIR", "--database-pool", "0"], "--database-pool must be a whole number from 1 to 1000, got '0'"),
        (["serve", "--database", nowhere, "--database-pool", "1001"], "--database-pool must be a whole number from 1 to 1000, got '1001'"),
        (["serve", "--database", nowhere, "--database-pool", "many"], "--database-pool must be a whole number from 1 to 1000, got 'many'"),
        // The head timeout, on PostgreSQL too.
        (["serve", "--database", nowhere, "--header-timeout", "0"], "--header-timeout must be a whole number from 1 to 3600, got '0'"),
        (["serve", "--database", nowhere, "--header-timeout"], "option '--header-timeout' needs a value"),
        (["user", "add", "bob", "--database", "mysql://localhost/x"], "--database must be a postgresql:// URL"),
        (["user", "add", "bob", "--database", "postgresql://bob:secret-password@/x?host=/nonexistent"], "--database must not hold a password"),
        (["user", "add", "bad name", "--database", nowhere], "invalid user name 'bad name'"),
        (["user", "add", "bob", "--data-dir", "DIR", "--database-pool", "4"], "unknown option '--database-pool' for 'user add'"),
        (["user", "list", "--database", ""], "--database must not be empty"),
        (["user", "list", "--database", "postgresql:///expenses?host=/nonexistent&password=secret-password"], "--database must not hold a password"),
        (["user", "list", "--database", nowhere, "--header-timeout", "5"], "unknown option '--header-timeout' for 'user list'"),
        // export
        (["export"], "--data-dir is required"),
        (["export", "--data-dir", "DIR", "--format"], "option '--format' needs a value"),
        (["export", "--data-dir", "DIR", "--format", "xlsx"], "--format must be csv or jsonl, got 'xlsx'"),
        (["export", "--data-dir", "DIR", "--format", "CSV"], "--format must be csv or jsonl, got 'CSV'"),
        (["export", "--data-dir", "DIR", "--format="], "--format must be csv or jsonl, got ''"),
        (["export", "--data-dir", "DIR", "--format", "csv", "--format", "jsonl"], "option '--format' given twice"),
        (["export", "--data-dir", "DIR", "--since", "2026-02-30"], "--since must be a date, YYYY-MM-DD, got '2026-02-30'"),
        (["export", "--data-dir", "DIR", "--since", "yesterday"], "--since must be a date, YYYY-MM-DD, got 'yesterday'"),
        (["export", "--data-dir", "DIR", "--since", "2026-1-5"], "--since must be a date"),
        (["export", "--data-dir", "DIR", "--since", ""], "--since must be a date, YYYY-MM-DD, got ''"),
        (["export", "--data-dir", "DIR", "--user", "a b"], "--user: invalid user name 'a b'"),
        (["export", "--data-dir", "DIR", "--user"], "option '--user' needs a value"),
        (["export", "--data-dir", "DIR", "out.csv"], "export takes no arguments, got 'out.csv'"),
        (["export", "--data-dir", "DIR", "--until", "2026-01-01"], "unknown option '--until' for 'export'"),
        (["export", "--data-dir", "DIR", "--admin"], "unknown option '--admin' for 'export'"),
        (["export", "--database", "postgresql://u:secret-password@/x?host=/nonexistent"], "--database must not hold a password"),
        (["export", "--data-dir", "DIR", "--base-url"], "option '--base-url' needs a value"),
        // migrate
        (["migrate"], "--data-dir is required"),
        (["migrate", "--data-dir"], "option '--data-dir' needs a value"),
        (["migrate", "--data-dir", ""], "--data-dir must not be empty"),
        (["migrate", "now", "--data-dir", "DIR"], "migrate takes no arguments, got 'now'"),
        (["migrate", "--data-dir", "DIR", "--listen", "127.0.0.1:0"], "unknown option '--listen' for 'migrate'"),
        (["migrate", "--database", nowhere, "--database-pool", "2"], "unknown option '--database-pool' for 'migrate'"),
        (["migrate", "--database", "sqlite://DIR"], "not a 'sqlite' URL"),
        (["migrate", "--database", "postgresql://u:secret-password@/x?host=/nonexistent"], "--database must not hold a password"),
        // backup
        (["backup"], "backup takes exactly one DEST, a folder to create, got 0"),
        (["backup", "--data-dir", "DIR"], "backup takes exactly one DEST, a folder to create, got 0"),
        (["backup", "DIR2", "extra", "--data-dir", "DIR"], "backup takes exactly one DEST, a folder to create, got 2"),
        (["backup", "", "--data-dir", "DIR"], "backup's DEST must not be empty"),
        (["backup", "DIR2"], "--data-dir is required"),
        (["backup", "DIR2", "--data-dir", ""], "--data-dir must not be empty"),
        (["backup", "DIR2", "--data-dir", "DIR", "--data-dir", "DIR"], "option '--data-dir' given twice"),
        (["backup", "DIR2", "--database", nowhere], "backup copies SQLite data; back up a PostgreSQL database with pg_dump"),
        (["backup", "DIR2", "--data-dir", "DIR", "--database-pool", "2"], "unknown option '--database-pool' for 'backup'"),
        (["backup", "DIR2", "--data-dir", "DIR", "--header-timeout", "5"], "unknown option '--header-timeout' for 'backup'"),
    ] + badBaseURLs.map { (["export", "--data-dir", "DIR", "--base-url", $0], "--base-url must be http:// or https://") }

    /// `--base-url` values that are not a scheme, a host, an optional port and path.
    static let badBaseURLs = [
        "", "example.com", "ftp://example.com", "http://", "https:///path", "http://:8080", "http://host:",
        "https://host/a b", "https://host/?q=1", "https://host/#top", "https://user@host", "https://host/\"x", "http://h\u{7}ost", "https://h\u{E9}te",
    ]

    /// A PostgreSQL URL that reaches no server: a line wrongly accepted
    /// fails to connect instead of touching a real cluster.
    static let nowhere = "postgresql:///expenses?host=/nonexistent"

    /// Each case runs with `DIR` (and `DIR2`) in a temporary folder, and
    /// `serve` on a port of its own unless the case is about `--listen`: a
    /// command line wrongly accepted must not touch anything shared.
    @Test(arguments: Self.unusable)
    func unusableCommandLine_exits64WithAReason(_ arguments: [String], _ says: String) throws {
        let directory = TemporaryDirectory()
        var arguments = arguments.map { $0 == "DIR" ? directory.at("data") : $0 == "DIR2" ? directory.at("data2") : $0 }
        if arguments.first == "serve" && !arguments.contains(where: { $0.hasPrefix("--listen") }) {
            arguments.insert(contentsOf: ["--listen", "127.0.0.1:0"], at: 1)
        }
        let result = try runCommand(binary, arguments, timeout: 20)
        #expect(!FileManager.default.fileExists(atPath: directory.at("data")), "\(arguments)")
        #expect(!FileManager.default.fileExists(atPath: directory.at("data2")), "\(arguments)")
        // A password given in a URL is never repeated.
        #expect(!result.stderr.contains("secret-password"), "\(arguments): \(result.stderr)")
        #expect(result.status == 64, "\(arguments)")
        let lines = result.stderr.split(separator: "\n", omittingEmptySubsequences: false)
        #expect(lines.count == 3 && lines[2].isEmpty, "\(arguments): \(result.stderr)")
        #expect(lines.first.map { $0.hasPrefix("expense-server: ") && $0.contains(says) } == true, "\(arguments): \(result.stderr)")
        #expect(lines.dropFirst().first == "Run 'expense-server --help' for usage.")
        #expect(result.stdout.isEmpty)
    }

    @Test func userAdd_badName_exits64_namingTheRule_withTheNameAsTyped() throws {
        let directory = TemporaryDirectory()
        let data = directory.at("data")
        let bad = try runCommand(binary, ["user", "add", "bad name", "--data-dir", data])
        #expect(bad.status == 64)
        #expect(bad.stderr == """
            expense-server: invalid user name 'bad name': a user name is 1 to 64 of the ASCII letters A-Z and a-z, \
            the digits 0-9, '.', '_', '-' and '@', and not '.' or '..'
            Run 'expense-server --help' for usage.

            """)
        #expect(bad.stdout.isEmpty)
        // Refused before anything is touched.
        #expect(!FileManager.default.fileExists(atPath: data))
        let long = try runCommand(binary, ["user", "add", String(repeating: "a", count: 65), "--data-dir", data])
        #expect(long.status == 64)
        #expect(long.stderr.contains("invalid user name '\(String(repeating: "a", count: 64))...'"))
    }

    /// What a name cannot carry onto the terminal, and how it is shown instead.
    @Test(arguments: [
        ("no spaces\nplease", #"'no spaces\npleas"#),
        ("red\u{1B}[31malert", #"'red\u{1B}[31malert'"#),
        ("tab\there", #"'tab\there'"#),
        ("csi\u{9B}31m", #"'csi\u{009B}31m'"#),
        ("evil\u{202E}gpj.exe", #"'evil\u{202E}gpj.exe'"#),
        ("back\\slash", #"'back\\slash'"#),
        ("jos\u{E9}", "'jos\u{E9}'"),
    ])
    func userAdd_nameWithControls_isShownEscaped_onOneLine(_ name: String, _ shown: String) throws {
        let directory = TemporaryDirectory()
        let result = try runCommand(binary, ["user", "add", name, "--data-dir", directory.at("data")])
        #expect(result.status == 64)
        #expect(result.stderr.contains("invalid user name \(shown)"), "\(result.stderr)")
        let lines = result.stderr.split(separator: "\n", omittingEmptySubsequences: false)
        #expect(lines.count == 3, "\(result.stderr)")
        #expect(!result.stderr.unicodeScalars.contains { $0.value == 0x1B || $0.value == 0x9B || $0.value == 0x202E || $0.value == 0x09 })
    }

    @Test func userAdd_printsOnlyTheToken_andStoresOnlyItsHash() throws {
        let directory = TemporaryDirectory()
        let data = directory.at("data")
        let result = try runCommand(binary, ["user", "add", "carol@example.com", "--data-dir", data])
        #expect(result.status == 0)
        let lines = result.stdout.split(separator: "\n", omittingEmptySubsequences: false)
        #expect(lines.count == 2 && lines[1].isEmpty)
        let token = String(lines[0])
        #expect(token.hasPrefix("esk_"))
        #expect(token.count == 47)
        #expect(result.stderr.isEmpty)
        // Nowhere in the database files.
        for file in try FileManager.default.contentsOfDirectory(atPath: data) where file.hasPrefix("expense-server.db") {
            let bytes = try #require(FileManager.default.contents(atPath: "\(data)/\(file)"))
            #expect(bytes.range(of: Data(token.utf8)) == nil, "token found in \(file)")
        }
        // Each user gets a token of their own.
        let other = try runCommand(binary, ["user", "add", "dave", "--data-dir", data])
        #expect(other.status == 0)
        #expect(other.stdout != result.stdout)
        let list = try runCommand(binary, ["user", "list", "--data-dir", data])
        #expect(list.stdout.split(separator: "\n").map { $0.split(separator: "\t")[0] } == ["carol@example.com", "dave"])
    }

    @Test func userAdd_refusesADuplicate_withExit1() throws {
        let directory = TemporaryDirectory()
        let data = directory.at("data")
        #expect(try runCommand(binary, ["user", "add", "erin", "--data-dir", data]).status == 0)
        let again = try runCommand(binary, ["user", "add", "erin", "--data-dir", data])
        #expect(again.status == 1)
        #expect(again.stderr == "expense-server: user 'erin' already exists\n")
        #expect(again.stdout.isEmpty)
    }

    /// Rotate, revoke and deactivate from the command line while a server
    /// runs: the server refuses the old token at its very next request.
    @Test(arguments: StorageEngine.allCases)
    func userRotateRevokeDeactivate_takeEffectAtTheRunningServersNextRequest(_ engine: StorageEngine) throws {
        let server = try TestServer(engine)
        let storage = server.storage.arguments
        let first = try server.addUser("frank")
        #expect(try server.create(key: TestServer.key(), auth: .token(first)).status == 201)
        #expect(try server.get("/v1/expenses", auth: .token(first)).status == 200)

        let rotated = try runCommand(binary, ["user", "rotate", "frank"] + storage)
        #expect(rotated.status == 0 && rotated.stderr.isEmpty)
        let second = rotated.stdout.trimmingCharacters(in: .newlines)
        #expect(second.hasPrefix("esk_") && second.count == 47 && second != first)
        #expect(try server.get("/v1/expenses", auth: .token(first)).status == 401)
        #expect(try server.get("/v1/expenses", auth: .token(second)).status == 200)

        let revoked = try runCommand(binary, ["user", "revoke", "frank"] + storage)
        #expect(revoked.status == 0 && revoked.stdout.isEmpty && revoked.stderr.isEmpty)
        #expect(try server.get("/v1/expenses", auth: .token(second)).status == 401)
        let third = try runCommand(binary, ["user", "rotate", "frank"] + storage).stdout.trimmingCharacters(in: .newlines)
        #expect(try server.get("/v1/expenses", auth: .token(third)).status == 200)

        #expect(try runCommand(binary, ["user", "deactivate", "frank"] + storage).status == 0)
        #expect(try server.get("/v1/expenses", auth: .token(third)).status == 401)
        let again = try runCommand(binary, ["user", "rotate", "frank"] + storage)
        #expect(again.status == 1 && again.stdout.isEmpty)
        #expect(again.stderr == "expense-server: user 'frank' is deactivated: it keeps its expenses and gets no token again\n")
        let missing = try runCommand(binary, ["user", "revoke", "nobody"] + storage)
        #expect(missing.status == 1 && missing.stderr == "expense-server: no user 'nobody'\n")
        // Kept: the expense is still stored under the deactivated user.
        #expect(try server.scalar("SELECT count(*) FROM expenses e JOIN users u ON u.id = e.user_id WHERE u.name = 'frank'") == 1)

        #expect(try runCommand(binary, ["user", "add", "boss", "--admin"] + storage).status == 0)
        let list = try runCommand(binary, ["user", "list"] + storage).stdout.split(separator: "\n").map { line in
            let columns = line.split(separator: "\t")
            return "\(columns[0]) \(columns[2]) \(columns[3])"
        }
        #expect(list == ["alice user active", "boss admin active", "frank user deactivated"])
    }

    @Test(arguments: StorageEngine.allCases, [SIGTERM, SIGINT]) func signal_stopsGracefullyWithExit0(_ engine: StorageEngine, _ signal: Int32) throws {
        let server = try TestServer(engine)
        #expect(try server.create(key: TestServer.key()).status == 201)
        server.process.child.signal(signal)
        #expect(server.process.child.waitForExit(timeout: 20) == 0)
        let log = server.process.child.standardError
        #expect(log.contains("expense-server: stopping"))
        #expect(log.hasSuffix("expense-server: stopped\n"))
    }

    @Test(arguments: StorageEngine.allCases)
    func listeningLine_isExactlyAsDocumented(_ engine: StorageEngine) throws {
        let server = try TestServer(engine)
        let lines = server.process.child.standardError.split(separator: "\n")
        #expect(lines.contains("expense-server: listening on 127.0.0.1:\(server.port)"))
    }

    @Test(arguments: StorageEngine.allCases)
    func portInUse_exits1WithTheReason(_ engine: StorageEngine) throws {
        let first = try TestServer(engine)
        let directory = TemporaryDirectory()
        let result = try runCommand(binary, ["serve", "--listen", "127.0.0.1:\(first.port)", "--data-dir", directory.at("data")])
        #expect(result.status == 1)
        #expect(result.stderr.contains("Failed to listen on 127.0.0.1:\(first.port): bind"))
        #expect(result.stderr.contains("Address already in use"))
    }

    @Test func unusableDataDirectory_exits1WithTheReason() throws {
        let directory = TemporaryDirectory()
        #expect(FileManager.default.createFile(atPath: directory.at("file"), contents: Data("x".utf8)))
        let result = try runCommand(binary, ["serve", "--listen", "127.0.0.1:0", "--data-dir", directory.at("file/data")])
        #expect(result.status == 1)
        #expect(result.stderr.hasPrefix("expense-server: Failed to open data directory '\(directory.at("file/data"))': mkdir"))
    }

    @Test func socketActivation_servesThePassedSocket_andSendsReady() throws {
        let directory = TemporaryDirectory()
        let data = directory.at("data")
        let token = try ServerProcess.addUser("alice", dataDirectory: data)
        let notify = try NotifySocket(path: directory.at("notify"))
        // A listening socket on fd 3, LISTEN_PID = the server's own pid (exec keeps it).
        let launcher = """
            import os, socket, sys
            s = socket.socket(); s.bind(("127.0.0.1", 0)); s.listen(16)
            os.dup2(s.fileno(), 3); os.set_inheritable(3, True)
            os.environ["LISTEN_FDS"] = "1"; os.environ["LISTEN_PID"] = str(os.getpid())
            sys.stderr.write("launcher: port %d\\n" % s.getsockname()[1]); sys.stderr.flush()
            os.execv(sys.argv[1], [sys.argv[1], "serve", "--listen", "127.0.0.1:1", "--data-dir", sys.argv[2]])
            """
        let child = try ChildProcess("/usr/bin/python3", ["-c", launcher, binary, data],
                                     environment: ["NOTIFY_SOCKET": notify.path], outputDirectory: directory.path)
        defer { child.stop() }
        var port: UInt16?
        try waitUntil(timeout: 20, "the server to listen") {
            port = ServerProcess.listeningPort(in: child.standardError)
            return port != nil || !child.isRunning
        }
        let launcherPort = child.standardError.split(separator: "\n").first { $0.hasPrefix("launcher: port ") }.flatMap { UInt16($0.split(separator: " ").last!) }
        #expect(port != nil)
        #expect(port == launcherPort)
        #expect(try notify.receive(timeout: 10).contains("READY=1"))
        let response = try HTTPConnection(port: try #require(port)).request("GET", "/v1/expenses", headers: [("Authorization", "Bearer \(token)")])
        #expect(response.status == 200)
        child.signal(SIGTERM)
        #expect(child.waitForExit(timeout: 20) == 0)
        #expect(try notify.receive(timeout: 5).contains("STOPPING=1"))
    }
}

/// An `AF_UNIX` datagram socket where `sd_notify` messages arrive.
final class NotifySocket {
    let path: String
    private let descriptor: Int32

    init(path: String) throws {
        self.path = path
        descriptor = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            raw.copyBytes(from: Array(path.utf8))
            raw[path.utf8.count] = 0
        }
        let rc = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(descriptor, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        guard rc == 0 else { throw TestFailure("bind \(path): \(errno)") }
    }

    deinit { close(descriptor) }

    /// The next message, waiting up to `timeout` seconds.
    func receive(timeout: Double) throws -> String {
        var fds = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
        guard poll(&fds, 1, Int32(timeout * 1000)) == 1 else { throw TestFailure("no notification within \(timeout)s") }
        var buffer = [UInt8](repeating: 0, count: 4096)
        let n = recv(descriptor, &buffer, buffer.count, 0)
        return String(decoding: buffer.prefix(max(0, n)), as: UTF8.self)
    }
}
