import ControlProtocol
import Curl
import DaemonSupport
import ExpenseCore
import OutboxStore
import Posix
import Synchronization

/// Sends the outbox to the server: one pass at a time, triggered by every
/// enqueue, a timer while anything is pending, watchdog ticks and `sync`.
/// A trigger that fires during a pass joins it: the pass keeps taking jobs
/// until none is eligible, and triggers collapse into at most one more pass.
final class Drainer: Sendable {
    let store: Store
    let client: HTTPClient
    let tokens: TokenSource
    let baseURL: String
    let configuration: Configuration
    let publisher: StatusPublisher
    let logger: Logger
    let policy: RetryPolicy
    let digests = BlockingExecutor(label: "receipt-digest", width: 2)
    private let triggers: AsyncStream<Void>
    private let triggered: AsyncStream<Void>.Continuation
    let state = Mutex(State())

    /// The pass's own bookkeeping. What is known of the server (reachable,
    /// refusing the token, the last error) is not here: it is the
    /// publisher's ``ServerHealth``, which only this type changes.
    struct State: ~Copyable {
        /// `sync` asked for a pass even while paused.
        var forced = false
        var refreshRequested = false
        var lastRefresh: UInt64?
        /// A pass is running, and the monotonic time of its last progress.
        var passing = false
        var lastProgress: UInt64 = 0
        var stats = SyncStats()
        var timer: Task<Void, Never>?
        /// The daemon is stopping: claim nothing more.
        var stopping = false
        /// The sending part of the pass running, to tell it of triggers.
        var sender: Sender?
    }

    init(store: Store, baseURL: String, configuration: Configuration, publisher: StatusPublisher, logger: Logger) {
        self.store = store
        self.baseURL = baseURL
        self.configuration = configuration
        self.publisher = publisher
        self.logger = logger
        client = HTTPClient(maxConnections: configuration.concurrency)
        tokens = TokenSource(configuredPath: configuration.tokenFile)
        policy = RetryPolicy(backoff: Backoff(baseMilliseconds: configuration.backoffBaseMilliseconds,
                                              capMilliseconds: configuration.backoffCapMilliseconds),
                             maxAttempts: configuration.maxAttempts)
        (triggers, triggered) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
    }

    /// Asks for a pass now, or joins the one running: its sender looks
    /// for eligible jobs again even when it found none (it may be waiting
    /// for a slow answer), and one more pass follows it. The sender is
    /// told from a task: the caller (an add's answer, a watchdog tick)
    /// never does a pass's work.
    func trigger() {
        if let sender = state.withLock({ $0.sender }) {
            Task { sender.post(.triggered) }
        }
        triggered.yield(())
    }

    /// `sync`: a pass now, even when paused for credentials; with `refresh`,
    /// fetch the server's changes first. The token file is read and a pause
    /// ended before this returns, so what the caller sees next (say the
    /// summary `sync --wait` follows) is the truth from now on, not the
    /// refusal of a token that has just been replaced.
    func sync(refresh: Bool) {
        tokens.reloadIfChanged()
        let generation = tokens.generation
        state.withLock {
            $0.forced = true
            if refresh { $0.refreshRequested = true }
        }
        if publisher.serverHealth.isPaused {
            publisher.updateServer { $0.resume(tokenGeneration: generation, force: true) }
            logger.info("Sending resumed on request; the token file is used as it is now")
        }
        trigger()
    }

    /// Stops sending: requests in flight end at once (their jobs stay
    /// queued; a resend is a replay) and no more jobs are claimed.
    func shutdown() {
        state.withLock { $0.stopping = true }
        client.shutdown()
        triggered.finish()
    }

    var isStopping: Bool { state.withLock { $0.stopping } }

    /// True unless a pass has made no progress for longer than one request
    /// may take: the watchdog withholds its ping then.
    func isAlive() -> Bool {
        let limit = UInt64(configuration.requestTimeoutMilliseconds + configuration.connectTimeoutMilliseconds + 10_000) * 1_000_000
        return state.withLock { state in
            guard state.passing else { return true }
            return Clock.monotonicNanoseconds - state.lastProgress < limit
        }
    }

    func run() async {
        if let problem = tokens.current().problem { logger.warning("\(problem); requests go without credentials") }
        trigger()
        for await _ in triggers {
            await pass()
            await scheduleNextWake()
        }
        state.withLock { $0.timer?.cancel() }
        client.shutdown()
    }

    /// One pass: send until nothing is eligible, the server is unreachable,
    /// or it refuses our credentials; then refresh when due.
    private func pass() async {
        let tokenChanged = tokens.reloadIfChanged()
        let generation = tokens.generation
        let forced = state.withLock { state -> Bool in
            defer { state.forced = false }
            return state.forced
        }
        // A token file read since the refusal (here or during a send) ends
        // the pause, and so does `sync`.
        let paused = publisher.updateServer { $0.resume(tokenGeneration: generation, force: forced) }
        if tokenChanged {
            let (token, problem, _) = tokens.current()
            if token != nil { logger.info("Token file read; sending with its token") }
            else if let problem { logger.warning("\(problem); requests go without credentials") }
        }
        if paused { return }
        begin()
        // A job whose answer could not be recorded last time (say, a full
        // disk) is still marked sending; nothing is in flight between passes.
        try? await store.requeueStranded()
        // The user's pending work first; then what changed elsewhere.
        var stop = await sendEligibleJobs()
        if stop == nil && refreshDue() { stop = await refresh() }
        if stop == .unreachable {
            // Counted once per pass that found the server unreachable.
            state.withLock { $0.stats.recordFailure("transport") }
            try? await store.countTransportFailure()
        }
        end()
    }

    private func begin() {
        state.withLock {
            $0.passing = true
            $0.lastProgress = Clock.monotonicNanoseconds
        }
    }

    /// Pauses sending after the server refused the token of `generation`,
    /// unless the token file changed since that request went out.
    /// - Returns: true when sending is paused.
    func pauseForCredentials(refusedGeneration: Int, status: Int) -> Bool {
        tokens.reloadIfChanged()
        guard refusedGeneration == tokens.generation else { return false }
        let first = publisher.updateServer { $0.refused(tokenGeneration: refusedGeneration, status: status, at: Clock.wallMilliseconds) }
        state.withLock { $0.stats.recordFailure("auth") }
        if first {
            logger.error("Server refused the credentials (\(status)); sending is paused until the token file changes or 'expensectl sync'",
                         messageID: .authPaused)
        }
        return true
    }

    /// Notes a transport failure (`reason`, the transport's own words);
    /// logs `message` at warning level only when it starts an outage.
    func noteUnreachable(_ message: String, reason: String, transactionID: String? = nil, jobUUID: String? = nil) {
        let first = publisher.updateServer { $0.unreachable(reason, at: Clock.wallMilliseconds) }
        if first { logger.warning(message, transactionID: transactionID, jobUUID: jobUUID) }
        else { logger.debug(message, transactionID: transactionID, jobUUID: jobUUID) }
    }

    /// Notes what an HTTP answer says of the server (it is there), with
    /// `outcome` applied to its health; logs the end of an outage.
    func noteAnswer(_ outcome: (inout ServerHealth) -> Void) {
        let wasUnreachable = publisher.updateServer { health -> Bool in
            let was = health.state == .unreachable
            outcome(&health)
            return was
        }
        if wasUnreachable { logger.notice("Server reachable again") }
    }

    func markProgress() {
        state.withLock { $0.lastProgress = Clock.monotonicNanoseconds }
    }

    private func end() {
        state.withLock { $0.passing = false }
    }

    /// Why a pass stopped before the outbox was empty.
    enum Stop: Equatable { case unreachable, credentials }

    /// Sends until nothing is eligible, the server is unreachable, or it
    /// refuses our credentials (see ``Sender``). Jobs claimed but not sent
    /// when it stops go back to the queue.
    private func sendEligibleJobs() async -> Stop? {
        let sender = Sender(self)
        state.withLock { $0.sender = sender }
        let (stop, claimed) = await sender.run()
        state.withLock { $0.sender = nil }
        do {
            noteDropped(try await store.release(claimed))
        } catch {
            logger.error("Failed to return unsent jobs to the queue: \(error); they are requeued at next start")
        }
        if !claimed.isEmpty { publisher.markChanged() }
        return stop
    }

    /// After a pass: wake again while anything is pending, at the drain
    /// interval or when the first backing-off job is due, whichever is
    /// sooner; and when the next refresh is due. Nothing pending, no timer.
    private func scheduleNextWake() async {
        let interval = configuration.drainIntervalMilliseconds
        var wake: Int64?
        if let pending = try? await store.pendingWork(), pending.queued {
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
        let health = publisher.serverHealth
        if health.isPaused || health.wantsContact { wake = wake ?? interval }
        if let lastRefresh {
            let elapsed = Int64((Clock.monotonicNanoseconds - lastRefresh) / 1_000_000)
            let untilRefresh = max(configuration.refreshIntervalMilliseconds - elapsed, 0)
            wake = min(wake ?? untilRefresh, untilRefresh)
        }
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
        if publisher.serverHealth.wantsContact { return true }
        return state.withLock { state in
            guard let last = state.lastRefresh else { return true }
            if state.refreshRequested { return true }
            return Clock.monotonicNanoseconds - last >= UInt64(configuration.refreshIntervalMilliseconds) * 1_000_000
        }
    }

    /// What this run has done so far.
    func sinceStart() -> SyncStats { state.withLock { $0.stats } }

    /// `stats`: latency and failures since start and in total (the totals
    /// come from the store, so they exist even without a server).
    static func statistics(store: Store, sinceStart: SyncStats) async throws -> StatsReport {
        let totals = try await store.totals()
        return StatsReport(
            sinceStart: .init(applied: sinceStart.applied, latency: sinceStart.latency, failures: sinceStart.failures),
            total: .init(applied: totals.latencyBuckets.values.reduce(0, +), latency: LatencySummary(histogram: totals.latencyBuckets),
                         failures: totals.failures))
    }
}
