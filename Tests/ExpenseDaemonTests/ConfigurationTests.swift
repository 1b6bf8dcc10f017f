import ExpenseCore
@testable import ExpenseDaemon
import ReceiptReading
import SyncEngine
import Testing

@Suite struct ConfigurationTests {
    @Test func durationsAndSizes_parse() throws {
        let any = Int64(0)...DurationText.maximumMilliseconds
        #expect(try duration("250ms", any) == 250)
        #expect(try duration("5s", any) == 5000)
        #expect(try duration("15m", any) == 900_000)
        #expect(try duration("2h", any) == 7_200_000)
        #expect(try duration("7", any) == 7000)
        #expect(try duration("1.5s", any) == 1500)
        #expect(try duration("0.25", any) == 250)
        for garbage in ["-1s", "5 s", "+5s", "1e3", "nan", "inf", "0x10", "", "s", ".5s", "5.s", "99999999999999", "366d", "8761h"] {
            #expect(throws: ConfigurationError.self, "\(garbage)") { try duration(garbage, any) }
        }
        #expect(throws: ConfigurationError("must be from 100ms to 1h")) { try duration("50ms", 100...3_600_000) }
        #expect(throws: ConfigurationError("must be from 100ms to 1h")) { try duration("2h", 100...3_600_000) }
        let bytes = 1...(4 << 30)
        #expect(try size("25M", bytes) == 25 << 20)
        #expect(try size("512KiB", bytes) == 512 << 10)
        #expect(try size("1000", bytes) == 1000)
        for garbage in ["0", "1T", "+5", "-1", "5 M", "", "M", "1e6", "99999999999999999999", "5G"] {
            #expect(throws: ConfigurationError.self, "\(garbage)") { try size(garbage, bytes) }
        }
    }

    /// Every key that takes a number, with garbage and with values just
    /// outside its range: each is refused naming the key, nothing crashes.
    @Test func everyNumericKey_refusesGarbageAndValuesOutOfRange() throws {
        let garbage = ["", "-1", "+5", "1e3", "nan", "inf", "-inf", "0x10", "5 s", "0,5", "99999999999999999999", "1.5.5", "½"]
        let outOfRange: [String: [String]] = [
            "receipt_max_bytes": ["0", "5G"], "control_max_connections": ["0", "10001"], "control_idle_timeout": ["99ms", "2d"],
            "control_line_max": ["1023", "65M"], "drain_interval": ["99ms", "25h"], "backoff_base": ["0", "2h"],
            "backoff_cap": ["0", "2d"], "max_attempts": ["0", "1001"], "concurrency": ["0", "65"], "refresh_interval": ["999ms", "8d"],
            "connect_timeout": ["99ms", "11m"], "request_timeout": ["999ms", "2d"], "spool_settle": ["2h"], "spool_max_bytes": ["0", "5G"],
            "spool_sidecar_window": ["8d"], "receipt_max_edge": ["255", "20001"], "receipt_max_pixels": ["999", "1000000001"],
            "receipt_decode_timeout": ["999ms", "2h"], "receipt_original_retention": ["366d", "Forever", "NO", "never", "30 d"],
            "spool_scan_interval": ["1ms", "99ms", "2d", "Auto", "OFF", "never", "yes"],
            "outbox_max_jobs": ["0", "100000001", "auto"],
            "outbox_max_receipt_bytes": ["0", "1023K", "2P", "Auto", "none", "5%"],
            "disk_reserve": ["51%", "100%", "5.5%", "%", "-5%", "+5%", "5 %", "1025G", "2T", "Auto", "none", "5%%"],
        ]
        #expect(Set(outOfRange.keys).isSubset(of: Set(Configuration.keys.map(\.name))))
        for (key, values) in outOfRange.sorted(by: { $0.key < $1.key }) {
            for value in garbage + values {
                var configuration = Configuration()
                #expect(throws: ConfigurationError.self, "\(key) = '\(value)'") {
                    try configuration.apply(fileText: "\(key) = \(value)\n", path: "x.conf")
                }
                do {
                    try configuration.apply(fileText: "\(key) = \(value)\n", path: "x.conf")
                } catch {
                    #expect(error.description.hasPrefix("x.conf:1: \(key): must be"), "\(error)")
                }
            }
        }
    }

    @Test func receiptOriginalRetention_isForeverNoOrADuration() throws {
        func parsed(_ value: String) throws -> Int64? {
            var configuration = Configuration()
            try configuration.apply(fileText: "receipt_original_retention = \(value)\n", path: "x.conf")
            return configuration.receiptOriginalRetentionMilliseconds
        }
        #expect(Configuration().receiptOriginalRetentionMilliseconds == nil, "kept forever unless told")
        #expect(try parsed("forever") == nil)
        #expect(try parsed("no") == 0)
        #expect(try parsed("0") == 0)
        #expect(try parsed("30d") == 30 * 86_400_000)
        #expect(try parsed("12h") == 12 * 3_600_000)
    }

    @Test func spoolScanInterval_isAutoOffOrADuration() throws {
        for (value, expected) in [("auto", Int64?.none), ("off", 0), ("0", 0), ("0s", 0), ("100ms", 100), ("30s", 30_000), ("10", 10_000), ("1d", 86_400_000)] {
            var configuration = Configuration()
            try configuration.apply(fileText: "spool_scan_interval = \(value)\n", path: "x.conf")
            #expect(configuration.spoolScanIntervalMilliseconds == expected, "\(value)")
        }
        #expect(Configuration().spoolScanIntervalMilliseconds == nil, "auto by default")
        #expect(try Configuration.parse(arguments: ["--spool-scan-interval", "2m"]) { _ in nil } == .run(with { $0.spoolScanIntervalMilliseconds = 120_000 }))
        #expect(throws: ConfigurationError("spool_scan_interval: must be auto, off (or 0), or a duration from 100ms to 1d, like 10s or 1m", file: "x.conf", line: 1)) {
            var configuration = Configuration()
            try configuration.apply(fileText: "spool_scan_interval = sometimes\n", path: "x.conf")
        }
    }

    @Test func metered_isPauseReceiptsPauseOrIgnore_andNothingElse() throws {
        #expect(Configuration().metered == .pauseReceipts, "receipt uploads wait on a metered link unless told")
        for mode in MeteredMode.allCases {
            var configuration = Configuration()
            try configuration.apply(fileText: "metered = \(mode.rawValue)\n", path: "x.conf")
            #expect(configuration.metered == mode)
            #expect(try Configuration.parse(arguments: ["--metered", mode.rawValue]) { _ in nil } == .run(with { $0.metered = mode }))
        }
        for garbage in ["", "yes", "no", "Pause", "PAUSE-RECEIPTS", "pause_receipts", "pause,ignore", "0", "1", "true", "\u{1B}[2J"] {
            var configuration = Configuration()
            #expect(throws: ConfigurationError("metered: must be pause-receipts, pause or ignore", file: "x.conf", line: 1), "'\(garbage)'") {
                try configuration.apply(fileText: "metered = \(garbage)\n", path: "x.conf")
            }
        }
        do {
            _ = try Configuration.parse(arguments: ["--metered", "sometimes"]) { _ in nil }
            Issue.record("--metered sometimes was accepted")
        } catch let error as UsageError {
            #expect("\(error)".contains("--metered: must be pause-receipts, pause or ignore"), "\(error)")
        }
        // The flag wins over the file, as every flag does.
        #expect(try Configuration.parse(arguments: ["--metered", "ignore"]) { _ in "metered = pause\n" } == .run(with { $0.metered = .ignore }))
    }

    /// Reading receipts: the languages (spaces or `+` between them), where
    /// their data is, the date order and the default currency; garbage is
    /// refused naming the key, and the reader and the parser get what was set.
    @Test func receiptReadingKeys_parse_andReachTheReaderAndTheParser() throws {
        var configuration = Configuration()
        #expect(configuration.receiptLanguages == ["eng"] && configuration.receiptDateOrder == nil && configuration.receiptCurrency == nil)
        try configuration.apply(fileText: """
            receipt_languages = eng  deu+fra
            receipt_tessdata = /opt/tessdata/
            receipt_date_order = month-first
            receipt_currency = CAD
            """, path: "x.conf")
        #expect(configuration.receiptLanguages == ["eng", "deu", "fra"] && configuration.receiptTessdata == "/opt/tessdata")
        let reader = configuration.receiptReaderRun
        #expect(reader.settings.languages == ["eng", "deu", "fra"] && reader.settings.tessdata == "/opt/tessdata")
        #expect(reader.settings.arguments.starts(with: ["--read", "--languages", "eng+deu+fra", "--tessdata", "/opt/tessdata"]))
        #expect(reader.environment["OMP_THREAD_LIMIT"] == "1")
        #expect(configuration.readingSettings(localeDateFormat: "%d/%m/%Y") == ReadingSettings(dateOrder: .monthFirst, defaultCurrency: "CAD"),
                "the setting wins over the locale")
        #expect(configuration.receiptReadingProblem == "Refusing to start: no eng.traineddata in /opt/tessdata: install Debian's tesseract-ocr-eng (receipt_languages)")
        try configuration.apply(fileText: "receipt_date_order = locale\nreceipt_currency = none\n", path: "y.conf")
        #expect(configuration.readingSettings(localeDateFormat: "%d/%m/%Y") == ReadingSettings(dateOrder: .dayFirst))
        #expect(configuration.readingSettings(localeDateFormat: nil) == ReadingSettings(), "no order: ambiguous dates stay ambiguous")
        #expect(Configuration().receiptReadingProblem == nil, "Debian's eng is installed (scripts/setup)")
        for (key, value) in [("receipt_languages", ""), ("receipt_languages", "eng,deu"), ("receipt_languages", "ENG"), ("receipt_languages", "../eng"),
                             ("receipt_languages", "eng eng"), ("receipt_tessdata", ""), ("receipt_tessdata", "relative"),
                             ("receipt_date_order", "dd/mm"), ("receipt_date_order", "Day-First"), ("receipt_currency", "eur"),
                             ("receipt_currency", "XYZ"), ("receipt_currency", "EURO"), ("receipt_currency", "")] {
            var configuration = Configuration()
            #expect(throws: ConfigurationError.self, "\(key) = '\(value)'") { try configuration.apply(fileText: "\(key) = \(value)\n", path: "x.conf") }
        }
        #expect(try Configuration.parse(arguments: ["--receipt-date-order", "day-first"]) { _ in nil } == .run(with { $0.receiptDateOrder = .dayFirst }))
    }

    /// `reading`, `reading_wait`, `reading_timeout`: parsed, refused when
    /// garbage, and what the sync engine and the reader get; off means no
    /// wait and no language data looked for.
    @Test func readingKeys_parse_andReachTheEngineAndTheReader() throws {
        var configuration = Configuration()
        #expect(configuration.reading && configuration.syncSettings.readingWaitMilliseconds == 120_000)
        #expect(configuration.receiptReaderRun.settings.deadlineMilliseconds == 120_000)
        try configuration.apply(fileText: "reading_wait = 5s\nreading_timeout = 300ms\n", path: "x.conf")
        #expect(configuration.syncSettings.readingWaitMilliseconds == 5_000)
        #expect(configuration.receiptReaderRun.settings.deadlineMilliseconds == 300)
        try configuration.apply(fileText: "reading_wait = 0\n", path: "x.conf")
        #expect(configuration.syncSettings.readingWaitMilliseconds == nil, "0: nothing waits")
        try configuration.apply(fileText: "reading_wait = 1m\nreading = off\nreceipt_tessdata = /nowhere\n", path: "x.conf")
        #expect(!configuration.reading && configuration.syncSettings.readingWaitMilliseconds == nil)
        #expect(configuration.receiptReadingProblem == nil, "off: the language data is not looked for")
        for (key, value) in [("reading", "yes"), ("reading", ""), ("reading", "On"), ("reading", "1"), ("reading_wait", "2h"), ("reading_wait", "-1s"),
                             ("reading_wait", "soon"), ("reading_timeout", "0"), ("reading_timeout", "50ms"), ("reading_timeout", "2h"), ("reading_timeout", "")] {
            var configuration = Configuration()
            #expect(throws: ConfigurationError.self, "\(key) = '\(value)'") { try configuration.apply(fileText: "\(key) = \(value)\n", path: "x.conf") }
        }
        #expect(try Configuration.parse(arguments: ["--reading", "off"]) { _ in nil } == .run(with { $0.reading = false }))
    }

    @Test func theDateOrder_isSaidAtStart_withWhereItComesFrom() {
        var configuration = Configuration()
        #expect(configuration.dateOrderDescription(localeDateFormat: "%m/%d/%Y", localeName: "en_US.UTF-8")
                == "Receipt dates like 03/04/2026 are read month-first, as the locale en_US.UTF-8 writes dates (receipt_date_order = locale)")
        #expect(configuration.dateOrderDescription(localeDateFormat: nil, localeName: "C.UTF-8")
                == "Receipt dates like 03/04/2026 are not suggested: the locale C.UTF-8 gives no day-first or month-first order; set receipt_date_order")
        #expect(configuration.dateOrderDescription(localeDateFormat: nil, localeName: "en_GB.UTF-8", isLocaleInstalled: false)
                == "Receipt dates like 03/04/2026 are not suggested: the locale en_GB.UTF-8 is not installed (locale -a lists those that are); set receipt_date_order")
        configuration.receiptDateOrder = .dayFirst
        #expect(configuration.dateOrderDescription(localeDateFormat: "%m/%d/%Y", localeName: "en_US.UTF-8")
                == "Receipt dates like 03/04/2026 are read day-first (receipt_date_order)")
    }

    func with(_ change: (inout Configuration) -> Void) -> Configuration {
        var configuration = Configuration()
        change(&configuration)
        return configuration
    }

    @Test func backoffBaseLongerThanTheCap_isRefused() throws {
        #expect(throws: ConfigurationError.self) {
            try Configuration.parse(arguments: ["--backoff-base", "10s", "--backoff-cap", "5s"]) { _ in nil }
        }
        _ = try Configuration.parse(arguments: ["--backoff-base", "5s", "--backoff-cap", "5s"]) { _ in nil }
    }

    /// The outbox's limits: the defaults, what each key takes, and the
    /// limits they make for a file system of a given size.
    @Test func outboxLimits_parseAndResolve() throws {
        let defaults = Configuration()
        #expect(defaults.outboxMaxJobs == 100_000 && defaults.outboxMaxReceiptBytes == nil && defaults.diskReserve == nil && defaults.metricsFile == nil)
        var c = Configuration()
        try c.apply(fileText: "outbox_max_jobs = 5\noutbox_max_receipt_bytes = 30M\ndisk_reserve = 7%\nmetrics_file = /var/lib/node/expensed.prom\n",
                    path: "x.conf")
        #expect(c.outboxMaxJobs == 5 && c.outboxMaxReceiptBytes == 30 << 20 && c.diskReserve == .percent(7))
        #expect(c.metricsFile == "/var/lib/node/expensed.prom")
        for (text, expected) in [("256M", OutboxLimitSettings.DiskReserve.bytes(256 << 20)), ("0", .bytes(0)), ("1T", .bytes(1 << 40)),
                                 ("0%", .percent(0)), ("50%", .percent(50))] {
            #expect(try reserve(text) == expected, "\(text)")
        }
        #expect(try reserve("auto") == nil)
        try c.apply(fileText: "outbox_max_receipt_bytes = auto\nmetrics_file = none\n", path: "y.conf")
        #expect(c.outboxMaxReceiptBytes == nil && c.metricsFile == nil)
        // auto never goes below the largest receipt taken: one could never be queued.
        let small = c.outboxLimits(fileSystemBytes: 24 << 20)
        #expect(small.maxReceiptBytes == 25 << 20)
        #expect(small.diskReserveBytes == (24 << 20) / 100 * 7)
        #expect(small.maxJobs == 5)
        #expect(Configuration().outboxLimits(fileSystemBytes: 1 << 40) == OutboxLimits(maxJobs: 100_000, maxReceiptBytes: 2 << 30, diskReserveBytes: 1 << 30))
    }

    @Test func outboxReceiptBytesBelowTheLargestReceipt_isRefused() throws {
        do {
            _ = try BackendConfigurationTests.parse("outbox_max_receipt_bytes = 3M\n", [])
            Issue.record("accepted")
        } catch {
            #expect("\(error)" == "outbox_max_receipt_bytes (3.0 MiB) is less than the largest receipt taken (receipt_max_bytes and spool_max_bytes: 25.0 MiB): such a receipt could never be queued")
        }
        #expect(throws: ConfigurationError.self) { try BackendConfigurationTests.parse("", ["--outbox-max-receipt-bytes", "3M", "--receipt-max-bytes", "1M"]) }
        let c = try BackendConfigurationTests.parse("", ["--outbox-max-receipt-bytes", "3M", "--receipt-max-bytes", "1M", "--spool-max-bytes", "3M"])
        #expect(c.outboxMaxReceiptBytes == 3 << 20)
        do {
            _ = try BackendConfigurationTests.parse("", ["--disk-reserve", "60%"])
            Issue.record("accepted")
        } catch {
            #expect("\(error)".contains("--disk-reserve: must be auto, a size like 256M or 2G, or a percentage from 0% to 50%"), "\(error)")
        }
    }

    @Test(arguments: ["--foreground=yes", "--help=1", "--version=no", "--config="])
    func flagGivenAValue_isAUsageError(_ argument: String) {
        #expect(throws: UsageError.self) { try Configuration.parse(arguments: [argument]) { _ in nil } }
    }

    @Test func flags_winOverTheFile() throws {
        let invocation = try Configuration.parse(arguments: ["--config", "/etc/x.conf", "--concurrency", "7"]) { path in
            #expect(path == "/etc/x.conf")
            return "concurrency = 2\nstate_dir = /srv/expensed/\nserver = https://expenses.example.com/api/\n"
        }
        guard case .run(let configuration) = invocation else {
            Issue.record("expected a run")
            return
        }
        #expect(configuration.concurrency == 7)
        #expect(configuration.stateDirectory == "/srv/expensed")
        #expect(configuration.serverURL == "https://expenses.example.com/api")
    }

    @Test func missingDefaultFile_isFineButMissingNamedFileIsNot() throws {
        #expect(try Configuration.parse(arguments: []) { _ in nil } == .run(Configuration()))
        #expect(throws: ConfigurationError.self) { try Configuration.parse(arguments: ["--config", "/nope"]) { _ in nil } }
    }

    @Test func serverURLWithCredentials_isRefused() {
        var configuration = Configuration()
        #expect(throws: ConfigurationError.self) {
            try configuration.apply(fileText: "server = https://user:secret@example.com\n", path: "c")
        }
    }
}

/// `backend` and each backend's own keys: the values each takes, and the
/// garbage and mismatches it refuses with the key named.
@Suite struct BackendConfigurationTests {
    static func parse(_ text: String, _ flags: [String] = []) throws -> Configuration {
        guard case .run(let configuration) = try Configuration.parse(arguments: ["--config", "x.conf"] + flags, readFile: { _ in text }) else {
            throw ConfigurationError("expected a run")
        }
        return configuration
    }

    @Test func default_isExpenseServer() throws {
        let configuration = try Self.parse("server = https://expenses.example.com/api\n")
        #expect(configuration.backend == .expenseServer)
    }

    /// `resumable_upload_min_bytes`: a size, or `never`; garbage names both.
    @Test func resumableUploadMinBytes_isASizeOrNever() throws {
        #expect(try Self.parse("").backendSettings(baseURL: "http://s", deviceID: "d").resumableMinBytes == 2 << 20)
        #expect(try Self.parse("resumable_upload_min_bytes = 3M\n").resumableUploadMinBytes == 3 << 20)
        #expect(try Self.parse("", ["--resumable-upload-min-bytes", "never"]).backendSettings(baseURL: "http://s", deviceID: "d").resumableMinBytes == nil)
        for garbage in ["banana", "0", "-1", "5G", "", "Never"] {
            #expect(throws: ConfigurationError.self, "\(garbage)") { try Self.parse("resumable_upload_min_bytes = \(garbage)\n") }
            do {
                _ = try Self.parse("", ["--resumable-upload-min-bytes", garbage])
                Issue.record("'\(garbage)' was taken")
            } catch {
                #expect("\(error)".contains("or never"), "\(garbage): \(error)")
            }
        }
    }

    @Test func ihatemoney_withItsKeys() throws {
        let configuration = try Self.parse("""
            backend = ihatemoney
            server = http://127.0.0.1:5000/api/projects/household/
            ihatemoney_payer = Alice
            ihatemoney_payed_for = Bob, Carol ,Bob
            """)
        #expect(configuration.backend == .ihatemoney)
        #expect(configuration.serverURL == "http://127.0.0.1:5000/api/projects/household")
        #expect(configuration.ihatemoneyPayer == "Alice")
        #expect(configuration.ihatemoneyPayedFor == ["Bob", "Carol"])
        #expect(try Self.parse("backend = ihatemoney\nihatemoney_payer = A\nihatemoney_payed_for = all\n").ihatemoneyPayedFor == nil)
        let flags = try Self.parse("", ["--backend", "ihatemoney", "--ihatemoney-payer", "Bob", "--server", "http://h/api/projects/p"])
        #expect(flags.backend == .ihatemoney && flags.ihatemoneyPayer == "Bob")
    }

    @Test(arguments: [
        ("backend = paypal\n", "x.conf:1: backend: must be expense-server, ihatemoney or fava"),
        ("backend = \n", "x.conf:1: backend: must be expense-server, ihatemoney or fava"),
        ("backend = IHATEMONEY\n", "x.conf:1: backend: must be expense-server, ihatemoney or fava"),
        ("ihatemoney_payer = \n", "x.conf:1: ihatemoney_payer: must name a member, not be empty"),
        ("ihatemoney_payed_for = Bob,,Carol\n", "x.conf:1: ihatemoney_payed_for: must name a member, not be empty"),
        ("ihatemoney_payer = Alice\n", "ihatemoney_payer, ihatemoney_payers and ihatemoney_payed_for need backend = ihatemoney (backend is expense-server)"),
        ("backend = ihatemoney\nserver = http://127.0.0.1:5000/api/projects/h\n", "backend = ihatemoney needs ihatemoney_payer, the member who paid"),
        ("backend = ihatemoney\nihatemoney_payer = A\nserver = http://127.0.0.1:5000/household\n", "backend = ihatemoney needs server = <ihatemoney>/api/projects/<project id>"),
        ("backend = ihatemoney\nihatemoney_payer = A\nserver = http://127.0.0.1:5000/api/projects/\n", "backend = ihatemoney needs server = <ihatemoney>/api/projects/<project id>"),
        ("fava_expense_account = Spending:{category}\n", "x.conf:1: fava_expense_account: must be a beancount account, {category} allowed, like Expenses:{category}"),
        ("fava_funding_account = assets:cash\n", "x.conf:1: fava_funding_account: must be a beancount account like Assets:Cash"),
        ("fava_funding_account = Assets:Bank\n", "fava_expense_account and fava_funding_account need backend = fava (backend is expense-server)"),
    ])
    func badBackendValues_areRefusedClearly(_ text: String, _ message: String) {
        #expect(throws: ConfigurationError.self) { try Self.parse(text) }
        do {
            _ = try Self.parse(text)
        } catch {
            #expect("\(error)".hasSuffix(message), "\(error)")
        }
    }

    @Test func badFlagValue_isAUsageErrorNamingTheFlag() {
        do {
            _ = try Self.parse("", ["--backend", "nope"])
            Issue.record("accepted")
        } catch {
            #expect("\(error)".contains("--backend: must be expense-server, ihatemoney or fava"), "\(error)")
        }
    }

    @Test func beancountAccounts_andTheCategoryTemplate() {
        #expect(BeancountAccount.isValid("Expenses:Meals"))
        #expect(BeancountAccount.isValid("Assets:Bank-1:Checking"))
        for bad in ["Expenses", "Expenses:", "Expenses:meals", "Spending:Meals", "Expenses:Mé", "Expenses::X", ""] {
            #expect(!BeancountAccount.isValid(bad), "\(bad)")
        }
        #expect(BeancountAccount.expand("Expenses:{category}", category: "team lunch") == "Expenses:Team-lunch")
        #expect(BeancountAccount.expand("Expenses:{category}", category: nil) == "Expenses:Misc")
        #expect(BeancountAccount.expand("Expenses:{category}", category: "€€") == "Expenses:Misc")
        #expect(BeancountAccount.expand("Expenses:Home:{category}", category: "Travel/Taxi") == "Expenses:Home:Travel-Taxi")
    }
}

/// `accounts_dir` and `admin_group`: read from the file and the flags,
/// garbage refused with the key named.
@Suite struct AccountConfigurationTests {
    @Test func accountKeys_fromTheFileAndFlags() throws {
        guard case .run(let configuration) = try Configuration.parse(arguments: ["--config", "x.conf", "--admin-group", "wheel"], readFile: { _ in
            "accounts_dir = /etc/expensed/accounts/\nadmin_group = adm\ntoken_file = /etc/expensed/token\n"
        }) else { throw ConfigurationError("expected a run") }
        #expect(configuration.accountsDirectory == "/etc/expensed/accounts")
        #expect(configuration.adminGroup == "wheel", "the flag wins")
        #expect(configuration.tokenFile == "/etc/expensed/token")
    }

    @Test(arguments: ["accounts_dir =", "admin_group =", "accounts_dir = /a\naccounts_dir = /b"])
    func badAccountKey_isRefusedWithItsLine(_ text: String) {
        var configuration = Configuration()
        #expect(throws: ConfigurationError.self, "\(text)") { try configuration.apply(fileText: text, path: "c") }
    }

    @Test func accountsWithFava_areRefusedWithTheReason() {
        do {
            _ = try Configuration.parse(arguments: ["--config", "x.conf"]) { _ in "backend = fava\naccounts_dir = /etc/expensed/accounts\n" }
            Issue.record("accepted")
        } catch {
            #expect("\(error)".contains("fava serves one ledger with no users, so accounts could not be kept apart"), "\(error)")
        }
    }

    /// With accounts, each account's payer comes from ihatemoney_payers;
    /// ihatemoney_payer (the default account's) is optional then.
    @Test func accountsWithIhatemoney_takeEachAccountsPayer() throws {
        guard case .run(let configuration) = try Configuration.parse(arguments: ["--config", "x.conf"], readFile: { _ in """
            backend = ihatemoney
            server = http://127.0.0.1:5000/api/projects/household
            accounts_dir = /etc/expensed/accounts
            ihatemoney_payers = alice:Alice,  bob : Bob Smith ,carol.x:Carol
            """ }) else { throw ConfigurationError("expected a run") }
        #expect(configuration.ihatemoneyPayers == ["alice": "Alice", "bob": "Bob Smith", "carol.x": "Carol"])
        #expect(configuration.ihatemoneyPayer == nil)
        guard case .run(let flags) = try Configuration.parse(arguments: [
            "--backend", "ihatemoney", "--server", "http://h/api/projects/p", "--accounts-dir", "/a", "--ihatemoney-payer", "Dave",
            "--ihatemoney-payers", "alice:Alice",
        ], readFile: { _ in nil }) else { throw ConfigurationError("expected a run") }
        #expect(flags.ihatemoneyPayers == ["alice": "Alice"] && flags.ihatemoneyPayer == "Dave")
    }

    @Test(arguments: [
        ("ihatemoney_payers = alice\n", "ihatemoney_payers: must be account:member pairs separated by commas, like alice:Alice, bob:Bob"),
        ("ihatemoney_payers = alice:Alice, bob\n", "ihatemoney_payers: must be account:member pairs separated by commas, like alice:Alice, bob:Bob"),
        ("ihatemoney_payers = \n", "ihatemoney_payers: must be account:member pairs separated by commas, like alice:Alice, bob:Bob"),
        ("ihatemoney_payers = alice:Alice,\n", "ihatemoney_payers: must be account:member pairs separated by commas, like alice:Alice, bob:Bob"),
        ("ihatemoney_payers = :Alice\n", "ihatemoney_payers: '' is not an account name (a file name in accounts_dir, not hidden)"),
        ("ihatemoney_payers = alice:\n", "ihatemoney_payers: must name a member, not be empty"),
        ("ihatemoney_payers = alice:Alice, alice:Bob\n", "ihatemoney_payers: account 'alice' is given twice"),
        ("ihatemoney_payers = .alice:Alice\n", "ihatemoney_payers: '.alice' is not an account name (a file name in accounts_dir, not hidden)"),
        ("ihatemoney_payers = a/b:Alice\n", "ihatemoney_payers: 'a/b' is not an account name (a file name in accounts_dir, not hidden)"),
    ])
    func badPayers_areRefusedWithTheKey(_ line: String, _ message: String) {
        let text = "backend = ihatemoney\nserver = http://h/api/projects/p\naccounts_dir = /a\n" + line
        do {
            _ = try Configuration.parse(arguments: ["--config", "x.conf"]) { _ in text }
            Issue.record("accepted: \(line)")
        } catch {
            #expect("\(error)".hasSuffix("x.conf:4: " + message), "\(error)")
        }
    }

    @Test func payersWithoutAccountsOrIhatemoney_areRefused() {
        for (text, message) in [
            ("backend = ihatemoney\nserver = http://h/api/projects/p\nihatemoney_payer = A\nihatemoney_payers = alice:Alice\n",
             "ihatemoney_payers needs accounts_dir, whose files are its accounts; without it, ihatemoney_payer names the one payer"),
            ("accounts_dir = /a\nihatemoney_payers = alice:Alice\n",
             "ihatemoney_payer, ihatemoney_payers and ihatemoney_payed_for need backend = ihatemoney (backend is expense-server)"),
        ] {
            do {
                _ = try Configuration.parse(arguments: ["--config", "x.conf"]) { _ in text }
                Issue.record("accepted: \(text)")
            } catch {
                #expect("\(error)".hasSuffix(message), "\(error)")
            }
        }
    }

    @Test func accountFlagWithoutValue_isAUsageError() {
        #expect(throws: UsageError.self) { try Configuration.parse(arguments: ["--accounts-dir"]) { _ in nil } }
        #expect(throws: UsageError.self) { try Configuration.parse(arguments: ["--accounts-dir="]) { _ in nil } }
    }
}

/// What each backend needs before it creates an expense, as the
/// configuration's backend declares it (docs/backends.md, "Incomplete
/// expenses"): ihatemoney's BillForm requires an amount and a date, a
/// beancount transaction an amount in a currency on a date; expense-server
/// takes a receipt alone.
@Suite struct BackendRequiredFieldsTests {
    @Test(arguments: [
        (BackendKind.expenseServer, [String](), nil as String?),
        (.ihatemoney, ["amount", "date"], "ihatemoney needs an amount and a date to create an expense"),
        (.fava, ["amount", "currency", "date"], "fava needs an amount, a currency and a date to create an expense"),
    ])
    func eachBackend_declaresWhatACreateNeeds(_ backend: BackendKind, _ names: [String], _ rule: String?) {
        var configuration = Configuration()
        configuration.backend = backend
        #expect(configuration.requiredFields.names == names)
        #expect(configuration.requiredFields.rule == rule)
        let made = configuration.makeBackend(baseURL: "http://127.0.0.1:1/api/projects/p", deviceID: "d")
        #expect(made.requiredFields == configuration.requiredFields, "the backend itself says the same")
    }
}
