import Foundation
import SQLite
import Synchronization

/// A running ihatemoney (from the test venv, `ihatemoney run`: Flask's
/// development server, threaded) on 127.0.0.1, with a settings file and a
/// SQLite database of its own in the test's folder. Stopped by pid.
///
/// The settings matter: without `IHATEMONEY_SETTINGS_FILE_PATH` ihatemoney
/// reads `/etc/ihatemoney/ihatemoney.cfg` or its defaults, whose database
/// is `/tmp/ihatemoney.db` (even `ihatemoney run --help` creates and
/// migrates it); project creation sends mail unless suppressed.
public final class IhatemoneyProcess: @unchecked Sendable {
    public let directory: String
    public let settingsPath: String
    public let databasePath: String
    public private(set) var port: UInt16 = 0
    public private(set) var child: ChildProcess!

    /// Writes the settings (once) into `directory` and starts ihatemoney,
    /// waiting until it answers `/healthcheck`.
    /// - Parameters:
    ///   - port: 0 (the default) lets it pick a free one, which it prints;
    ///     another is kept (a restart where a daemon already points).
    ///   - passwordHash: how projects' passwords are hashed (ihatemoney's
    ///     `PASSWORD_HASH_METHOD`), for a new settings file. ihatemoney
    ///     checks the password of every API request: its own default
    ///     (scrypt) costs about 95 ms of CPU a check here, which the tests
    ///     spent a minute and a half on; ``cheapPasswordHash`` costs half
    ///     a millisecond. nil keeps ihatemoney's default, as a deployment
    ///     has it (bench-backends).
    public init(directory: String, port requestedPort: UInt16 = 0, passwordHash: String? = cheapPasswordHash) throws {
        self.directory = directory
        settingsPath = "\(directory)/ihatemoney.cfg"
        databasePath = "\(directory)/ihatemoney.sqlite"
        if !FileManager.default.fileExists(atPath: settingsPath) {
            try Self.settings(databasePath: databasePath, passwordHash: passwordHash)
                .write(toFile: settingsPath, atomically: true, encoding: .utf8)
        }
        try start(port: requestedPort)
    }

    deinit { if child != nil { stop() } }

    /// The ihatemoney of the whole test process, started at the first call
    /// and stopped when the process exits: a test that needs only a project
    /// of its own makes one here (``uniqueProjectID()``), and saves the
    /// seconds of CPU a start costs (Flask, SQLAlchemy, the migration). A
    /// test that stops, kills or restarts ihatemoney starts its own.
    public static func shared() throws -> IhatemoneyProcess {
        try sharedInstance.withLock { instance in
            if let instance { return instance }
            let directory = TemporaryDirectory(prefix: "ihm-shared")
            let started = try IhatemoneyProcess(directory: directory.path)
            instance = started
            sharedDirectory.withLock { $0 = directory }
            atexit {
                IhatemoneyProcess.sharedInstance.withLock { $0 = nil }
                IhatemoneyProcess.sharedDirectory.withLock { $0 = nil }
            }
            return started
        }
    }
    private static let sharedInstance = Mutex<IhatemoneyProcess?>(nil)
    private static let sharedDirectory = Mutex<TemporaryDirectory?>(nil)

    /// A project id no other test of the process uses: `household-` and 8 hex digits.
    public static func uniqueProjectID() -> String {
        "household-" + UUID().uuidString.prefix(8).lowercased()
    }

    public var baseURL: String { "http://127.0.0.1:\(port)" }

    /// Starts it again on the same port, settings and database (after ``stop()``).
    public func restart() throws { try start(port: port) }

    /// SIGINT (werkzeug's threaded server stops on KeyboardInterrupt; it
    /// was seen ignoring SIGTERM for over 20 s), SIGKILL if it is still
    /// there after 20 s; the exit status.
    @discardableResult
    public func stop() -> Int32? {
        child.signal(SIGINT)
        if let status = child.waitForExit(timeout: 20) { return status }
        child.crash()
        return child.waitForExit(timeout: 5)
    }

    /// One request on a connection of its own: the development server
    /// closes every connection after its answer (`Connection: close`).
    public func request(_ method: String, _ path: String, headers: [(String, String)] = [], body: [UInt8]? = nil,
                        timeout: Double = 60) throws -> HTTPMessage {
        try HTTPConnection(port: port, timeout: timeout).request(method, path, headers: headers, body: body)
    }

    /// Creates a project with the API (`POST /api/projects`) and its members.
    /// - Parameters:
    ///   - privateCode: the project's password: HTTP Basic's password, with
    ///     the project id as the user.
    ///   - currency: the project's default currency; bills must be in it or `XXX`.
    public func makeProject(_ id: String = "household", privateCode: String = "household-private-code",
                            currency: String = "EUR", members: [String] = ["Alice", "Bob"]) throws -> IhatemoneyProject {
        let created = try request("POST", "/api/projects", headers: [("Content-Type", "application/x-www-form-urlencoded")],
                                  body: FormBody(["name": id.capitalized, "id": id, "password": privateCode,
                                                  "contact_email": "\(id)@example.com", "default_currency": currency]).bytes)
        guard created.status == 201 else { throw TestFailure("ihatemoney: creating project \(id): \(created.status) \(created.text)") }
        var project = IhatemoneyProject(id: id, privateCode: privateCode, currency: currency, members: [:], server: self)
        for name in members {
            let added = try request("POST", "\(project.path)/members", headers: [project.basicAuthorization, ("Content-Type", "application/x-www-form-urlencoded")],
                                    body: FormBody(["name": name]).bytes)
            guard added.status == 201, let memberID = Int(added.text.trimmingCharacters(in: .whitespacesAndNewlines)) else {
                throw TestFailure("ihatemoney: adding member \(name): \(added.status) \(added.text)")
            }
            project.members[name] = memberID
        }
        return project
    }

    /// The bills of `project` as ihatemoney's own database holds them,
    /// oldest first: the verdict, independent of its API.
    public func storedBills(project: String = "household") throws -> [IhatemoneyBill] {
        let db = try Connection(path: databasePath, readOnly: true)
        db.setBusyTimeout(milliseconds: 10_000)
        let owers = try db.query("""
            SELECT billowers.bill_id, person.name FROM billowers JOIN person ON person.id = billowers.person_id
            ORDER BY person.name
            """) { (id: $0.int(0), name: $0.string(1)) }
        let owersByBill = Dictionary(grouping: owers, by: \.id).mapValues { $0.map(\.name) }
        return try db.query("""
            SELECT bill.id, person.name, bill.amount, bill.date, bill.what, bill.external_link, bill.original_currency,
                   bill.bill_type, bill.creation_date
            FROM bill JOIN person ON person.id = bill.payer_id
            WHERE person.project_id = ? ORDER BY bill.id
            """, [.text(project)]) { row in
            IhatemoneyBill(id: row.int(0), payer: row.string(1), owers: owersByBill[row.int(0)] ?? [], amount: row.double(2),
                           date: row.string(3), what: row.string(4), externalLink: row.optionalString(5) ?? "",
                           currency: row.string(6), billType: row.string(7), creationDate: row.string(8))
        }
    }

    private func start(port requestedPort: UInt16) throws {
        let executable = try PythonVenv.executable("ihatemoney")
        var environment = PythonVenv.environment
        environment["IHATEMONEY_SETTINGS_FILE_PATH"] = settingsPath
        let child = try ChildProcess(executable, ["run", "--host", "127.0.0.1", "--port", String(requestedPort),
                                                  "--no-debug", "--no-reload", "--with-threads"],
                                     environment: environment, outputDirectory: directory, name: "ihatemoney")
        // Its first start migrates the new database: tens of seconds on a loaded machine.
        var found: UInt16?
        try waitUntil(timeout: 120, "ihatemoney to listen") {
            if !child.isRunning { throw TestFailure("ihatemoney exited: \(child.standardError.suffix(2000))") }
            found = Self.listeningPort(in: child.standardError)
            return found != nil
        }
        self.child = child
        port = found!
        try waitUntil(timeout: 60, "ihatemoney to answer /healthcheck") {
            (try? request("GET", "/healthcheck", timeout: 10))?.text == "OK"
        }
    }

    /// The port of werkzeug's ` * Running on http://127.0.0.1:PORT` line.
    static func listeningPort(in output: String) -> UInt16? {
        for line in output.split(separator: "\n") {
            guard let range = line.range(of: "Running on http://127.0.0.1:") else { continue }
            return UInt16(line[range.upperBound...].prefix { $0.isNumber })
        }
        return nil
    }

    /// A password hash that werkzeug checks in half a millisecond.
    public static let cheapPasswordHash = "pbkdf2:sha256:1000"

    /// A settings file (Python) that keeps everything in the test's folder and on loopback.
    static func settings(databasePath: String, passwordHash: String?) -> String {
        """
        # Written by the expensed tests: read by ihatemoney through IHATEMONEY_SETTINGS_FILE_PATH.
        SQLALCHEMY_DATABASE_URI = "sqlite:///\(databasePath)"
        SECRET_KEY = "\(UUID().uuidString)"
        ACTIVATE_DEMO_PROJECT = False
        ACTIVATE_ADMIN_DASHBOARD = False
        ALLOW_PUBLIC_PROJECT_CREATION = True
        # Plain HTTP on loopback: a secure-only cookie would never come back.
        SESSION_COOKIE_SECURE = False
        # Project creation mails its contact address; never send.
        MAIL_SUPPRESS_SEND = True
        MAIL_SERVER = "127.0.0.1"
        MAIL_DEFAULT_SENDER = "expensed tests <tests@localhost>"
        BABEL_DEFAULT_TIMEZONE = "UTC"

        """ + (passwordHash.map { "PASSWORD_HASH_METHOD = \"\($0)\"\n" } ?? "")
    }
}

/// A project made by ``IhatemoneyProcess/makeProject(_:privateCode:currency:members:)``.
public struct IhatemoneyProject: Sendable {
    public let id: String
    public let privateCode: String
    public let currency: String
    /// Member ids by name.
    public var members: [String: Int]
    let server: IhatemoneyProcess

    /// `/api/projects/<id>`.
    public var path: String { "/api/projects/\(id)" }
    /// `http://127.0.0.1:PORT/api/projects/<id>`: what `server =` names for the daemon.
    public var url: String { server.baseURL + path }

    /// `Authorization: Basic base64(id:privateCode)`.
    public var basicAuthorization: (String, String) {
        ("Authorization", "Basic " + Data("\(id):\(privateCode)".utf8).base64EncodedString())
    }

    /// A bearer token from `GET …/token` (asked with HTTP Basic).
    public func token() throws -> String {
        let answer = try server.request("GET", "\(path)/token", headers: [basicAuthorization])
        guard answer.status == 200, let token = answer.json?["token"] as? String else {
            throw TestFailure("ihatemoney token: \(answer.status) \(answer.text)")
        }
        return token
    }
}

/// One row of ihatemoney's `bill` table, with its payer's and owers' names.
public struct IhatemoneyBill: Sendable, Equatable {
    public let id: Int
    public let payer: String
    /// Names, sorted.
    public let owers: [String]
    /// ihatemoney stores amounts as floating point.
    public let amount: Double
    public let date: String
    public let what: String
    public let externalLink: String
    public let currency: String
    /// `EXPENSE` or `REIMBURSEMENT` (the enum's name, not the API's "Expense").
    public let billType: String
    public let creationDate: String
}
