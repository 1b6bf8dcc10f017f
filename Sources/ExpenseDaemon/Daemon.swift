import ControlSocket
import DaemonSupport
import ExpenseCore
import ExpenseServerBackend
import OutboxStore
import Posix
import SpoolIntake
import SyncEngine
import Synchronization
import Systemd

/// `expensed`'s life, top to bottom: parse, trap signals, lock the state
/// directory, open and reconcile the store, bind the socket, tell systemd
/// we are ready, serve until a signal, stop gracefully.
public enum Daemon {
    public static func main(arguments: [String]) async -> Int32 {
        // Signals first, before any thread exists, so none is lost. A
        // parent may have left them blocked (the mask survives exec).
        CurrentProcess.unblockSignals([Signals.terminate, Signals.interrupt, Signals.hangUp])
        let signals: Signals
        do {
            signals = try Signals(trapping: [Signals.terminate, Signals.interrupt, Signals.hangUp])
        } catch {
            printError("Failed to install signal handlers: \(error)")
            return ExitStatus.osError.rawValue
        }

        let configuration: Configuration
        do {
            switch try Configuration.parse(arguments: arguments, readFile: readTextFile) {
            case .help:
                print(Configuration.helpText, terminator: "")
                return 0
            case .version:
                print("expensed \(Configuration.version)")
                return 0
            case .run(let parsed):
                configuration = parsed
            }
        } catch let error as UsageError {
            printError("\(error)\nTry 'expensed --help' for more information.")
            return ExitStatus.usage.rawValue
        } catch {
            printError("\(error)")
            return ExitStatus.config.rawValue
        }

        if let problem = FaultPoints.problem {
            printError("EXPENSED_FAULT: \(problem)")
            return ExitStatus.config.rawValue
        }

        let logger = Logger(target: configuration.logTarget)
        do {
            return try await serve(configuration, signals: signals, logger: logger)
        } catch let failure as StartupFailure {
            logger.error(failure.message)
            return failure.code.rawValue
        } catch {
            logger.error("Failed to start: \(error)")
            return ExitStatus.osError.rawValue
        }
    }

    static func serve(_ configuration: Configuration, signals: Signals, logger: Logger) async throws -> Int32 {
        // Receipts are read with the languages configured: each one's data
        // is installed, or nothing starts, nothing made (docs/receipts.md, "Reading").
        if let problem = configuration.receiptReadingProblem { throw StartupFailure(code: .config, message: problem) }
        // How a date that reads two ways is read matters only to reading.
        if configuration.reading {
            logger.info(configuration.dateOrderDescription(localeDateFormat: LocaleFormat.dateFormat(), localeName: LocaleFormat.timeLocaleName,
                                                           isLocaleInstalled: LocaleFormat.isTimeLocaleInstalled))
        }
        do {
            try FileSystem.makeDirectories(configuration.stateDirectory, mode: 0o700)
        } catch {
            throw StartupFailure(code: .cannotCreate, message: "Failed to create state directory '\(configuration.stateDirectory)': \(error.reason)")
        }
        let lockPath = "\(configuration.stateDirectory)/expensed.lock"
        let lock: FileLock
        do {
            lock = try FileLock(path: lockPath)
        } catch .held(let pid) {
            let holder = pid.map { "process \($0)" } ?? "another process"
            throw StartupFailure(code: .tempFailure, message: "State directory '\(configuration.stateDirectory)' is in use by \(holder) (lock '\(lockPath)'); only one expensed may use it")
        } catch .system(let error) {
            throw StartupFailure(code: .cannotCreate, message: "Failed to lock '\(lockPath)': \(error.reason)")
        }

        // Set once the spool and the copier exist; called after every
        // change of the drain (sending is what frees room), a discard, and
        // a delete that dropped a chain, and the drain's headroom set aside
        // again (copies wait while it is given up). Cheap when nothing waits for room.
        let roomWaiters = Mutex<[@Sendable () -> Void]>([])
        let roomFreed: @Sendable () -> Void = {
            for waiter in roomWaiters.withLock({ $0 }) { waiter() }
        }
        var room = roomSettings(configuration, logger: logger)
        let said = room.onHeadroom
        room.onHeadroom = { event in
            said(event)
            if case .restored = event { roomFreed() }
        }
        let store: Store
        do {
            store = try Store(stateDirectory: configuration.stateDirectory, room: room, readsReceipts: configuration.reading)
        } catch {
            let code: ExitStatus = error.code == .io ? .cannotCreate : .dataError
            throw StartupFailure(code: code, message: "Refusing to start: \(error.message)")
        }
        let sync = configuration.syncSettings
        let settle = sync.settlesInterruptedCreates ? sync.longestRequestMilliseconds : 0
        let report = try store.reconcile(settlingCreatesFor: settle)
        if report.requeued > 0 { logger.notice("Requeued \(report.requeued) job(s) interrupted while sending; their resend is a replay") }
        if report.settling > 0 {
            logger.notice("\(report.settling) create(s) interrupted while sending wait \(DurationText.describe(milliseconds: settle)) before their markers are looked up: a request the last run sent may still be committing at the backend")
        }
        for name in report.removedReceipts { logger.notice("Removed receipt file '\(name)' that no job references") }
        for name in report.missingReceipts { logger.warning("Receipt file '\(name)' is referenced by a job but missing") }
        do {
            try store.establishHeadroom()
        } catch {
            logger.warning("Failed to set aside \(SizeText.describe(bytes: room.headroomBytes)) of headroom for the drain in '\(configuration.stateDirectory)': \(error.reason); adds count it as taken until there is room for it")
        }
        let readings = try await startReadings(configuration, store: store, logger: logger)

        let access = try accessPolicy(configuration)
        if let directory = configuration.accountsDirectory {
            // A mistyped or unreadable accounts_dir would give every caller
            // the default account, or none: refuse to start instead.
            guard (try? FileSystem.contents(of: directory)) != nil, let status = try? FileSystem.status(directory) else {
                throw StartupFailure(code: .config, message: "Refusing to start: accounts_dir '\(directory)' is not a directory expensed can read")
            }
            // Whoever may add a file there may give a user an account (theirs).
            let user = Users.effectiveUserID
            guard status.mode & 0o022 == 0, status.owner == 0 || status.owner == user else {
                throw StartupFailure(code: .config, message: "Refusing to start: accounts_dir '\(directory)' is mode \(String(status.mode & 0o7777, radix: 8)) owned by uid \(status.owner); it must be writable by its owner only, root or uid \(user) (expensed's user): chmod go-w, chown")
            }
        }
        let tokens = AccountTokens(tokenFile: configuration.tokenFile, accountsDirectory: configuration.accountsDirectory)
        let callers = CallerAccounts(tokens: tokens, adminGroupID: access.adminGroupID, adminGroupName: access.adminGroupName)
        if let directory = configuration.accountsDirectory {
            logger.info("Accounts: a token file per user in '\(directory)'\(tokens.hasDefaultAccount ? "; callers without one have the default account" : "; callers without one are refused")")
        }
        let (listener, ownedPath) = try controlSocket(configuration, group: access.groupID ?? access.adminGroupID, logger: logger)
        let server = try ControlServer(listener: listener, ownedSocketPath: ownedPath, limits: configuration.controlLimits, access: access,
                                       logger: logger)
        // The server's record exists with a server: the engine writes it,
        // the publisher and `status` read it.
        let record: ServerRecord? = configuration.serverURL == nil ? nil : ServerRecord()
        let metrics = configuration.metricsFile.map { MetricsFile(path: $0, logger: logger) }
        let metered: MeteredRecord? = configuration.serverURL == nil ? nil : MeteredRecord(mode: configuration.metered)
        let publisher = StatusPublisher(store: store, server: server, serverRecord: record, meteredRecord: metered,
                                        requiredFields: configuration.requiredFields, metrics: metrics)
        let roomLog = RoomLog(logger: logger)
        store.changes.connect(server)
        let retention = OriginalsRetention(store: store, retentionMilliseconds: configuration.receiptOriginalRetentionMilliseconds, logger: logger)
        let drainer: Drainer? = configuration.serverURL.flatMap { url in
            record.flatMap { record in
                metered.map { metered in
                    let backend = configuration.makeBackend(baseURL: url, deviceID: store.deviceID, uploads: store)
                    return Drainer(settings: configuration.syncSettings, store: store, backend: backend, record: record, metered: metered,
                                   tokens: tokens, logger: logger, onChange: { publisher.markChanged(); retention?.poke(); roomFreed() })
                }
            }
        }
        let copier = ReceiptCopier(store: store, decoder: configuration.receiptDecoderRun, logger: logger,
                                   recorded: { drainer?.trigger(); publisher.markChanged() })
        let reader = readings.map { readings in
            ReceiptReadings(store: store, reader: configuration.receiptReaderRun,
                            parsing: configuration.readingSettings(localeDateFormat: LocaleFormat.dateFormat()), logger: logger,
                            applied: { drainer?.trigger(); publisher.markChanged() })
        }
        let handler = ControlHandler(store: store, server: server, publisher: publisher, logger: logger,
                                     settings: configuration.controlHandlerSettings, drainer: drainer, callers: callers, roomLog: roomLog,
                                     readings: reader, queued: { copier.poke(); reader?.poke() }, roomFreed: roomFreed)
        // After reconciliation (a crash's orphan receipt copies are gone)
        // and before READY=1: intakes a crash interrupted are finished first.
        let spool = try configuration.spoolDirectory.map { path in
            try SpoolService.open(path, settings: configuration.spoolSettings, store: store, logger: logger,
                                  events: SpoolEvents(queued: { copier.poke(); reader?.poke(); drainer?.trigger() }, changed: { publisher.markChanged() },
                                                      rejectedCount: { publisher.setSpoolRejected($0) },
                                                      waitingForRoom: { publisher.setSpoolWaiting($0) },
                                                      accountOfOwner: { callers.account(ofOwner: $0) }))
        }
        roomWaiters.withLock { waiters in
            waiters.append { copier.roomFreed() }
            if let reader { waiters.append { reader.roomFreed() } }
            if let spool { waiters.append { spool.roomFreed() } }
            if room.headroomBytes > 0 { waiters.append { store.restoreHeadroom() } }
        }

        // Without the socket (a sandbox without AF_NETLINK), the timer alone tells the network is back.
        let network: NetworkWatch? = drainer.flatMap { drainer in
            do throws(SystemCallError) {
                return try NetworkWatch(logger: logger, regained: { drainer.networkRegained($0) })
            } catch {
                logger.warning("Not watching network changes (\(error.reason)); sending resumes on the drain timer after a network change")
                return nil
            }
        }
        // logind's resume from sleep and NetworkManager's Metered, over the
        // system bus; without it, nothing is held and the timer (or the
        // route socket) finds the server after a sleep.
        let bus: BusWatch? = drainer.flatMap { drainer in
            do throws(SystemCallError) {
                let watch = try BusWatch(logger: logger, events: BusWatch.Events(resumed: { drainer.networkRegained("resumed from sleep") },
                                                                                metered: { drainer.networkMetered($0) }))
                drainer.metered.expectWord()
                return watch
            } catch {
                logger.warning("Not watching the system bus (\(error.reason)); a resume from sleep waits for the drain timer, and nothing is held on a metered link")
                return nil
            }
        }
        server.start(direct: { handler.answerDirectly($0) })
        let summary = try await publisher.current()
        logger.info("Store open and reconciled: \(summary.queued + summary.needsAttention) job(s) pending; ready")
        FaultPoints.hit("before-ready")
        ServiceManager.ready(status: summary.line(nowMilliseconds: Clock.wallMilliseconds))
        // Before "Started": a reader of the log who saw that line has seen this one.
        if configuration.serverURL != nil, configuration.backend == .expenseServer, tokens.namesNoTokenFile {
            logger.warning("No token: neither token_file (--token-file) nor systemd's $CREDENTIALS_DIRECTORY names one: expense-server refuses every request without one; give one and restart the daemon")
        }
        logger.info("Started; control socket '\(configuration.socketPath)', state directory '\(configuration.stateDirectory)'\(spool.map { "; watching spool directory '\($0.path)'" } ?? "")\(configuration.serverURL == nil ? "; no server configured, queueing only" : "")")

        await withTaskGroup(of: Void.self) { services in
            services.addTask { await publisher.run() }
            services.addTask { await copier.run() }
            if let reader { services.addTask { await reader.run() } }
            if let retention { services.addTask { await retention.run() } }
            if let spool { services.addTask { await spool.run() } }
            if let metrics { services.addTask { await metrics.run { await handler.metricsText() } } }
            if let drainer { services.addTask { await drainer.run() } }
            network?.start()
            bus?.start()
            if let usec = ServiceManager.watchdogMicroseconds() {
                let watchdog = Watchdog(watchdogMicroseconds: usec, store: store, server: server, logger: logger,
                                        drainerIsAlive: { drainer?.isAlive() ?? true }, onTick: { copier.poke(); reader?.poke(); drainer?.trigger() },
                                        probes: spool.map { spool in [{ answer in spool.probe(answer) }] } ?? [])
                services.addTask { await watchdog.run() }
            }
            // Not in the group: stopping waits for it alone (the requests in
            // progress are answered) before the engine stops; awaited below.
            let handling = Task { await handler.run() }
            for await signal in signals.stream() {
                if signal == Signals.hangUp {
                    logger.info("Received SIGHUP; configuration is read at start-up only, ignoring")
                    continue
                }
                break
            }
            ServiceManager.stopping()
            logger.info("Stopping: finishing requests in progress")
            spool?.stop()
            await server.shutdown()
            await handling.value
            network?.stop()
            bus?.stop()
            drainer?.shutdown()
            copier.stop()
            reader?.stop()
            retention?.stop()
            metrics?.stop()
            services.cancelAll()
        }
        withExtendedLifetime(lock) {}
        logger.info("Stopped")
        return 0
    }

    /// The outbox's limits for the state directory's file system as it is
    /// now, and the drain's headroom on it, said once at start.
    static func roomSettings(_ configuration: Configuration, logger: Logger) -> RoomSettings {
        let directory = configuration.stateDirectory
        let fileSystemBytes: Int64
        do {
            fileSystemBytes = try FileSystem.space(of: directory).totalBytes
        } catch {
            // Then no disk check either (its free space is unknown too); the caps are the limits.
            logger.warning("Failed to read the size of the file system of '\(directory)': \(error.reason); limits that depend on it take their caps, ignoring")
            fileSystemBytes = .max / 2
        }
        let limits = configuration.outboxLimits(fileSystemBytes: fileSystemBytes)
        let headroom = OutboxLimitSettings.headroomBytes(fileSystemBytes: fileSystemBytes)
        logger.info("Outbox limits: \(limits.maxJobs) jobs, \(SizeText.describe(bytes: limits.maxReceiptBytes)) of receipts, \(SizeText.describe(bytes: limits.diskReserveBytes)) kept free on the file system of '\(directory)'; \(SizeText.describe(bytes: headroom)) set aside for the drain")
        return RoomSettings(limits: limits, headroomBytes: headroom, onHeadroom: { event in
            switch event {
            case .released(let bytes, let path):
                logger.warning("The file system of '\(directory)' is full: gave the drain the \(SizeText.describe(bytes: bytes)) set aside in '\(path)' so that sending, which frees room, goes on; adds are refused until there is room")
            case .walTruncated:
                logger.warning("The file system of '\(directory)' is full: truncated the database's log so that sending, which frees room, goes on")
            case .restored(let bytes):
                logger.notice("Set aside \(SizeText.describe(bytes: bytes)) for the drain again in '\(directory)'")
            }
        })
    }

    /// Whether receipts are read: with `reading = off`, readings a
    /// previous run left are dropped, so that nothing waits for them.
    /// - Returns: nil when reading is off.
    static func startReadings(_ configuration: Configuration, store: Store, logger: Logger) async throws -> Bool? {
        guard configuration.reading else {
            let dropped = try await store.dropReadings()
            if dropped > 0 { logger.notice("Dropped \(dropped) receipt reading(s) left to do: reading = off") }
            return nil
        }
        let toDo = try await store.readingsToDo()
        if toDo > 0 { logger.notice("\(toDo) receipt reading(s) interrupted or waiting; reading them now") }
        return true
    }

    static func accessPolicy(_ configuration: Configuration) throws -> AccessPolicy {
        var groupID: UInt32?
        if let group = configuration.controlGroup {
            guard let id = Users.groupID(named: group) else {
                throw StartupFailure(code: .config, message: "Control group '\(group)' does not exist")
            }
            groupID = id
        }
        var adminGroupID: UInt32?
        if let group = configuration.adminGroup {
            guard let id = Users.groupID(named: group) else {
                throw StartupFailure(code: .config, message: "Admin group '\(group)' does not exist")
            }
            adminGroupID = id
        }
        return AccessPolicy(daemonUID: Users.effectiveUserID, groupID: groupID, groupName: configuration.controlGroup,
                            adminGroupID: adminGroupID, adminGroupName: configuration.adminGroup)
    }

    /// The socket systemd passed (socket activation), or one we bind. One
    /// we bind belongs to the control group (else the admin group), when
    /// there is one, so that its members may connect (`SocketGroup=` does
    /// this for systemd's). A socket has one group: members of the admin
    /// group who are not in the control group reach it only through that
    /// group's mode, so admins belong in both.
    static func controlSocket(_ configuration: Configuration, group: UInt32?, logger: Logger) throws -> (FileDescriptor, String?) {
        if let activated = ServiceManager.listenDescriptors().first {
            logger.info("Using the control socket passed by systemd")
            return (activated, nil)
        }
        let path = configuration.socketPath
        if let slash = path.lastIndex(of: "/"), slash != path.startIndex {
            try? FileSystem.makeDirectories(String(path[..<slash]), mode: 0o755)
        }
        do {
            // 0660: the socket's group decides who besides the owner may connect;
            // the peer check decides who is served.
            return (try UnixSocket.listen(path: path, mode: 0o660, group: group), path)
        } catch where error.call == "chown" && error.isPermissionDenied {
            let name = configuration.controlGroup.map { "control group '\($0)'" } ?? "admin group '\(configuration.adminGroup ?? "")'"
            throw StartupFailure(code: .cannotCreate, message: "Failed to give control socket '\(path)' to \(name): \(error.reason); expensed must run as root or as a member of that group")
        } catch {
            throw StartupFailure(code: .cannotCreate, message: "Failed to listen on control socket '\(path)': \(error.reason)")
        }
    }

    static func readTextFile(_ path: String) throws -> String? {
        do {
            guard let bytes = try FileSystem.read(path, limit: 1 << 20) else {
                throw ConfigurationError("larger than 1 MiB", file: path)
            }
            return String(decoding: bytes, as: UTF8.self)
        } catch let error as SystemCallError where error.isNotFound {
            return nil
        }
    }

    static func printError(_ message: String) {
        StandardStreams.writeErrorLine("expensed: \(message)")
    }
}
