import ExpenseCore

/// The decisions of one pass's sending, as a value: each batch of news
/// goes in, and what to do about it comes out as actions, which the
/// ``Drainer/PassRunner`` performs. Nothing here waits, spawns or calls
/// out, so every decision is tested by feeding events and comparing the
/// actions (`PassMachineTests`), without a thread, a store or a server.
///
/// The policy: keep up to two times `width` requests handed to the
/// backend (it holds the second half ready, so a connection that frees
/// takes the next at once). Plain answers (the server took or judged the
/// job) are recorded in batches, one store call each: a batch goes once
/// four times `width` answers wait, nothing else is on the wire, the first
/// of them has waited ``holdMilliseconds``, or the pass is stopping;
/// answers that arrive while a batch is being recorded wait for it. The
/// rest (no answer, a refused token, an unreadable receipt) are handled one
/// by one. No new request goes out while eight times `width` answers wait
/// or are being recorded. The next jobs are claimed while the last ones
/// are being sent, and a claim that started before a recording or a
/// trigger finished is not taken to mean that nothing is eligible.
struct PassMachine {
    /// News for the pass.
    enum Event: Sendable, Equatable {
        case start
        /// Something was queued: look for eligible jobs again.
        case triggered
        /// Jobs claimed, by a claim that started after `changes` recordings and triggers.
        case claimed([OutboxJob], afterChanges: Int)
        case answered(OutboxJob, Drainer.Answer)
        /// The daemon is stopping: claim and send nothing more.
        case stopping
        /// Answers recorded: a batch of plain ones, or one handled alone;
        /// with why the pass must stop, if it must.
        case recorded(Drainer.Stop?, count: Int, batch: Bool)
        /// Answers waiting to be recorded have waited long enough.
        case holdOver
    }

    /// What the runner is to do, in order.
    enum Action: Sendable, Equatable {
        /// Claim up to `limit` eligible jobs; answer with `.claimed(…, afterChanges:)`.
        case claim(limit: Int, afterChanges: Int)
        /// Hand the job to the backend; its answer comes as `.answered`.
        case send(OutboxJob)
        /// Record these plain answers in one store call; then `.recorded(nil, count:, batch: true)`.
        case record([PlainAnswer])
        /// Handle this answer alone; then `.recorded(stop, count: 1, batch: false)`.
        case handleAlone(OutboxJob, Drainer.Answer)
        /// Post `.holdOver` after ``holdMilliseconds``.
        case startHoldTimer
        /// A request got an answer (the `after-response` fault point).
        case answerArrived
        /// Jobs changed state: republish the summary.
        case publishChange
        /// The pass made progress (the watchdog's liveness).
        case markProgress
        /// Nothing is outstanding: the pass's sending is over.
        case finish(stop: Drainer.Stop?, unsent: [OutboxJob])
    }

    struct PlainAnswer: Sendable, Equatable {
        let job: OutboxJob
        let outcome: SyncOutcome
    }

    /// How long plain answers may wait for more to be recorded with.
    static let holdMilliseconds = 20

    /// Requests in flight at once the backend takes.
    let width: Int

    private var claimed: [OutboxJob] = []
    /// Claimed jobs of accounts paused during the pass: never sent, given back at the end.
    private var held: [OutboxJob] = []
    private var stop: Drainer.Stop?
    private var stopping = false
    private var sending = 0, recording = 0, claiming = false, recordingBatch = false
    /// A hold-over timer is running; it has fired since the last batch.
    private var holding = false, heldLongEnough = false
    private var plain: [PlainAnswer] = []
    /// Recordings finished and triggers so far: a claim that started
    /// before the last one may have missed what it made eligible.
    private var changes = 0
    /// Nothing eligible at the last look; an answer recorded since may
    /// make more eligible (a receipt after its create).
    private var exhausted = false
    /// `finish` was returned: news that still arrives (a trigger) is ignored.
    private(set) var isFinished = false

    init(width: Int) {
        precondition(width > 0, "a pass sends at least one request at a time")
        self.width = width
    }

    /// Takes in `events`, in the order they came, and returns what to do.
    mutating func handle(_ events: [Event]) -> [Action] {
        guard !isFinished else { return [] }
        var actions: [Action] = []
        for event in events { take(event, into: &actions) }
        decide(into: &actions)
        if sending == 0 && recording == 0 && !claiming && !holding {
            isFinished = true
            actions.append(.finish(stop: stop, unsent: claimed + held))
        }
        return actions
    }

    private mutating func take(_ event: Event, into actions: inout [Action]) {
        switch event {
        case .start:
            break
        case .triggered:
            changes += 1
            exhausted = false
        case .claimed(let jobs, let seen):
            claiming = false
            if !jobs.isEmpty { actions.append(.publishChange) }
            else if seen == changes { exhausted = true }
            claimed += jobs
        case .answered(let job, let answer):
            sending -= 1
            if answer.madeARequest { actions.append(.answerArrived) }
            if answer.isPlain {
                plain.append(PlainAnswer(job: job, outcome: answer.outcome))
            } else {
                recording += 1
                actions.append(.handleAlone(job, answer))
            }
        case .recorded(let reason, let count, let batch):
            recording -= count
            changes += 1
            if batch { recordingBatch = false }
            exhausted = false
            actions.append(.markProgress)
            if case .accountPaused(let account) = reason {
                // That account's jobs wait; the others' go on.
                held += claimed.filter { $0.account == account }
                claimed.removeAll { $0.account == account }
            } else if let reason, stop == nil {
                stop = reason
            }
        case .stopping:
            stopping = true
        case .holdOver:
            holding = false
            heldLongEnough = !plain.isEmpty
        }
    }

    private mutating func decide(into actions: inout [Action]) {
        // Answers are recorded whether or not the pass goes on.
        if !recordingBatch && !plain.isEmpty
            && (plain.count >= 4 * width || sending == 0 || heldLongEnough || stop != nil || stopping) {
            actions.append(.record(plain))
            recording += plain.count
            plain = []
            heldLongEnough = false
            recordingBatch = true
        } else if !plain.isEmpty && !holding && !recordingBatch {
            // While a batch is being recorded its end decides.
            holding = true
            actions.append(.startHoldTimer)
        }
        let going = stop == nil && !stopping
        if going && !claiming && !exhausted && claimed.count < 4 * width {
            claiming = true
            actions.append(.claim(limit: width * 16, afterChanges: changes))
        }
        while going && sending < 2 * width && recording + plain.count < 8 * width && !claimed.isEmpty {
            sending += 1
            actions.append(.send(claimed.removeFirst()))
        }
    }
}
