import ControlSocket
import ExpenseCore
import ExpenseServerBackend
import FavaBackend
import IhatemoneyBackend
import Posix
import ReceiptCopy
import ReceiptReading
import SpoolIntake
import SyncEngine

// The configuration mapped into each subsystem's own settings: no
// subsystem sees the whole Configuration.
extension Configuration {
    var syncSettings: SyncSettings {
        var settings = SyncSettings()
        settings.concurrency = concurrency
        settings.drainIntervalMilliseconds = drainIntervalMilliseconds
        settings.refreshIntervalMilliseconds = refreshIntervalMilliseconds
        settings.backoffBaseMilliseconds = backoffBaseMilliseconds
        settings.backoffCapMilliseconds = backoffCapMilliseconds
        settings.maxAttempts = maxAttempts
        settings.tokenFile = tokenFile
        settings.longestRequestMilliseconds = connectTimeoutMilliseconds + requestTimeoutMilliseconds
        settings.settlesInterruptedCreates = backend.resendsAfterLookup
        settings.readingWaitMilliseconds = effectiveReadingWait
        return settings
    }

    /// How long a receipt-only create waits for its reading; nil when
    /// receipts are not read or nothing waits (`reading_wait = 0`).
    var effectiveReadingWait: Int64? { reading && readingWaitMilliseconds > 0 ? readingWaitMilliseconds : nil }

    /// expense-server's settings, with this install's device id (the store's).
    func backendSettings(baseURL: String, deviceID: String) -> ExpenseServerBackend.Settings {
        var settings = ExpenseServerBackend.Settings(baseURL: baseURL, connections: concurrency, connectTimeoutMilliseconds: connectTimeoutMilliseconds,
                                                     requestTimeoutMilliseconds: requestTimeoutMilliseconds, deviceID: deviceID)
        settings.caFile = caFile
        settings.receiptMaxBytes = receiptMaxBytes
        settings.resumableMinBytes = resumableUploadMinBytes
        return settings
    }

    /// The backend `backend` names, at `baseURL`.
    func makeBackend(baseURL: String, deviceID: String, uploads: (any UploadRecorder)? = nil) -> any SyncBackend {
        switch backend {
        case .expenseServer:
            return ExpenseServerBackend(settings: backendSettings(baseURL: baseURL, deviceID: deviceID), uploads: uploads)
        case .ihatemoney:
            // checkBackend() made sure of the project id, and of the payer without accounts.
            return IhatemoneyBackend(settings: IhatemoneyBackend.Settings(
                projectURL: baseURL, projectID: IhatemoneyURL.projectID(of: baseURL) ?? "", payer: ihatemoneyPayer,
                payers: accountsDirectory == nil ? nil : ihatemoneyPayers,
                payedFor: ihatemoneyPayedFor, connections: concurrency, connectTimeoutMilliseconds: connectTimeoutMilliseconds,
                requestTimeoutMilliseconds: requestTimeoutMilliseconds, keptReceiptsDirectory: "\(stateDirectory)/kept-receipts"))
        case .fava:
            return FavaBackend(settings: FavaBackend.Settings(
                baseURL: baseURL, expenseAccountTemplate: favaExpenseAccount, fundingAccount: favaFundingAccount,
                connectTimeoutMilliseconds: connectTimeoutMilliseconds, requestTimeoutMilliseconds: requestTimeoutMilliseconds))
        }
    }

    /// What the configured backend needs of an expense before it creates
    /// it (held as incomplete until then), known without a server too, so
    /// that `status` and `list` say which expenses will wait.
    var requiredFields: RequiredFields {
        switch backend {
        case .expenseServer: ExpenseServerBackend.requiredFields
        case .ihatemoney: IhatemoneyBackend.requiredFields
        case .fava: FavaBackend.requiredFields
        }
    }

    /// The sandboxed decoder that makes receipts' legible copies; a test's
    /// fault point for it comes from `EXPENSED_DECODER_FAULT`.
    var receiptDecoderRun: ReceiptDecoder {
        var settings = CopySettings()
        settings.maxEdge = receiptMaxEdge
        settings.maxPixels = receiptMaxPixels
        settings.deadlineMilliseconds = receiptDecodeTimeoutMilliseconds
        let executable = receiptDecoder ?? ReceiptDecoder.besides(FileSystem.executablePath ?? CommandLine.arguments[0])
        let fault = Environment["EXPENSED_DECODER_FAULT"].map { ["EXPENSED_DECODER_FAULT": $0] } ?? [:]
        return ReceiptDecoder(executable: executable, settings: settings, environment: fault)
    }

    /// The sandboxed reader of receipts' text (docs/receipts.md,
    /// "Reading"): the same decoder as ``receiptDecoderRun``, with its
    /// limits, in reading mode.
    var receiptReaderRun: ReceiptReader {
        var settings = ReadSettings()
        settings.languages = receiptLanguages
        settings.tessdata = receiptTessdata
        settings.maxPixels = receiptMaxPixels
        settings.deadlineMilliseconds = readingTimeoutMilliseconds
        let copies = receiptDecoderRun
        return ReceiptReader(executable: copies.executable, settings: settings, environment: copies.environment)
    }

    /// What the parser is told, but the account's merchants and the day a
    /// receipt was received, which each reading adds: the date order
    /// `receipt_date_order` gives, or the locale's (`dateFormat`, the
    /// locale's `D_FMT`, nil when it has none).
    func readingSettings(localeDateFormat: String?) -> ReadingSettings {
        ReadingSettings(dateOrder: receiptDateOrder ?? localeDateFormat.flatMap(DateOrder.init(dateFormat:)), defaultCurrency: receiptCurrency)
    }

    /// Why receipts cannot be read as configured (a language's data is not
    /// installed, naming its Debian package), or nil.
    var receiptReadingProblem: String? {
        guard reading else { return nil }
        return ReadingLanguages.missing(receiptLanguages, in: receiptTessdata).map { "Refusing to start: \($0)" }
    }

    /// How a date that reads two ways will be read, for the start-up log.
    func dateOrderDescription(localeDateFormat: String?, localeName: String, isLocaleInstalled: Bool = true) -> String {
        if let order = receiptDateOrder { return "Receipt dates like 03/04/2026 are read \(order.rawValue) (receipt_date_order)" }
        if let order = localeDateFormat.flatMap(DateOrder.init(dateFormat:)) {
            return "Receipt dates like 03/04/2026 are read \(order.rawValue), as the locale \(localeName) writes dates (receipt_date_order = locale)"
        }
        let why = isLocaleInstalled ? "the locale \(localeName) gives no day-first or month-first order"
            : "the locale \(localeName) is not installed (locale -a lists those that are)"
        return "Receipt dates like 03/04/2026 are not suggested: \(why); set receipt_date_order"
    }

    var controlHandlerSettings: ControlHandler.Settings {
        ControlHandler.Settings(receiptMaxBytes: receiptMaxBytes, serverURL: serverURL, stateDirectory: stateDirectory,
                                spoolDirectory: spoolDirectory,
                                readingWaitMilliseconds: effectiveReadingWait)
    }

    var spoolSettings: SpoolSettings {
        let scanInterval: SpoolScanInterval = switch spoolScanIntervalMilliseconds {
        case nil: .automatic
        case 0: .never
        case let milliseconds?: .every(milliseconds: milliseconds)
        }
        return SpoolSettings(maxBytes: spoolMaxBytes, settleMilliseconds: spoolSettleMilliseconds,
                             sidecarWindowMilliseconds: spoolSidecarWindowMilliseconds, scanInterval: scanInterval)
    }

    /// The largest receipt an add or the spool takes.
    var largestReceipt: Int { max(receiptMaxBytes, spoolMaxBytes) }

    /// The outbox's limits as configured; sizes left to `auto` are
    /// derived from the state directory's file system at start.
    var outboxLimitSettings: OutboxLimitSettings {
        OutboxLimitSettings(maxJobs: outboxMaxJobs, maxReceiptBytes: outboxMaxReceiptBytes, diskReserve: diskReserve)
    }

    /// The limits for a state directory on a file system of
    /// `fileSystemBytes`: an `auto` receipt-byte limit is never below the
    /// largest receipt taken, which could otherwise never be queued.
    func outboxLimits(fileSystemBytes: Int64) -> OutboxLimits {
        var limits = outboxLimitSettings.resolve(fileSystemBytes: fileSystemBytes)
        if outboxMaxReceiptBytes == nil { limits.maxReceiptBytes = max(limits.maxReceiptBytes, Int64(largestReceipt)) }
        return limits
    }

    var controlLimits: ControlLimits {
        var limits = ControlLimits()
        limits.maxConnections = controlMaxConnections
        limits.idleTimeoutMilliseconds = controlIdleTimeoutMilliseconds
        limits.lineMaxBytes = controlLineMaxBytes
        return limits
    }
}
