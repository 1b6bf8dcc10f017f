import ControlProtocol
import ControlSocket
import DaemonSupport
import Digest
import ExpenseCore
import OutboxStore
import Posix
import SyncEngine

/// Carries out control requests against the store and answers them.
/// Errors become `{id, error}` lines; the daemon carries on.
final class ControlHandler: Sendable {
    let store: Store
    let server: ControlServer
    let publisher: StatusPublisher
    let logger: Logger
    let settings: Settings
    let receiptCopies = BlockingExecutor(label: "receipt-copy")
    /// The sync engine; nil when no server is configured.
    let drainer: Drainer?
    /// Whose expenses each caller's requests are.
    let callers: CallerAccounts
    /// Says in the journal when adds start being refused for room, and when
    /// they are taken again.
    let roomLog: RoomLog
    /// The receipts' reader; nil with `reading = off`.
    let readings: ReceiptReadings?

    /// What the operations need to know of the configuration.
    struct Settings: Sendable, Equatable {
        var receiptMaxBytes: Int
        /// For `status`: where things are.
        var serverURL: String?
        var stateDirectory: String
        var spoolDirectory: String?
        /// How long a receipt-only expense's create waits for its reading (`show` says until when); nil when it does not.
        var readingWaitMilliseconds: Int64? = nil
    }

    init(store: Store, server: ControlServer, publisher: StatusPublisher, logger: Logger, settings: Settings, drainer: Drainer?,
         callers: CallerAccounts, roomLog: RoomLog, readings: ReceiptReadings? = nil, queued: @escaping @Sendable () -> Void = {},
         roomFreed: @escaping @Sendable () -> Void = {}) {
        self.callers = callers
        self.roomLog = roomLog
        self.roomFreed = roomFreed
        self.readings = readings
        self.queued = queued
        self.store = store
        self.server = server
        self.publisher = publisher
        self.logger = logger
        self.settings = settings
        self.drainer = drainer
    }

    /// Work was queued or released: the drainer should look now, and the
    /// receipt copier and reader too when an upload may have been queued
    /// (after every add, their look was a hop to the store's queue).
    private func wakeDrainer(uploadQueued: Bool) {
        if uploadQueued { queued() }
        drainer?.trigger()
    }
    /// Work was queued (a receipt may wait for its copy).
    private let queued: @Sendable () -> Void
    /// Pending work was removed: the outbox may have room again.
    private let roomFreed: @Sendable () -> Void

    /// Handles requests until the server's stream ends, each in its own
    /// child task (at most one per connection is in flight). A discarding
    /// group frees each child as it ends; a plain one would keep every
    /// finished request until the group is drained.
    func run() async {
        await withDiscardingTaskGroup { group in
            for await incoming in server.requests {
                group.addTask { [self] in
                    let (response, action, descriptor) = await answer(incoming)
                    server.respond(to: incoming.connection, response, then: action, passing: descriptor)
                }
            }
        }
    }

    func answer(_ incoming: IncomingRequest) async -> (ControlResponse, ResponseAction, FileDescriptor?) {
        let id = incoming.request.id
        do {
            switch incoming.request.command {
            case .receipt(let ref, let original):
                let scope = try await callers.scope(for: incoming.peer, incoming.request.accounts).scope
                let (result, descriptor) = try await original ? originalReceipt(ref: ref, in: scope) : receipt(ref: ref, in: scope)
                logger.info("Receipt handed out (\(result.size) bytes, from \(result.source == .server ? "the server" : "the daemon's copy"))",
                            transactionID: result.transactionID)
                return (ControlResponse(id: id, result), .next, descriptor)
            case .watch(let changes):
                let scope = try await callers.scope(for: incoming.peer, incoming.request.accounts).scope
                // Published from now on; then the version before the read: a
                // summary published meanwhile may be newer than the one
                // answered, so it is sent as well.
                // A watcher of changes gets one summary, this one: no more are made for it.
                if !changes { publisher.watch(scope) }
                let seen = server.publishedVersion()
                let summary = try await publisher.current(scope)
                return (ControlResponse(id: id, summary), .watch(id: id, seenVersion: seen, scope: scope, changes: changes), nil)
            default:
                return (ControlResponse(id: id, try await perform(incoming)), .next, nil)
            }
        } catch {
            return (.failure(failure(error, incoming)), .next, nil)
        }
    }

    /// Takes an `add` without a receipt on the socket thread: its commit is
    /// the only wait, and the answer goes out from the store's thread, two
    /// thread hand-offs fewer than through a task. Everything else declines.
    func answerDirectly(_ incoming: IncomingRequest) -> Bool {
        guard case .add(let fields, let clientID, false, _) = incoming.request.command else { return false }
        let account: String
        do {
            // A caller not in the cache is looked up off this thread (perform).
            guard let known = try callers.knownScope(for: incoming.peer, incoming.request.accounts) else { return false }
            account = try addAccount(known, incoming)
        } catch {
            server.respond(to: incoming.connection, .failure(failure(error, incoming)))
            return true
        }
        store.enqueueCreate(fields: fields, clientID: clientID ?? ClientID.make(milliseconds: Clock.wallMilliseconds), receipt: nil, now: Clock.wallMilliseconds,
                            account: account) { [self] result in
            switch result {
            case .success(let result):
                server.respond(to: incoming.connection, ControlResponse(id: incoming.request.id, added(result, account: account)))
            case .failure(let error):
                server.respond(to: incoming.connection, .failure(failure(error, incoming)))
            }
        }
        return true
    }

    /// The error line for what went wrong with `incoming`; unexpected
    /// errors are logged here, once.
    private func failure(_ error: Error, _ incoming: IncomingRequest) -> ControlFailure {
        let id = incoming.request.id
        if let refusal = store.refusal(forFailure: error) {
            // Counted and said once per refused request; a storm of them
            // is the journal's at debug level only after the first of a kind.
            store.countRefusal(refusal)
            // A headroom given up, and room back meanwhile: the next add need not wait for the drain to notice.
            store.restoreHeadroom()
            publisher.metrics?.poke()
            roomLog.refused(refusal, what: "'\(incoming.request.command.operation.rawValue)'")
            return ControlFailure(id: id, .outboxFull, refusal.message)
        }
        switch error {
        case var failure as ControlFailure:
            failure.id = id
            return failure
        case let error as FieldFailure:
            return ControlFailure(id: id, .invalidField, "\(error.field): \(error.reason)", field: error.field)
        case let error as StoreError:
            return ControlFailure(id: id, code(for: error), error.message)
        case let error as ReceiptError:
            switch error {
            case .tooLarge: return ControlFailure(id: id, .receiptTooLarge, error.description, field: "receipt")
            case .invalid, .truncated: return ControlFailure(id: id, .receiptInvalid, error.description, field: "receipt")
            case .io:
                logger.error("Failed to store a receipt: \(error)")
                return ControlFailure(id: id, .storageFailed, error.description)
            }
        default:
            logger.error("Failed to carry out '\(incoming.request.command.operation.rawValue)': \(error)")
            return ControlFailure(id: id, .storageFailed, "the daemon could not store this: \(error)")
        }
    }

    private func code(for error: StoreError) -> ControlErrorCode {
        switch error.code {
        case .notFound: .notFound
        case .ambiguous: .ambiguousID
        case .invalidState: .invalidState
        default: .storageFailed
        }
    }

    /// The one account an add files its expense under.
    private func addAccount(_ found: (scope: AccountScope, own: CallerAccounts.Resolution), _ incoming: IncomingRequest) throws -> String {
        switch found.scope {
        case .account(let account):
            return account
        case .all where incoming.request.accounts == .all:
            throw ControlFailure(.invalidField, "an expense is added to one account: name it with account, not all_accounts", field: "all_accounts")
        case .all:
            throw ControlFailure(.noAccount, callers.reason(forCaller: found.own) + "; or name the account to add to (--account NAME)")
        }
    }

    private func perform(_ incoming: IncomingRequest) async throws -> any ControlResult {
        let found = try await callers.scope(for: incoming.peer, incoming.request.accounts)
        if case .add(let fields, let clientID, _, let receiptPath) = incoming.request.command {
            return try await add(fields: fields, clientID: clientID ?? ClientID.make(milliseconds: Clock.wallMilliseconds), receipt: incoming.receipt, receiptPath: receiptPath,
                                 account: addAccount(found, incoming))
        }
        // Every other op acts in the caller's scope: an expense of another
        // account is "no such expense" to it.
        let scope = found.scope
        switch incoming.request.command {
        case .add:
            preconditionFailure("handled above")
        case .list(let query):
            let page = try await store.list(query, in: scope)
            let required = publisher.requiredFields
            return ExpenseList(expenses: page.views.map { view in
                                   var summary = ExpenseSummary(view)
                                   summary.missing = required.missing(whileHeld: view)
                                   return summary
                               }, hasMore: page.hasMore, totals: page.totals,
                               withoutAmount: page.withoutAmount)
        case .show(let ref):
            let view = try await store.view(ref: ref, in: scope)
            var detail = detail(view)
            detail.original = try await store.originals(of: view.transactionID).first.map {
                ExpenseDetail.Original(kind: $0.kind, size: $0.size, sha256: $0.sha256.map(Hex.encode), receivedMilliseconds: $0.receivedAt,
                                       removedMilliseconds: $0.removedAt)
            }
            detail.reading = try await store.readingToDo(of: view.transactionID).map { reading in
                let createQueued = view.jobs.contains { $0.kind == .create && $0.state == .queued }
                return ExpenseDetail.Reading(queuedMilliseconds: reading.queuedMilliseconds,
                                             createWaitsUntilMilliseconds: settings.readingWaitMilliseconds.flatMap { wait in
                                                 // Past its end, the create waits no more: nothing to say.
                                                 let end = reading.queuedMilliseconds + wait
                                                 return reading.receiptOnly && createQueued && end > Clock.wallMilliseconds ? end : nil
                                             })
            }
            return detail
        case .retry(let ref):
            let view = try await store.retry(ref: ref, in: scope)
            logger.notice("Retry requested", transactionID: view.transactionID)
            publisher.markChanged()
            wakeDrainer(uploadQueued: true)
            return detail(view)
        case .discard(let ref):
            let (transactionID, removed) = try await store.discard(ref: ref, in: scope)
            logger.notice("Discarded \(removed) pending job(s) on request", transactionID: transactionID)
            publisher.markChanged()
            roomFreed()
            return DiscardResult(transactionID: transactionID, discarded: removed)
        case .status:
            return try await status(scope)
        case .watch:
            preconditionFailure("watch is answered before perform is called")
        case .sync(let refresh, let now):
            guard let drainer else { throw ControlFailure(.invalidState, "no server is configured; there is nothing to sync with") }
            drainer.sync(refresh: refresh, now: now, scope: scope)
            return SyncResult(refresh: refresh, now: now)
        case .stats:
            return try await statistics(scope)
        case .edit(let ref, let fields, _):
            let view: ExpenseView
            if let receipt = incoming.receipt {
                view = try await store.attachReceipt(ref: ref, try await stage(receipt, bringing: { .attach(receiptBytes: $0, copied: false) }), fields: fields, now: Clock.wallMilliseconds, in: scope)
                logger.info("Receipt attached\(fields.isEmpty ? "" : "; edited " + fields.setNames.joined(separator: ", "))", transactionID: view.transactionID)
                if let held = view.jobs.last(where: { $0.lastErrorClass == Store.sameReceiptClass })?.lastError {
                    logger.warning("Expense is held: \(held)", transactionID: view.transactionID)
                }
            } else {
                view = try await store.edit(ref: ref, fields: fields, now: Clock.wallMilliseconds, in: scope)
                logger.info("Edited \(fields.setNames.joined(separator: ", "))", transactionID: view.transactionID)
            }
            publisher.markChanged()
            wakeDrainer(uploadQueued: incoming.receipt != nil)
            return detail(view)
        case .delete(let ref):
            let result = try await store.delete(ref: ref, now: Clock.wallMilliseconds, in: scope)
            logger.info(result.droppedLocally ? "Deleted before it reached the server; nothing will be sent" : "Delete queued",
                        transactionID: result.transactionID)
            publisher.markChanged()
            wakeDrainer(uploadQueued: false)
            if result.droppedLocally { roomFreed() }
            return DeleteResult(transactionID: result.transactionID, sentNothing: result.droppedLocally)
        case .receipt:
            preconditionFailure("receipt is answered before perform is called")
        case .read(let ref):
            return try await readAgain(ref: ref, in: scope)
        case .resolve(let ref, let takeMine):
            let view = try await store.resolve(ref: ref, takeMine: takeMine, now: Clock.wallMilliseconds, in: scope)
            logger.info("Conflict resolved in favour of \(takeMine ? "this device's values" : "the server's values")", transactionID: view.transactionID)
            publisher.markChanged()
            wakeDrainer(uploadQueued: false)
            return detail(view)
        }
    }

    /// An expense as `show`, `edit`, `retry` and `resolve` answer it, with
    /// the fields the backend still needs while it is held as incomplete.
    private func detail(_ view: ExpenseView) -> ExpenseDetail {
        var detail = ExpenseDetail(view)
        detail.summary.missing = publisher.requiredFields.missing(whileHeld: view)
        return detail
    }

    private func add(fields: ExpenseFields, clientID: String, receipt: FileDescriptor?, receiptPath: String?, account: String) async throws -> AddResult {
        var staged: StagedReceipt?
        if let receipt {
            staged = try await stage(receipt, bringing: { .add(receiptBytes: $0, copied: false) }, retrying: clientID)
            FaultPoints.hit("after-receipt-staged")
        }
        let result = try await store.enqueueCreate(fields: fields, clientID: clientID, receipt: staged, now: Clock.wallMilliseconds,
                                                   account: account, receiptPath: receiptPath)
        return added(result, account: account, receiptPath: staged == nil ? nil : receiptPath)
    }

    /// After an add committed: log it, tell watchers and the drainer, and answer.
    private func added(_ result: EnqueueResult, account: String, receiptPath: String? = nil) -> AddResult {
        if result.isNew {
            roomLog.admitted()
            let source = receiptPath.map { SourceRecord.file(path: $0).shown }
            logger.info("Queued expense\(result.hasReceipt ? " with receipt" : "")\(source.map { " '\($0.name)'" } ?? "")", transactionID: result.transactionID,
                        jobUUID: result.clientID, account: account, source: source?.compact, messageID: .expenseQueued)
            if let held = result.held {
                logger.warning("Expense is held: \(held)", transactionID: result.transactionID, account: account)
            }
            publisher.markChanged()
            wakeDrainer(uploadQueued: result.hasReceipt)
        }
        return AddResult(transactionID: result.transactionID, clientID: result.clientID, state: result.state,
                         receipt: result.hasReceipt ? .pending : .none, duplicate: !result.isNew)
    }

    private func status(_ scope: AccountScope) async throws -> StatusReport {
        let summary = try await publisher.current(scope)
        var contact: StatusReport.ServerContact?
        if let record = publisher.serverRecord?.current {
            // As of the last contact: the summary's `server` says what it is
            // now. One account is told only of its own errors (and outages).
            let lastError: ServerHealth.Failure?
            switch scope {
            case .all: lastError = record.health.lastError
            case .account(let account): lastError = record.lastError(of: account)
            }
            contact = Self.contact(lastContact: record.health.lastContactMilliseconds, lastError)
        }
        var report = StatusReport(summary: summary, line: summary.line(nowMilliseconds: Clock.wallMilliseconds), serverURL: settings.serverURL,
                                  stateDirectory: settings.stateDirectory, spoolDirectory: settings.spoolDirectory,
                                  deviceID: store.deviceID, contact: contact)
        report.outbox = try? await store.roomState()
        if let hold = publisher.meteredRecord?.current {
            report.metered = StatusReport.MeteredState(network: hold.link?.name, mode: hold.mode.rawValue, hold: hold.explanation)
        }
        report.incompleteRule = publisher.requiredFields.rule
        // With accounts: whose the summary is, or each account's part.
        if callers.tokens.directory != nil {
            switch scope {
            case .account(let account): report.account = account
            case .all: report.accounts = try await accountStates()
            }
        }
        return report
    }

    /// Every account's queue and credentials: those with a token file, and
    /// those with jobs or a pause.
    private func accountStates() async throws -> [StatusReport.AccountState] {
        let queues = try await store.accountSummaries()
        let record = publisher.serverRecord?.current
        var names = Set(queues.keys).union(callers.tokens.configuredAccounts())
        if let record { names.formUnion(record.pausedAccounts) }
        return names.sorted().map { account in
            var summary = queues[account] ?? QueueSummary()
            summary.server = record?.state(of: account) ?? .notConfigured
            return StatusReport.AccountState(account: account, summary: summary, tokenProblem: callers.tokens.tokenProblem(of: account),
                                             lastError: record.flatMap { $0.accountErrors[account] }.map { Self.contact(lastContact: nil, $0) })
        }
    }

    private static func contact(lastContact: Int64?, _ failure: ServerHealth.Failure?) -> StatusReport.ServerContact {
        StatusReport.ServerContact(lastContactMilliseconds: lastContact, lastErrorClass: failure?.errorClass, lastError: failure?.message,
                                   lastErrorMilliseconds: failure?.milliseconds)
    }
}

extension ControlHandler {
    /// The figures of the metrics file: every account's.
    func metricsText() async -> String? {
        guard let summary = try? await publisher.current(.all), let stats = try? await statistics(.all) else { return nil }
        return MetricsText.render(summary: summary, stats: stats, room: try? await store.roomState())
    }

    /// `stats`: latency and failures since start (the engine's) and in
    /// total (the store's, so they exist even without a server).
    func statistics(_ scope: AccountScope) async throws -> StatsReport {
        let sinceStart = drainer?.sinceStart(in: scope) ?? SyncStats()
        let totals = try await store.totals(in: scope)
        let refusals = try await store.refusalCounts()
        return StatsReport(
            sinceStart: .init(applied: sinceStart.applied, latency: sinceStart.latency, failures: sinceStart.failures, refusals: refusals.sinceStart),
            total: .init(applied: totals.latencyBuckets.values.reduce(0, +), latency: LatencySummary(histogram: totals.latencyBuckets),
                         failures: totals.failures, refusals: refusals.total))
    }
}
