import DaemonSupport
import ExpenseCore
import Posix
import Synchronization

extension Drainer {
    /// News for a pass's sending: a request's answer, or a helper task's result.
    enum PassEvent: Sendable {
        case start
        /// Something was queued: look for eligible jobs again.
        case triggered
        /// Jobs claimed, by a claim that started after `changes` recordings and triggers.
        case claimed([OutboxJob], afterChanges: Int)
        case answered(OutboxJob, Answer)
        /// The daemon is stopping: claim and send nothing more.
        case stopping
        /// Answers recorded; a batch of plain ones, or one handled alone.
        case recorded(Stop?, count: Int, batch: Bool)
        /// Answers waiting to be recorded have waited long enough.
        case holdOver
    }

    /// How long plain answers may wait for more to be recorded with.
    static let answerHoldMilliseconds = 20

    /// The sending part of one pass: keeps `concurrency` requests on the
    /// wire until nothing is eligible or the pass must stop.
    ///
    /// It is a state machine driven by its news, run by whoever brings it:
    /// an answer is handled on the HTTP client's thread as it arrives (and
    /// the next request handed over from there), a claim's or a recording's
    /// result by the task that made it. One thread at a time holds the turn
    /// and handles everything posted until none is left; a thread that
    /// posts while another holds it leaves its news for that one. Nothing
    /// it does waits for the store, a file or the network: those are
    /// reached from tasks of their own. So a plain answer costs no task and
    /// no thread wake-up.
    ///
    /// The HTTP client has `concurrency` connections and holds up to as many
    /// more requests ready (their timeouts start when they do), so a
    /// connection that frees takes the next one at once. Plain answers (the
    /// server took or judged the job) are recorded in batches, one store
    /// call and one transaction each: a batch goes once four times
    /// `concurrency` answers wait, nothing else is on the wire, or the first
    /// of them has waited `answerHoldMilliseconds` (answers that arrive
    /// while a batch is being recorded wait for it first); a recorded
    /// answer costs a few pages of WAL, and a batch shares most of them.
    /// The rest (no answer, a refused token) are handled one by one. No new
    /// request goes out while eight times `concurrency` answers wait or are
    /// being recorded. The next jobs are claimed while the last ones are
    /// being sent.
    final class PassRunner: @unchecked Sendable {
        private let drainer: Drainer
        private let width: Int
        private let mailbox = Mutex(Mailbox())

        private struct Mailbox: ~Copyable {
            var events: [PassEvent] = []
            /// A thread holds the turn.
            var busy = false
            /// `run`'s caller, resumed once nothing is outstanding.
            var finished: CheckedContinuation<(stop: Stop?, unsent: [OutboxJob]), Never>?
        }

        // Touched only by the thread that holds the turn.
        private var claimed: [OutboxJob] = []
        private var stop: Stop?
        private var sending = 0, recording = 0, claiming = false, recordingBatch = false
        /// A hold-over timer is running; it has fired since the last batch.
        private var holding = false, heldLongEnough = false
        private var plain: [(OutboxJob, SyncOutcome)] = []
        /// Recordings finished and triggers so far: a claim that started
        /// before the last one may have missed what it made eligible.
        private var changes = 0
        /// Nothing eligible at the last look; an answer recorded since may
        /// make more eligible (a receipt after its create).
        private var exhausted = false
        /// `run` has returned: news that still arrives (a trigger) is ignored.
        private var done = false

        init(_ drainer: Drainer) {
            self.drainer = drainer
            width = drainer.width
        }

        /// Sends until done. Returns why the pass must stop (if it must) and
        /// the jobs claimed but never handed to the network.
        func run() async -> (stop: Stop?, unsent: [OutboxJob]) {
            await withCheckedContinuation { continuation in
                mailbox.withLock { $0.finished = continuation }
                post(.start)
            }
        }

        func post(_ event: PassEvent) {
            let mine = mailbox.withLock { mailbox -> Bool in
                mailbox.events.append(event)
                defer { mailbox.busy = true }
                return !mailbox.busy
            }
            guard mine else { return }
            while let events = takeOrLeave() {
                guard !done else { continue }
                for event in events { handle(event) }
                startMore()
                if sending == 0 && recording == 0 && !claiming && !holding,
                   let finished = mailbox.withLock({ $0.finished.take() }) {
                    // Nothing is outstanding: only a trigger may still come.
                    done = true
                    finished.resume(returning: (stop, claimed))
                }
            }
        }

        /// The news posted so far, or nil after giving up the turn when there is none.
        private func takeOrLeave() -> [PassEvent]? {
            mailbox.withLock { mailbox in
                guard !mailbox.events.isEmpty else {
                    mailbox.busy = false
                    return nil
                }
                defer { mailbox.events = [] }
                return mailbox.events
            }
        }

        private func handle(_ event: PassEvent) {
            switch event {
            case .start:
                break
            case .triggered:
                changes += 1
                exhausted = false
            case .claimed(let jobs, let seen):
                claiming = false
                if !jobs.isEmpty { drainer.onChange() }
                else if seen == changes { exhausted = true }
                claimed += jobs
            case .answered(let job, let answer):
                sending -= 1
                if answer.madeARequest { FaultPoints.hit("after-response") }
                if answer.isPlain {
                    plain.append((job, answer.outcome))
                } else {
                    recording += 1
                    Task { [self, drainer] in post(.recorded(await drainer.handle(job, answer), count: 1, batch: false)) }
                }
            case .recorded(let reason, let count, let batch):
                recording -= count
                changes += 1
                if batch { recordingBatch = false }
                exhausted = false
                drainer.markProgress()
                if let reason, stop == nil { stop = reason }
            case .stopping:
                break
            case .holdOver:
                holding = false
                heldLongEnough = !plain.isEmpty
            }
        }

        private func startMore() {
            let stopping = drainer.isStopping
            // Answers are recorded whether or not the pass goes on.
            if !recordingBatch && !plain.isEmpty
                && (plain.count >= 4 * width || sending == 0 || heldLongEnough || stop != nil || stopping) {
                let batch = plain
                plain = []
                heldLongEnough = false
                recordingBatch = true
                recording += batch.count
                Task { [self, drainer] in
                    await drainer.record(batch)
                    post(.recorded(nil, count: batch.count, batch: true))
                }
            } else if !plain.isEmpty && !holding && !recordingBatch {
                // While a batch is being recorded its end decides.
                holding = true
                Task { [self] in
                    try? await Task.sleep(for: .milliseconds(Drainer.answerHoldMilliseconds))
                    post(.holdOver)
                }
            }
            let going = stop == nil && !stopping
            if going && !claiming && !exhausted && claimed.count < 4 * width {
                claiming = true
                let seen = changes, limit = width * 16
                Task { [self, drainer] in
                    // The token file is looked at here (at most once a
                    // second), not on the thread that hands requests over.
                    drainer.tokens.reloadIfDue()
                    do {
                        post(.claimed(try await drainer.store.claim(limit: limit, now: Clock.wallMilliseconds), afterChanges: seen))
                    } catch {
                        drainer.logger.error("Failed to read the outbox: \(error)")
                        post(.claimed([], afterChanges: seen))
                    }
                }
            }
            while going && sending < 2 * width && recording + plain.count < 8 * width && !claimed.isEmpty {
                let job = claimed.removeFirst()
                sending += 1
                drainer.send(job) { [self] in post(.answered(job, $0)) }
            }
        }
    }
}
