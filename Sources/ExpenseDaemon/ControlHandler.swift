import ExpenseCore
import Posix

/// Carries out control requests against the store and answers them.
/// Errors become `{id, error}` lines; the daemon carries on.
final class ControlHandler: Sendable {
    let store: Store
    let server: ControlServer
    let publisher: StatusPublisher
    let logger: Logger
    let configuration: Configuration
    let receiptCopies = BlockingExecutor(label: "receipt-copy")
    /// The sync engine; nil when no server is configured.
    let drainer: Drainer?

    init(store: Store, server: ControlServer, publisher: StatusPublisher, logger: Logger, configuration: Configuration, drainer: Drainer?) {
        self.store = store
        self.server = server
        self.publisher = publisher
        self.logger = logger
        self.configuration = configuration
        self.drainer = drainer
    }

    /// Work was queued or released: the drainer should look now.
    private func wakeDrainer() { drainer?.trigger() }

    /// Handles requests until the server's stream ends, each in its own
    /// child task (at most one per connection is in flight). A discarding
    /// group frees each child as it ends; a plain one would keep every
    /// finished request until the group is drained.
    func run() async {
        await withDiscardingTaskGroup { group in
            for await incoming in server.requests {
                group.addTask { [self] in
                    let (response, action) = await answer(incoming)
                    server.respond(to: incoming.connection, response, then: action)
                }
            }
        }
    }

    func answer(_ incoming: IncomingRequest) async -> (JSONValue, ResponseAction) {
        let id = incoming.request.id
        do {
            switch incoming.request.command {
            case .watch:
                // The version before the read: a summary published meanwhile
                // may be newer than the one answered, so it is sent as well.
                let seen = server.publishedVersion()
                let summary = try await publisher.current()
                return (controlSuccess(id: id, result: summary.json), .watch(id: id, seenVersion: seen))
            default:
                return (controlSuccess(id: id, result: try await perform(incoming)), .next)
            }
        } catch {
            return (failure(error, incoming).json, .next)
        }
    }

    /// Takes an `add` without a receipt on the socket thread: its commit is
    /// the only wait, and the answer goes out from the store's thread, two
    /// thread hand-offs fewer than through a task. Everything else declines.
    func answerDirectly(_ incoming: IncomingRequest) -> Bool {
        guard case .add(let fields, let clientID, false) = incoming.request.command else { return false }
        store.enqueueCreate(fields: fields, clientID: clientID ?? ClientID.make(), receipt: nil, now: Clock.wallMilliseconds) { [self] result in
            switch result {
            case .success(let result):
                server.respond(to: incoming.connection, controlSuccess(id: incoming.request.id, result: added(result)))
            case .failure(let error):
                server.respond(to: incoming.connection, failure(error, incoming).json)
            }
        }
        return true
    }

    /// The error line for what went wrong with `incoming`; unexpected
    /// errors are logged here, once.
    private func failure(_ error: Error, _ incoming: IncomingRequest) -> ControlFailure {
        let id = incoming.request.id
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
            logger.error("Failed to carry out '\(incoming.request.command.name)': \(error)")
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

    private func perform(_ incoming: IncomingRequest) async throws -> JSONValue {
        switch incoming.request.command {
        case .add(let fields, let clientID, _):
            return try await add(fields: fields, clientID: clientID ?? ClientID.make(), receipt: incoming.receipt)
        case .list:
            return ["expenses": .array(try await store.views().map(\.json))]
        case .show(let ref):
            return try await store.view(ref: ref).detailJSON()
        case .retry(let ref):
            let view = try await store.retry(ref: ref)
            logger.notice("Retry requested", transactionID: view.transactionID)
            publisher.markChanged()
            wakeDrainer()
            return view.detailJSON()
        case .discard(let ref):
            let (transactionID, removed) = try await store.discard(ref: ref)
            logger.notice("Discarded \(removed) pending job(s) on request", transactionID: transactionID)
            publisher.markChanged()
            return ["transaction_id": .string(transactionID), "discarded": .integer(removed)]
        case .status:
            return try await status()
        case .watch:
            preconditionFailure("watch is answered before perform is called")
        case .sync(let refresh):
            guard let drainer else { throw ControlFailure(.invalidState, "no server is configured; there is nothing to sync with") }
            drainer.sync(refresh: refresh)
            return ["triggered": true, "refresh": .bool(refresh)]
        case .stats:
            return try await Drainer.statistics(store: store, sinceStart: drainer?.sinceStart() ?? SyncStats())
        case .edit(let ref, let fields):
            let view = try await store.edit(ref: ref, fields: fields, now: Clock.wallMilliseconds)
            logger.info("Edited \(fields.setNames.joined(separator: ", "))", transactionID: view.transactionID)
            publisher.markChanged()
            wakeDrainer()
            return view.detailJSON()
        case .delete(let ref):
            let result = try await store.delete(ref: ref, now: Clock.wallMilliseconds)
            logger.info(result.droppedLocally ? "Deleted before it reached the server; nothing will be sent" : "Delete queued",
                        transactionID: result.transactionID)
            publisher.markChanged()
            wakeDrainer()
            return ["transaction_id": .string(result.transactionID), "sent_nothing": .bool(result.droppedLocally)]
        case .resolve(let ref, let takeMine):
            let view = try await store.resolve(ref: ref, takeMine: takeMine, now: Clock.wallMilliseconds)
            logger.info("Conflict resolved in favour of \(takeMine ? "this device's values" : "the server's values")", transactionID: view.transactionID)
            publisher.markChanged()
            wakeDrainer()
            return view.detailJSON()
        }
    }

    private func add(fields: ExpenseFields, clientID: String, receipt: FileDescriptor?) async throws -> JSONValue {
        var staged: StagedReceipt?
        if let receipt {
            let maxBytes = configuration.receiptMaxBytes
            staged = try await receiptCopies.run { [store] in
                try store.receipts.stage(from: receipt, jobUUID: ClientID.make(), maxBytes: maxBytes)
            }
            FaultPoints.hit("after-receipt-staged")
        }
        return added(try await store.enqueueCreate(fields: fields, clientID: clientID, receipt: staged, now: Clock.wallMilliseconds))
    }

    /// After an add committed: log it, tell watchers and the drainer, and answer.
    private func added(_ result: EnqueueResult) -> JSONValue {
        if result.isNew {
            logger.info("Queued expense\(result.hasReceipt ? " with receipt" : "")", transactionID: result.transactionID,
                        jobUUID: result.clientID, messageID: .expenseQueued)
            publisher.markChanged()
            wakeDrainer()
        }
        return [
            "transaction_id": .string(result.transactionID),
            "client_id": .string(result.clientID),
            "state": .string(result.state.rawValue),
            "receipt": .string(result.hasReceipt ? "pending" : "none"),
            "duplicate": .bool(!result.isNew),
        ]
    }

    private func status() async throws -> JSONValue {
        let summary = try await publisher.current()
        guard case .object(var object) = summary.json else { return summary.json }
        object["line"] = .string(summary.line(nowMilliseconds: Clock.wallMilliseconds))
        object["server_url"] = .string(configuration.serverURL)
        object["state_dir"] = .string(configuration.stateDirectory)
        object["spool_dir"] = .string(configuration.spoolDirectory)
        object["device_id"] = .string(store.deviceID)
        if drainer != nil {
            // As of the last contact: `server` above says what it is now.
            let health = publisher.serverHealth
            func time(_ milliseconds: Int64?) -> JSONValue { milliseconds.map { .string(Timestamp.format(milliseconds: $0)) } ?? .null }
            object["last_contact_at"] = time(health.lastContactMilliseconds)
            object["last_error_class"] = .string(health.lastError?.errorClass)
            object["last_error"] = .string(health.lastError?.message)
            object["last_error_at"] = time(health.lastError?.milliseconds)
        }
        return .object(object)
    }
}

extension ControlRequest.Command {
    /// The op's name, for log lines.
    var name: String {
        switch self {
        case .add: "add"
        case .list: "list"
        case .show: "show"
        case .retry: "retry"
        case .discard: "discard"
        case .status: "status"
        case .watch: "watch"
        case .sync: "sync"
        case .stats: "stats"
        case .edit: "edit"
        case .delete: "delete"
        case .resolve: "resolve"
        }
    }
}
