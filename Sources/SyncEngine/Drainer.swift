import DaemonSupport
import ExpenseCore
import OutboxStore
import Posix
import Synchronization

/// Sends the outbox to the server: one pass at a time, triggered by every
/// enqueue, a timer while anything is pending, watchdog ticks and `sync`.
/// A trigger that fires during a pass joins it: the pass keeps taking jobs
/// until none is eligible, and triggers collapse into at most one more pass.
///
/// It owns what is known of sending: the ``ServerRecord`` (it alone writes
/// it), the credentials pause in it, the ``MeteredRecord`` (what a metered
/// link holds), and the statistics since start. It talks to the server
/// only through its ``SyncBackend``.
public final class Drainer: Sendable {
    let store: Store
    let backend: any SyncBackend
    /// Every account's token.
    let tokens: AccountTokens
    let settings: SyncSettings
    /// Requests in flight at once: the concurrency, or fewer if the backend says so.
    let width: Int
    let record: ServerRecord
    /// What a metered link holds back; this engine alone writes it.
    public let metered: MeteredRecord
    let logger: Logger
    /// The queue or the server's state may have changed: republish the summary.
    let onChange: @Sendable () -> Void
    let policy: RetryPolicy
    private let triggers: AsyncStream<Void>
    private let triggered: AsyncStream<Void>.Continuation
    let state = Mutex(State())

    /// The pass's own bookkeeping and the statistics. What is known of the
    /// server (reachable, refusing the token, the last error) is not here:
    /// it is the ``ServerRecord``, which only this type changes.
    struct State: ~Copyable {
        /// `sync` asked for a pass even while paused: for every account, or for these.
        var forcedAll = false
        var refreshRequested = false
        var lastRefresh: UInt64?
        /// Uploads to cancel on the server are still listed after a pass:
        /// the next pass comes at the drain interval, queue or not.
        var cancellationsLeft = false
        /// A pass is running, and the monotonic time of its last progress.
        var passing = false
        /// Passes ended since start.
        var passes = 0
        var lastProgress: UInt64 = 0
        var stats = SyncStats()
        /// The statistics since start of each account.
        var accountStats: [String: SyncStats] = [:]
        var forcedAccounts: Set<String> = []
        /// `sync --now` asked for a pass that sends what a metered link holds.
        var meteredOverrideAsked = false
        var timer: Task<Void, Never>?
        /// The daemon is stopping: claim nothing more.
        var stopping = false
        /// The sending part of the pass running, to tell it of triggers.
        var runner: PassRunner?
        /// The outbox place of the last create the journal was told is
        /// held as incomplete: each is told once (once per start).
        var toldIncompleteSeq: Int64 = 0
    }

    /// - Parameters:
    ///   - record: the server's record, which this engine alone changes.
    ///   - onChange: called whenever the queue or the server's state may
    ///     have changed (cheap: it is called for every batch of answers).
    ///   - tokens: every account's token (the daemon maps callers to accounts with the same).
    ///   - metered: what a metered link holds (its mode set), which this engine alone changes.
    public init(settings: SyncSettings, store: Store, backend: any SyncBackend, record: ServerRecord, metered: MeteredRecord,
                tokens: AccountTokens, logger: Logger, onChange: @escaping @Sendable () -> Void) {
        self.settings = settings
        self.store = store
        self.backend = backend
        self.record = record
        self.metered = metered
        self.logger = logger
        self.onChange = onChange
        width = min(settings.concurrency, backend.maxRequestsInFlight ?? settings.concurrency)
        self.tokens = tokens
        policy = RetryPolicy(backoff: Backoff(baseMilliseconds: settings.backoffBaseMilliseconds, capMilliseconds: settings.backoffCapMilliseconds),
                             maxAttempts: settings.maxAttempts)
        (triggers, triggered) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
    }

    /// Applies one outcome to the server's record, republishing the
    /// summary when the state it shows changed.
    /// - Returns: what `change` returns.
    @discardableResult
    func updateServer<R>(_ change: (inout ServerStatus) -> R) -> R {
        let (result, changed) = record.update(change)
        if changed { onChange() }
        return result
    }

    /// Asks for a pass now, or joins the one running: its sending looks
    /// for eligible jobs again even when it found none (it may be waiting
    /// for a slow answer), and one more pass follows it. The running pass
    /// is told from a task of its own: the caller (an add's answer, a
    /// watchdog tick) never does a pass's work.
    public func trigger() {
        state.withLock { $0.runner }?.postLater(.triggered)
        triggered.yield(())
    }

    /// The network may be back (a link came up, a default route appeared):
    /// jobs that failed for the transport are due now, and a pass starts
    /// (or joins the one running) instead of waiting for the timer.
    public func networkRegained(_ reason: String) {
        Task { [store, logger] in
            let cleared = (try? await store.clearTransportBackoff(now: Clock.wallMilliseconds)) ?? 0
            logger.info("Network change (\(reason)); sending now\(cleared > 0 ? ", \(cleared) job(s) no longer waiting for their retry time" : "")")
            trigger()
        }
    }

    /// NetworkManager said whether the link is metered (nil: nobody says,
    /// not metered). A pass starts when this lets held jobs go; the summary
    /// is published again (it counts the jobs held).
    public func networkMetered(_ link: NetworkMetered?) {
        defer { metered.markHeard() }
        let (before, after) = metered.update { $0.link = link }
        guard before != after else { return }
        let said = link.map { "NetworkManager: \($0.name)" } ?? "no NetworkManager"
        if after.isMetered && !before.isMetered {
            // What waits is said without a `sync --now` that may be lifting it.
            if let held = after.overridden(false).explanation {
                logger.notice("The link is metered (\(said)): \(held) until it is not; 'expensectl sync --now' sends once")
            } else {
                logger.info("The link is metered (\(said)); metered = \(after.mode.rawValue): nothing waits")
            }
        } else if before.isMetered && !after.isMetered {
            logger.info("The link is not metered (\(said))\(after.mode == .ignore ? "" : "; what it held goes now")")
        }
        onChange()
        if !before.heldKinds.subtracting(after.heldKinds).isEmpty { trigger() }
    }

    /// `sync`: a pass now, even for the accounts of `scope` paused for
    /// credentials; with `refresh`, fetch the server's changes first. Their
    /// token files are read and their pauses ended before this returns, so
    /// what the caller sees next (say the summary `sync --wait` follows) is
    /// the truth from now on, not the refusal of a token just replaced.
    /// With `now`, the next pass sends what a metered link holds (every
    /// account's: the link is the machine's), and the hold applies again
    /// after it; the summary counts nothing held from now until that pass
    /// ends.
    public func sync(refresh: Bool, now: Bool = false, scope: AccountScope = .all) {
        if now {
            state.withLock { $0.meteredOverrideAsked = true }
            let (before, after) = metered.update { $0.overridden = true }
            if before != after { onChange() }
        }
        state.withLock { state in
            // Only the caller's scope: alice's sync ends no pause of bob's.
            switch scope {
            case .all: state.forcedAll = true
            case .account(let account): state.forcedAccounts.insert(account)
            }
            if refresh { state.refreshRequested = true }
        }
        for account in record.current.pausedAccounts.sorted() where scope.contains(account) {
            let source = tokens.source(for: account)
            source.reloadIfChanged()
            let generation = source.generation
            updateServer { $0.resume(account: account, tokenGeneration: generation, force: true) }
            logger.info("Sending resumed on request; the token file is used as it is now", account: account)
        }
        trigger()
    }

    /// Stops sending: requests in flight end at once (their jobs stay
    /// queued; a resend is a replay) and no more jobs are claimed.
    public func shutdown() {
        let runner = state.withLock { state in
            state.stopping = true
            return state.runner
        }
        runner?.post(.stopping)
        backend.shutdown()
        triggered.finish()
    }

    var isStopping: Bool { state.withLock { $0.stopping } }

    /// True unless a pass has made no progress for longer than one request
    /// may take: the watchdog withholds its ping then.
    public func isAlive() -> Bool {
        let limit = UInt64(settings.longestRequestMilliseconds + 10_000) * 1_000_000
        return state.withLock { state in
            guard state.passing else { return true }
            return Clock.monotonicNanoseconds - state.lastProgress < limit
        }
    }

    /// How long the first pass waits for the link's state at start: the bus
    /// watch's connection and NetworkManager's answer (5 s at most each).
    static let meteredWordMilliseconds: Int64 = 10_000

    public func run() async {
        if tokens.hasDefaultAccount, let problem = tokens.source(for: AccountName.defaultName).current().problem {
            logger.warning(tokens.directory != nil ? "\(problem); the default account's expenses wait for it" : "\(problem); requests go without credentials")
        }
        // Not a byte before the link is known not to be metered (or the
        // bus's answer is overdue: then nothing is held).
        await metered.waitForFirstWord(milliseconds: Self.meteredWordMilliseconds)
        trigger()
        for await _ in triggers {
            await pass()
            await scheduleNextWake()
        }
        state.withLock { $0.timer?.cancel() }
        backend.shutdown()
    }

    /// One pass: send until nothing is eligible, the server is unreachable,
    /// or it refuses our credentials; then refresh when due.
    private func pass() async {
        let (forcedAll, forcedAccounts, overriding) = state.withLock { state -> (Bool, Set<String>, Bool) in
            defer {
                state.forcedAll = false
                state.forcedAccounts = []
                state.meteredOverrideAsked = false
            }
            return (state.forcedAll, state.forcedAccounts, state.meteredOverrideAsked)
        }
        if overriding, let held = metered.current.overridden(false).explanation {
            logger.notice("Sending what the metered link holds, once, on request ('expensectl sync --now'): \(held) until this pass ends")
        }
        if tokens.hasDefaultAccount && tokens.directory == nil {
            // The single-account setup: its token file is read before each pass, as it always was.
            let source = tokens.source(for: AccountName.defaultName)
            if source.reloadIfChanged() {
                let (token, problem, _) = source.current()
                if token != nil { logger.info("Token file read; sending with its token") }
                else if let problem { logger.warning("\(problem); requests go without credentials") }
            }
        }
        // A token file read since the refusal (here or during a send) ends
        // an account's pause, and so does `sync`.
        for account in record.current.pausedAccounts.sorted() {
            let source = tokens.source(for: account)
            let changed = source.reloadIfChanged()
            let generation = source.generation
            let force = forcedAll || forcedAccounts.contains(account)
            let paused = updateServer { $0.resume(account: account, tokenGeneration: generation, force: force) }
            if !paused { logger.info(changed ? "Token file read; sending resumes with its token" : "Sending resumes", account: account) }
        }
        begin()
        // A job whose answer could not be recorded last time (say, a full
        // disk) is still marked sending; nothing is in flight between passes.
        // The same read lists the uploads to cancel.
        let abandoned = (try? await store.startPass()) ?? []
        await cancelAbandonedUploads(abandoned)
        // The user's pending work first; then what changed elsewhere.
        var stop = await sendEligibleJobs(overridingMeteredHold: overriding)
        if stop == nil && refreshDue() && !meteredHold(overriding: overriding).holdsRefresh { stop = await refresh() }
        if stop == .unreachable {
            // Counted once per pass that found the server unreachable.
            await countServerFailure("transport", account: nil)
        }
        await tellIncomplete()
        if overriding {
            // The hold applies again, unless another `sync --now` came meanwhile.
            let asked = state.withLock { $0.meteredOverrideAsked }
            let (before, after) = metered.update { $0.overridden = asked }
            if before != after { onChange() }
        }
        end(stop)
    }

    /// Cancels on the server the resumable uploads whose jobs went without
    /// completing them (their expense deleted, their receipt replaced, the
    /// job discarded): the store lists them, in the transaction that
    /// removed the job. One the server cannot be asked about now stays
    /// listed for the next pass; the server also expires what it is never
    /// told about.
    private func cancelAbandonedUploads(_ abandoned: [(url: String, account: String)]) async {
        guard !abandoned.isEmpty else {
            state.withLock { $0.cancellationsLeft = false }
            return
        }
        var left = false
        for (url, account) in abandoned {
            let (token, _) = tokens.source(for: account).latest()
            guard await backend.cancelUpload(url: url, token: token), (try? await store.forgetCancellation(url: url)) != nil else {
                left = true
                continue
            }
            logger.info("Cancelled on the server an upload its receipt no longer needs", account: account)
        }
        state.withLock { $0.cancellationsLeft = left }
    }

    /// Tells the journal once of each expense newly held as incomplete
    /// (docs/sync.md, "Incomplete expenses"), with what it lacks.
    private func tellIncomplete() async {
        let required = backend.requiredFields
        guard !required.isEmpty else { return }
        let after = state.withLock { $0.toldIncompleteSeq }
        let held: [Store.IncompleteExpense]
        do {
            held = try await store.incompleteExpenses(requiring: required, after: after)
        } catch {
            logger.warning("Failed to read the incomplete expenses: \(error), ignoring")
            return
        }
        guard let last = held.last else { return }
        for expense in held {
            let missing = RequiredFields.phrase(required.missing(in: expense.fields))
            logger.notice("""
                Expense held as incomplete: \(required.explanation(for: expense.fields) ?? "it lacks nothing"); \
                nothing is sent until an edit gives it \(missing) ('expensectl edit \(expense.transactionID)')
                """, transactionID: expense.transactionID, account: expense.account, messageID: .expenseIncomplete)
        }
        state.withLock { $0.toldIncompleteSeq = max($0.toldIncompleteSeq, last.seq) }
    }

    /// What a metered link holds now, for a pass that `sync --now` asked
    /// for (`overriding`: nothing) or another.
    func meteredHold(overriding: Bool) -> MeteredHold {
        metered.current.overridden(overriding)
    }

    private func begin() {
        state.withLock {
            $0.passing = true
            $0.lastProgress = Clock.monotonicNanoseconds
        }
    }

    /// Pauses `account`'s sending after the server refused its token of
    /// `generation` (or it has none: `contacted` false), unless the token
    /// file changed since that request went out. The other accounts go on.
    /// - Returns: true when the account is paused.
    func pauseForCredentials(account: String, refusedGeneration: Int, code: String, contacted: Bool = true) async -> Bool {
        let source = tokens.source(for: account)
        source.reloadIfChanged()
        guard refusedGeneration == source.generation else { return false }
        let first = updateServer { $0.refused(account: account, tokenGeneration: refusedGeneration, code: code, at: Clock.wallMilliseconds,
                                              contacted: contacted) }
        recordFailure("auth", account: account)
        if first {
            let why = contacted ? "Server refused the credentials (\(code))" : "No usable token (\(source.current().problem ?? code))"
            logger.error(tokens.directory != nil
                         ? "\(why) of account \(AccountName.displayName(account)); its sending is paused until its token file changes or 'expensectl sync'; other accounts go on"
                         : "\(why); sending is paused until the token file changes or 'expensectl sync'",
                         account: account, messageID: .authPaused)
        }
        // The total last, after the line: nothing waits between the pause
        // `status` shows and the line that says so.
        try? await store.countServerFailure("auth", account: account)
        return true
    }

    /// Counts a failure of the server's (no job's answer: those count with
    /// their commit) since start and in the store's totals; a total the
    /// disk refuses is counted since start only.
    func countServerFailure(_ errorClass: String, account: String?) async {
        recordFailure(errorClass, account: account)
        try? await store.countServerFailure(errorClass, account: account)
    }

    /// Counts a failure in the statistics since start, everyone's and the account's.
    func recordFailure(_ errorClass: String, account: String?) {
        state.withLock { state in
            state.stats.recordFailure(errorClass)
            if let account { state.accountStats[account, default: SyncStats()].recordFailure(errorClass) }
        }
    }

    /// Notes a transport failure (`reason`, the transport's own words);
    /// logs `message` at warning level only when it starts an outage.
    func noteUnreachable(_ message: String, reason: String, transactionID: String? = nil, jobUUID: String? = nil, account: String? = nil) {
        let first = updateServer { $0.unreachable(reason, at: Clock.wallMilliseconds) }
        if first { logger.warning(message, transactionID: transactionID, jobUUID: jobUUID, account: account) }
        else { logger.debug(message, transactionID: transactionID, jobUUID: jobUUID, account: account) }
    }

    /// Notes what an HTTP answer says of the server (it is there), with
    /// `outcome` applied to its health; logs the end of an outage.
    func noteAnswer(_ outcome: (inout ServerStatus) -> Void) {
        let wasUnreachable = updateServer { health -> Bool in
            let was = health.state == .unreachable
            outcome(&health)
            return was
        }
        if wasUnreachable { logger.notice("Server reachable again") }
    }

    func markProgress() {
        state.withLock { $0.lastProgress = Clock.monotonicNanoseconds }
    }

    private func end(_ stop: Stop?) {
        let number = state.withLock { state in
            state.passing = false
            state.passes += 1
            return state.passes
        }
        logger.debug("Drain pass \(number) ended\(stop.map { ", stopped: \($0)" } ?? "")")
    }

    /// Why a pass stopped before the outbox was empty.
    /// (`accountPaused` stops nothing: it holds back one account's jobs,
    /// and the pass goes on with the others'.)
    enum Stop: Equatable, Sendable { case unreachable, credentials, accountPaused(String) }

    /// Sends until nothing is eligible, the server is unreachable, or it
    /// refuses our credentials (see ``PassMachine``). Jobs claimed but not
    /// sent when it stops go back to the queue.
    private func sendEligibleJobs(overridingMeteredHold overriding: Bool) async -> Stop? {
        let runner = PassRunner(self, overridingMeteredHold: overriding)
        let stopping = state.withLock { state in
            state.runner = runner
            return state.stopping
        }
        // A shutdown before the runner was known could not tell it.
        if stopping { runner.post(.stopping) }
        let (stop, claimed) = await runner.run()
        state.withLock { $0.runner = nil }
        do {
            noteDropped(try await store.release(claimed))
        } catch {
            logger.error("Failed to return unsent jobs to the queue: \(error); they are requeued at next start")
        }
        if !claimed.isEmpty { onChange() }
        return stop
    }

    /// After a pass: wake again while anything is pending, at the drain
    /// interval or when the first backing-off job is due, whichever is
    /// sooner; and when the next refresh is due. Nothing pending, no timer.
    private func scheduleNextWake() async {
        let interval = settings.drainIntervalMilliseconds
        // Jobs a metered link holds wake nothing: the end of the hold does.
        let hold = meteredHold(overriding: false)
        var wake: Int64?
        // Nor do incomplete expenses: the edit that completes one does.
        if let pending = try? await store.pendingWork(holding: hold.heldKinds, requiring: backend.requiredFields,
                                                        readingWait: settings.readingWaitMilliseconds, now: Clock.wallMilliseconds),
           pending.queued {
            wake = interval
            if let due = pending.earliestRetry {
                wake = min(interval, max(due - Clock.wallMilliseconds, 50))
            }
        }
        let lastRefresh = state.withLock { $0.lastRefresh }
        // Paused, the next pass looks for a new token file; with the server
        // unreachable (or not yet contacted), it looks for the server: the
        // refresh that is due then is what tells it is back, within one
        // interval, even with nothing queued.
        let server = record.current
        if server.isPaused || (server.wantsContact && !hold.holdsRefresh) { wake = wake ?? interval }
        if state.withLock({ $0.cancellationsLeft }) { wake = min(wake ?? interval, interval) }
        if let lastRefresh {
            let elapsed = Int64((Clock.monotonicNanoseconds - lastRefresh) / 1_000_000)
            let untilRefresh = max(settings.refreshIntervalMilliseconds - elapsed, 0)
            wake = min(wake ?? untilRefresh, untilRefresh)
        }
        // Owned by `state.timer`: cancelled when the next pass schedules
        // another, and when the engine stops.
        let timer: Task<Void, Never>? = wake.map { delay in
            Task { [self] in
                guard (try? await Task.sleep(for: .milliseconds(delay))) != nil else { return }
                trigger()
            }
        }
        state.withLock {
            $0.timer?.cancel()
            $0.timer = timer
        }
    }

    /// A refresh is due at the refresh interval, on request, and whenever
    /// the server's state is not known now (unreachable, or not contacted
    /// since start or since a pause ended): a listing since the last cursor
    /// is one small request, normally empty, and the cheapest that proves
    /// both that the server answers and that it takes the token.
    private func refreshDue() -> Bool {
        if record.current.wantsContact { return true }
        return state.withLock { state in
            guard let last = state.lastRefresh else { return true }
            if state.refreshRequested { return true }
            return Clock.monotonicNanoseconds - last >= UInt64(settings.refreshIntervalMilliseconds) * 1_000_000
        }
    }

    /// What this run has done so far: `stats`' since-start half (the
    /// totals are the store's), of every account or of one (transport
    /// failures are the server's, counted in every account's).
    public func sinceStart(in scope: AccountScope = .all) -> SyncStats {
        state.withLock { state in
            // Alone, the default account is everything sent.
            guard case .account(let account) = scope, tokens.directory != nil else { return state.stats }
            var stats = state.accountStats[account] ?? SyncStats()
            stats.setFailures("transport", state.stats.failures["transport"])
            return stats
        }
    }
}
