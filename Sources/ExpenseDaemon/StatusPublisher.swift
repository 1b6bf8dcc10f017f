import ControlSocket
import ExpenseCore
import OutboxStore
import Posix
import SyncEngine
import Synchronization
import Systemd

/// Keeps `STATUS=` and every `watch` connection showing the newest queue
/// summary. Changes only mark the summary stale; one loop recomputes it,
/// so a burst of adds costs one summary, not one per add.
public final class StatusPublisher: Sendable {
    let store: Store
    let server: ControlServer
    /// The server's record, kept by the sync engine; nil without a server.
    let serverRecord: ServerRecord?
    /// What a metered link holds, kept by the sync engine; nil without a server.
    let meteredRecord: MeteredRecord?
    /// What the backend needs of an expense before it is created: those
    /// without it are counted as incomplete.
    let requiredFields: RequiredFields
    private let changes: AsyncStream<Void>
    private let changed: AsyncStream<Void>.Continuation
    private let extras: Mutex<Extras>

    /// What neither the store nor the engine knows: the spool's count,
    /// the scopes watched, and the summaries published last.
    struct Extras {
        var spoolRejected = 0
        var spoolWaiting = 0
        /// Every account's (systemd's `STATUS=` and admins), and those of the accounts someone watches.
        var scopes: Set<AccountScope> = [.all]
        var last: [AccountScope: QueueSummary]?
    }

    /// The metrics file, rewritten (coalesced) when the figures may have changed; nil: none.
    let metrics: MetricsFile?

    init(store: Store, server: ControlServer, serverRecord: ServerRecord?, meteredRecord: MeteredRecord?, requiredFields: RequiredFields = .none,
         metrics: MetricsFile? = nil) {
        self.metrics = metrics
        self.store = store
        self.requiredFields = requiredFields
        self.server = server
        self.serverRecord = serverRecord
        self.meteredRecord = meteredRecord
        (changes, changed) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
        extras = Mutex(Extras())
    }

    /// Something may have changed the summary. With nobody to tell (no
    /// `NOTIFY_SOCKET`, no watcher) this costs almost nothing: draining
    /// calls it for every job.
    public func markChanged() {
        metrics?.poke()
        guard notifying || server.hasWatchers else {
            // Unpublished: the next summary must go out even if it equals
            // the last one published.
            extras.withLock { $0.last = nil }
            return
        }
        changed.yield(())
    }

    /// `rejected/` holds `count` files now.
    func setSpoolRejected(_ count: Int) {
        let changedCount = extras.withLock { extras -> Bool in
            defer { extras.spoolRejected = count }
            return extras.spoolRejected != count
        }
        if changedCount { markChanged() }
    }

    /// `count` spool files wait for room in the outbox now.
    func setSpoolWaiting(_ count: Int) {
        let changedCount = extras.withLock { extras -> Bool in
            defer { extras.spoolWaiting = count }
            return extras.spoolWaiting != count
        }
        if changedCount { markChanged() }
    }

    /// The summary of `scope` as it is now: one account's queue, and its
    /// credentials' state; or everyone's. The spool's count is the
    /// machine's, in each; the jobs a metered link holds are the scope's,
    /// and so are the incomplete expenses.
    public func current(_ scope: AccountScope = .all) async throws -> QueueSummary {
        var summary = try await store.summary(in: scope)
        let held = meteredRecord?.current.heldKinds ?? []
        if !held.isEmpty, summary.queued > 0 {
            summary.held = try await store.queuedCount(of: held, in: scope)
        }
        if !requiredFields.isEmpty, summary.queued > 0 {
            (summary.incomplete, summary.incompleteJobs) = try await store.incompleteCounts(requiring: requiredFields, excluding: held, in: scope)
        }
        if summary.needsAttention > 0, summary.queued > summary.held {
            summary.behindAttention = try await store.queuedBehindAttention(excluding: held, in: scope)
        }
        switch scope {
        case .all: summary.server = serverRecord?.current.state ?? .notConfigured
        case .account(let account): summary.server = serverRecord?.current.state(of: account) ?? .notConfigured
        }
        (summary.spoolRejected, summary.spoolWaiting) = extras.withLock { ($0.spoolRejected, $0.spoolWaiting) }
        return summary
    }

    /// Someone watches `scope`: its summary is published from now on.
    func watch(_ scope: AccountScope) {
        let added = extras.withLock { $0.scopes.insert(scope).inserted }
        if added { markChanged() }
    }

    /// Whether systemd listens for `STATUS=` (checked once: the environment is fixed).
    private let notifying = Environment["NOTIFY_SOCKET"] != nil

    /// Publishes until cancelled.
    func run() async {
        for await _ in changes {
            var summaries: [AccountScope: QueueSummary] = [:]
            for scope in extras.withLock({ $0.scopes }) {
                summaries[scope] = try? await current(scope)
            }
            guard let summary = summaries[.all] else { continue }
            let (isNew, allChanged) = extras.withLock { extras -> (Bool, Bool) in
                defer { extras.last = summaries }
                return (extras.last != summaries, extras.last?[.all] != summary)
            }
            guard isNew else { continue }
            if allChanged { ServiceManager.status(summary.line(nowMilliseconds: Clock.wallMilliseconds)) }
            server.publish(summaries: summaries)
        }
    }
}
