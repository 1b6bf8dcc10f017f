import DaemonSupport
import ExpenseCore
import Posix
import Synchronization

extension Drainer {
    /// The sending part of one pass: performs what its ``PassMachine``
    /// decides, and brings it the news.
    ///
    /// It is run by whoever brings news: an answer is handled on the
    /// backend's thread as it arrives (and the next request handed over
    /// from there), a claim's or a recording's result by the task that made
    /// it. One thread at a time holds the turn and handles everything
    /// posted until none is left; a thread that posts while another holds
    /// it leaves its news for that one. Nothing done in the turn waits for
    /// the store, a file or the network: those run as child tasks of
    /// ``run()``. So a plain answer costs no task and no thread wake-up
    /// (measured: daemon CPU per create went from about 225 to 160 µs).
    final class PassRunner: @unchecked Sendable {
        // @unchecked: `machine` is touched only by the thread that holds the
        // turn, which `mailbox`'s lock hands from one thread to the next.
        private let drainer: Drainer
        private let mailbox = Mutex(Mailbox())
        private var machine: PassMachine
        /// Work that must not run in the turn (store calls, timers), for
        /// ``run()``'s task group to run as its children.
        private let workQueue = PassWorkQueue()
        /// `sync --now`: what a metered link holds is sent in this pass.
        private let overridingMeteredHold: Bool

        private struct Mailbox: ~Copyable {
            var events: [PassMachine.Event] = []
            /// A thread holds the turn.
            var busy = false
            /// What the pass's sending came to, once the machine finished.
            var result: (stop: Stop?, unsent: [OutboxJob])?
        }

        init(_ drainer: Drainer, overridingMeteredHold: Bool) {
            self.drainer = drainer
            self.overridingMeteredHold = overridingMeteredHold
            machine = PassMachine(width: drainer.width)
        }

        /// Sends until done. Returns why the pass must stop (if it must) and
        /// the jobs claimed but never handed to the network. Every task the
        /// pass needs is a child of this call, so none outlives it.
        func run() async -> (stop: Stop?, unsent: [OutboxJob]) {
            post(.start)
            await withTaskGroup(of: Void.self) { group in
                while let work = await workQueue.next() { group.addTask(operation: work) }
            }
            guard let result = mailbox.withLock({ $0.result.take() }) else {
                preconditionFailure("the pass's work ended before its machine finished")
            }
            return result
        }

        /// Brings news from a task of its own: the caller (an add's answer,
        /// a watchdog tick) never does the pass's work. A pass that ended
        /// meanwhile ignores it.
        func postLater(_ event: PassMachine.Event) {
            workQueue.yield { [self] in post(event) }
        }

        func post(_ event: PassMachine.Event) {
            let mine = mailbox.withLock { mailbox -> Bool in
                mailbox.events.append(event)
                defer { mailbox.busy = true }
                return !mailbox.busy
            }
            guard mine else { return }
            while let events = takeOrLeave() {
                for action in machine.handle(events) { perform(action) }
            }
        }

        /// The news posted so far, or nil after giving up the turn when there is none.
        private func takeOrLeave() -> [PassMachine.Event]? {
            mailbox.withLock { mailbox in
                guard !mailbox.events.isEmpty else {
                    mailbox.busy = false
                    return nil
                }
                defer { mailbox.events = [] }
                return mailbox.events
            }
        }

        private func perform(_ action: PassMachine.Action) {
            switch action {
            case .claim(let limit, let seen):
                workQueue.yield { [self, drainer] in
                    do {
                        // Accounts paused for credentials keep their jobs, a
                        // metered link the kinds it holds (read at each
                        // claim: the link may change during a pass), and the
                        // backend incomplete expenses.
                        let paused = drainer.record.current.pausedAccounts
                        let hold = drainer.meteredHold(overriding: overridingMeteredHold)
                        let jobs = hold.holdsEverything ? []
                            : try await drainer.store.claim(limit: limit, now: Clock.wallMilliseconds, paused: paused, holding: hold.heldKinds,
                                                              requiring: drainer.backend.requiredFields,
                                                              readingWait: drainer.settings.readingWaitMilliseconds)
                        if jobs.isEmpty { drainer.logger.debug("Drain pass found nothing more to claim") }
                        // Their token files are looked at here (at most once a
                        // second), not on the thread that hands requests over.
                        for account in Set(jobs.map(\.account)) { drainer.tokens.source(for: account).reloadIfDue() }
                        post(.claimed(jobs, afterChanges: seen))
                    } catch {
                        drainer.logger.error("Failed to read the outbox: \(error)")
                        post(.claimed([], afterChanges: seen))
                    }
                }
            case .send(let job):
                drainer.send(job) { [self] in post(.answered(job, $0)) }
            case .record(let batch):
                workQueue.yield { [self, drainer] in
                    await drainer.record(batch)
                    post(.recorded(nil, count: batch.count, batch: true))
                }
            case .handleAlone(let job, let answer):
                workQueue.yield { [self, drainer] in post(.recorded(await drainer.handle(job, answer), count: 1, batch: false)) }
            case .startHoldTimer:
                workQueue.yield { [self] in
                    try? await Task.sleep(for: .milliseconds(PassMachine.holdMilliseconds))
                    post(.holdOver)
                }
            case .answerArrived:
                FaultPoints.hit("after-response")
            case .publishChange:
                drainer.onChange()
            case .markProgress:
                drainer.markProgress()
            case .finish(let stop, let unsent):
                mailbox.withLock { $0.result = (stop, unsent) }
                // Nothing is outstanding: the task group has no child left
                // to wait for, and news that still comes is dropped.
                workQueue.finish()
            }
        }
    }
}
