import Foundation

/// A running fava (from the test venv) on 127.0.0.1, serving a beancount
/// ledger the test wrote into a folder of its own. Stopped by pid.
///
/// fava prints the port it was asked for, not the one it bound, so a free
/// port is chosen here and fava started on it; when another process took
/// it meanwhile fava exits with "already in use" and is started again on
/// another. It is ready when its own ledger answers under its slug.
public final class FavaProcess: @unchecked Sendable {
    /// What the ledger file starts with.
    public struct Ledger: Sendable {
        /// `option "title"`: fava serves the ledger at `/<slug of the title>/`.
        public var title: String
        public var operatingCurrency: String
        /// The `documents` option as written in the ledger (`nil`: the
        /// folder's absolute path). fava's `add_document` wants this exact
        /// string as its `folder`.
        public var documentsOption: String?
        /// Accounts opened on `openDate`.
        public var accounts: [String]
        public var openDate: String
        /// More ledger text, after the accounts.
        public var extra: String
        /// The currencies the accounts are opened with; empty: the operating currency alone.
        public var currencies: [String]

        public init(title: String = "Household", operatingCurrency: String = "EUR", documentsOption: String? = nil,
                    accounts: [String] = ["Assets:Cash", "Expenses:Meals", "Expenses:Travel", "Expenses:Misc"],
                    openDate: String = "2020-01-01", extra: String = "", currencies: [String] = []) {
            self.title = title
            self.currencies = currencies
            self.operatingCurrency = operatingCurrency
            self.documentsOption = documentsOption
            self.accounts = accounts
            self.openDate = openDate
            self.extra = extra
        }

        func text(documentsFolder: String) -> String {
            func quoted(_ s: String) -> String { "\"" + s.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"") + "\"" }
            var text = """
            option "title" \(quoted(title))
            option "operating_currency" \(quoted(operatingCurrency))
            option "documents" \(quoted(documentsOption ?? documentsFolder))


            """
            let opened = currencies.isEmpty ? operatingCurrency : currencies.joined(separator: ",")
            for account in accounts { text += "\(openDate) open \(account) \(opened)\n" }
            return text + (extra.isEmpty ? "" : "\n" + extra + "\n")
        }
    }

    public let directory: String
    public let ledgerPath: String
    /// Where documents go, as an absolute path.
    public let documentsFolder: String
    /// The `documents` option as the ledger spells it: `add_document`'s `folder`.
    public let documentsOption: String
    public private(set) var port: UInt16 = 0
    /// The ledger's slug, as fava itself made it from the title.
    public private(set) var slug = ""
    public private(set) var child: ChildProcess!

    /// Writes the ledger (unless `writeLedger` is false and one is there)
    /// into `directory` and starts fava on it.
    /// - Parameter port: 0 (the default) picks a free one; another is kept
    ///   (a restart on the port a daemon already uses).
    public init(directory: String, ledger: Ledger = Ledger(), writeLedger: Bool = true, port requestedPort: UInt16 = 0) throws {
        // fava resolves the path it is given; its options show that form.
        let directory = URL(fileURLWithPath: directory).resolvingSymlinksInPath().path
        self.directory = directory
        ledgerPath = "\(directory)/ledger.beancount"
        documentsFolder = ledger.documentsOption.map { $0.hasPrefix("/") ? $0 : "\(directory)/\($0)" } ?? "\(directory)/documents"
        documentsOption = ledger.documentsOption ?? documentsFolder
        try FileManager.default.createDirectory(atPath: documentsFolder, withIntermediateDirectories: true)
        if writeLedger || !FileManager.default.fileExists(atPath: ledgerPath) {
            try ledger.text(documentsFolder: documentsFolder).write(toFile: ledgerPath, atomically: true, encoding: .utf8)
        }
        try start(port: requestedPort)
    }

    deinit { child?.stop() }

    /// `http://127.0.0.1:PORT/<slug>`: what `server =` names for the daemon.
    public var baseURL: String { "http://127.0.0.1:\(port)/\(slug)" }
    /// The path of fava's JSON API for this ledger: `/<slug>/api`.
    public var apiPath: String { "/\(slug)/api" }

    /// Starts fava again on the same port and ledger (after ``stop()``).
    public func restart() throws {
        try start(port: port)
    }

    /// SIGTERM, and the exit status.
    @discardableResult
    public func stop() -> Int32? {
        child.signal(SIGTERM)
        return child.waitForExit(timeout: 20)
    }

    /// The ledger as beancount's loader reads it now.
    public func loadLedger() throws -> BeancountLedger { try BeancountLedger.load(ledgerPath) }

    /// A new connection to fava (it keeps connections alive).
    public func connect(timeout: Double = 60) throws -> HTTPConnection { try HTTPConnection(port: port, timeout: timeout) }

    private func start(port requestedPort: UInt16) throws {
        let fava = try PythonVenv.executable("fava")
        for _ in 0..<5 {
            let port = requestedPort != 0 ? requestedPort : try ServerProcess.unusedPort()
            let child = try ChildProcess(fava, ["--host", "127.0.0.1", "--port", String(port), ledgerPath],
                                         environment: PythonVenv.environment, outputDirectory: directory, name: "fava")
            var slug: String?
            var inUse = false
            try waitUntil(timeout: 60, "fava to serve \(ledgerPath) on 127.0.0.1:\(port)") {
                if !child.isRunning {
                    inUse = child.standardError.contains("already in use")
                    if inUse { return true }
                    throw TestFailure("fava exited: \(child.standardError.suffix(2000))")
                }
                slug = Self.servedSlug(port: port, ledgerPath: ledgerPath)
                return slug != nil
            }
            if inUse && requestedPort == 0 { continue }
            if inUse { throw TestFailure("fava: port \(port) is already in use") }
            self.child = child
            self.port = port
            self.slug = slug!
            return
        }
        throw TestFailure("fava: no free port found in five tries")
    }

    /// The slug fava redirects `/` to, once `/<slug>/api/source` shows that
    /// the fava answering is the one serving `ledgerPath` (and not some
    /// other process that took the port).
    ///
    /// Neither request makes fava reread its ledger: fava 1.30 rereads it
    /// (`changed()`, which `/api/options` and every page call) without the
    /// lock its own writes hold, so a reread while a daemon's `add_entries`
    /// is writing the file loads half a ledger, without its title, and fava
    /// then serves it under another slug. A restart while a daemon is
    /// sending must not poll fava into that.
    static func servedSlug(port: UInt16, ledgerPath: String) -> String? {
        guard let root = try? HTTPConnection(port: port, timeout: 10).request("GET", "/"),
              root.status == 302, let location = root.header("Location") else { return nil }
        let slug = location.split(separator: "/").first.map(String.init) ?? ""
        guard !slug.isEmpty, let source = try? HTTPConnection(port: port, timeout: 30).request("GET", "/\(slug)/api/source"),
              let data = source.json?["data"] as? [String: Any],
              data["file_path"] as? String == ledgerPath else { return nil }
        return slug
    }
}
