import ExpenseCore
import ExpenseTestSupport
@testable import SyncEngine
import Testing

/// The pass's decisions, event by event: what a batch of news makes the
/// runner do, with no thread, store or server.
@Suite struct PassMachineTests {
    typealias Event = PassMachine.Event
    typealias Action = PassMachine.Action

    static func job(_ n: Int64) -> OutboxJob {
        OutboxJob(seq: n, uuid: "job-\(n)", kind: .create, transactionID: "cp-\(n)")
    }

    static let ok = Drainer.Answer(outcome: .applied(nil, replayed: false, code: "201"), tokenGeneration: 0)
    static let noAnswer = Drainer.Answer(outcome: .unanswered(reason: "reset", requestSent: true), tokenGeneration: 0)
    static let refused = Drainer.Answer(outcome: .refused(code: "401", summary: "401"), tokenGeneration: 0)

    static func plain(_ job: OutboxJob) -> PassMachine.PlainAnswer { PassMachine.PlainAnswer(job: job, outcome: ok.outcome) }

    let j1 = job(1), j2 = job(2), j3 = job(3), j4 = job(4), j5 = job(5), j6 = job(6)

    /// Feeds each step's events and checks the actions it returns.
    func run(width: Int, _ steps: [([Event], [Action])], sourceLocation: SourceLocation = #_sourceLocation) {
        var machine = PassMachine(width: width)
        for (index, (events, expected)) in steps.enumerated() {
            let actions = machine.handle(events)
            #expect(actions == expected, "step \(index): \(events)", sourceLocation: sourceLocation)
        }
    }

    @Test func onePass_claimsSendsRecordsInOneBatch_andLooksAgainAfterRecording() {
        run(width: 2, [
            ([.start], [.claim(limit: 32, afterChanges: 0)]),
            // The next claim goes while these are sent.
            ([.claimed([j1, j2, j3], afterChanges: 0)], [.publishChange, .claim(limit: 32, afterChanges: 0), .send(j1), .send(j2), .send(j3)]),
            ([.claimed([], afterChanges: 0)], []),
            // The first answer waits for company; the last one on the wire sends the batch.
            ([.answered(j2, Self.ok)], [.answerArrived, .startHoldTimer]),
            ([.answered(j1, Self.ok), .answered(j3, Self.ok)], [.answerArrived, .answerArrived, .record([Self.plain(j2), Self.plain(j1), Self.plain(j3)])]),
            ([.holdOver], []),
            // A recorded answer may make more eligible (a receipt after its create).
            ([.recorded(nil, count: 3, batch: true)], [.markProgress, .claim(limit: 32, afterChanges: 1)]),
            ([.claimed([], afterChanges: 1)], [.finish(stop: nil, unsent: [])]),
            // A trigger after the end is ignored.
            ([.triggered], []),
        ])
    }

    @Test func triggerDuringAClaim_claimsAgain_insteadOfTakingTheEmptyClaimAsTheEnd() {
        run(width: 1, [
            ([.start], [.claim(limit: 16, afterChanges: 0)]),
            ([.triggered], []),
            ([.claimed([], afterChanges: 0)], [.claim(limit: 16, afterChanges: 1)]),
            ([.claimed([], afterChanges: 1)], [.finish(stop: nil, unsent: [])]),
        ])
    }

    @Test func triggerAfterNothingWasEligible_looksAgain_whileAnswersAreOutstanding() {
        run(width: 1, [
            ([.start], [.claim(limit: 16, afterChanges: 0)]),
            ([.claimed([j1], afterChanges: 0)], [.publishChange, .claim(limit: 16, afterChanges: 0), .send(j1)]),
            ([.claimed([], afterChanges: 0)], []),
            ([.triggered], [.claim(limit: 16, afterChanges: 1)]),
            ([.claimed([j2], afterChanges: 1)], [.publishChange, .claim(limit: 16, afterChanges: 1), .send(j2)]),
        ])
    }

    @Test func stopDuringABatch_sendsNothingMore_recordsWhatArrived_andReturnsTheUnsent() {
        run(width: 1, [
            ([.start], [.claim(limit: 16, afterChanges: 0)]),
            // Four claimed is enough to wait for: no second claim yet.
            ([.claimed([j1, j2, j3, j4], afterChanges: 0)], [.publishChange, .send(j1), .send(j2)]),
            ([.answered(j1, Self.ok)], [.answerArrived, .startHoldTimer, .claim(limit: 16, afterChanges: 0), .send(j3)]),
            ([.claimed([j5, j6], afterChanges: 0)], [.publishChange, .claim(limit: 16, afterChanges: 0)]),
            ([.answered(j2, Self.ok)], [.answerArrived, .send(j4)]),
            ([.holdOver], [.record([Self.plain(j1), Self.plain(j2)])]),
            ([.stopping], []),
            ([.claimed([], afterChanges: 0)], []),
            // A batch is being recorded: the next waits for it.
            ([.answered(j3, Self.ok)], [.answerArrived]),
            // Stopping ends what is in flight as unanswered.
            ([.answered(j4, Self.noAnswer)], [.answerArrived, .handleAlone(j4, Self.noAnswer)]),
            ([.recorded(nil, count: 2, batch: true)], [.markProgress, .record([Self.plain(j3)])]),
            ([.recorded(.unreachable, count: 1, batch: false)], [.markProgress]),
            ([.recorded(nil, count: 1, batch: true)], [.markProgress, .finish(stop: .unreachable, unsent: [j5, j6])]),
        ])
    }

    @Test func stopBeforeTheStart_endsAtOnce() {
        run(width: 4, [([.stopping, .start], [.finish(stop: nil, unsent: [])])])
    }

    @Test func refusedCredentials_stopTheClaims_andTheRestStillGetRecorded() {
        run(width: 1, [
            ([.start], [.claim(limit: 16, afterChanges: 0)]),
            ([.claimed([j1, j2, j3, j4, j5], afterChanges: 0)], [.publishChange, .send(j1), .send(j2)]),
            // Handled alone, off the turn; the wire keeps going meanwhile.
            ([.answered(j1, Self.refused)], [.answerArrived, .handleAlone(j1, Self.refused), .claim(limit: 16, afterChanges: 0), .send(j3)]),
            ([.recorded(.credentials, count: 1, batch: false)], [.markProgress]),
            // The pass stops: an answer that still comes is recorded at once.
            ([.answered(j2, Self.ok)], [.answerArrived, .record([Self.plain(j2)])]),
            ([.claimed([j6], afterChanges: 0)], [.publishChange]),
            ([.answered(j3, Self.ok)], [.answerArrived]),
            ([.recorded(nil, count: 1, batch: true)], [.markProgress, .record([Self.plain(j3)])]),
            ([.recorded(nil, count: 1, batch: true)], [.markProgress, .finish(stop: .credentials, unsent: [j4, j5, j6])]),
        ])
    }

    /// bob's token is refused mid-pass: his account pauses, alone. His
    /// job claimed but not yet sent is never sent and comes back in
    /// `finish`'s unsent (which the runner puts back with `wasSent:
    /// false`); the claims after it skip his jobs (the runner passes the
    /// paused accounts to the store, here: a claim of alice's only), and
    /// alice's go on to the end.
    @Test func accountPausedMidPass_holdsBackItsClaimedJobs_andTheOthersGoOn() {
        func of(_ account: String, _ n: Int64) -> OutboxJob {
            OutboxJob(seq: n, uuid: "job-\(n)", kind: .create, transactionID: "cp-\(n)", account: account)
        }
        let b1 = of("bob", 1), a2 = of("alice", 2), a3 = of("alice", 3), b4 = of("bob", 4), a5 = of("alice", 5), a6 = of("alice", 6)
        run(width: 1, [
            ([.start], [.claim(limit: 16, afterChanges: 0)]),
            ([.claimed([b1, a2, a3, b4, a5], afterChanges: 0)], [.publishChange, .send(b1), .send(a2)]),
            ([.answered(b1, Self.refused)], [.answerArrived, .handleAlone(b1, Self.refused), .claim(limit: 16, afterChanges: 0), .send(a3)]),
            // bob is paused: b4 waits, a5 goes when the wire has room.
            ([.recorded(.accountPaused("bob"), count: 1, batch: false)], [.markProgress]),
            // A claim that started before the pause, of alice's.
            ([.claimed([a6], afterChanges: 0)], [.publishChange, .claim(limit: 16, afterChanges: 1)]),
            ([.answered(a2, Self.ok), .answered(a3, Self.ok)],
             [.answerArrived, .answerArrived, .record([Self.plain(a2), Self.plain(a3)]), .send(a5), .send(a6)]),
            ([.claimed([], afterChanges: 1)], []),
            ([.answered(a5, Self.ok), .answered(a6, Self.ok)], [.answerArrived, .answerArrived]),
            ([.recorded(nil, count: 2, batch: true)], [.markProgress, .record([Self.plain(a5), Self.plain(a6)]), .claim(limit: 16, afterChanges: 2)]),
            ([.claimed([], afterChanges: 2)], []),
            ([.recorded(nil, count: 2, batch: true)], [.markProgress, .claim(limit: 16, afterChanges: 3)]),
            // The pass is not stopped by the pause, and gives bob's job back unsent.
            ([.claimed([], afterChanges: 3)], [.finish(stop: nil, unsent: [b4])]),
        ])
    }

    @Test func unreadableReceipt_isHandledAlone_withoutCountingAsAnAnswer() {
        let unreadable = Drainer.Answer(outcome: .receiptUnreadable(reason: "gone"), tokenGeneration: 0)
        run(width: 1, [
            ([.start], [.claim(limit: 16, afterChanges: 0)]),
            ([.claimed([j1], afterChanges: 0), .claimed([], afterChanges: 0)], [.publishChange, .send(j1)]),
            ([.answered(j1, unreadable)], [.handleAlone(j1, unreadable)]),
            ([.recorded(nil, count: 1, batch: false)], [.markProgress, .claim(limit: 16, afterChanges: 1)]),
        ])
    }

    @Test func manyAnswersWaiting_goAsABatch_beforeTheWireEmpties() {
        var machine = PassMachine(width: 1)
        _ = machine.handle([.start])
        let jobs = (1...8).map { Self.job(Int64($0)) }
        _ = machine.handle([.claimed(jobs, afterChanges: 0), .claimed([], afterChanges: 0)])
        // Width 1: two on the wire; each answer lets the next go.
        var batches: [[PassMachine.PlainAnswer]] = []
        var sent = [jobs[0], jobs[1]]
        var answered = 0
        while answered < sent.count {
            for action in machine.handle([.answered(sent[answered], Self.ok)]) {
                if case .record(let batch) = action { batches.append(batch) }
                if case .send(let job) = action { sent.append(job) }
            }
            answered += 1
            if !batches.isEmpty { break }
        }
        #expect(batches.count == 1)
        #expect(batches.first?.count == 4, "four times the width of answers make a batch while requests are still out")
    }

    /// Answers in every order, mixed with one that got no answer: each job
    /// is sent once, each answer recorded once, and the pass ends once,
    /// last, saying the server could not be reached.
    @Test(arguments: [[0, 1, 2], [0, 2, 1], [1, 0, 2], [1, 2, 0], [2, 0, 1], [2, 1, 0]])
    func answersInAnyOrder_areEachRecordedOnce(order: [Int]) {
        let jobs = [j1, j2, j3]
        let answers = [Self.ok, Self.noAnswer, Self.ok]
        var machine = PassMachine(width: 2)
        var log: [Action] = []
        var pending: [Event] = [.start]
        var answersLeft = order
        while !machine.isFinished {
            let actions = machine.handle(pending)
            pending = []
            log += actions
            for action in actions {
                switch action {
                case .claim(_, let seen): pending.append(.claimed(log.contains { if case .send = $0 { true } else { false } } ? [] : jobs, afterChanges: seen))
                case .record(let batch): pending.append(.recorded(nil, count: batch.count, batch: true))
                case .handleAlone(_, let answer): pending.append(.recorded(answer == Self.noAnswer ? .unreachable : nil, count: 1, batch: false))
                case .startHoldTimer: pending.append(.holdOver)
                default: break
                }
            }
            if pending.isEmpty, let next = answersLeft.first {
                answersLeft.removeFirst()
                pending.append(.answered(jobs[next], answers[next]))
            }
            if pending.isEmpty && !machine.isFinished {
                Issue.record("the pass waits for nothing: \(log)")
                return
            }
        }
        let sent = log.compactMap { if case .send(let job) = $0 { job } else { nil } }
        let recorded = log.flatMap { action -> [OutboxJob] in
            switch action {
            case .record(let batch): batch.map(\.job)
            case .handleAlone(let job, _): [job]
            default: []
            }
        }
        #expect(sent == jobs)
        #expect(recorded.sorted { $0.seq < $1.seq } == jobs)
        #expect(log.last == .finish(stop: .unreachable, unsent: []))
        #expect(log.filter { if case .finish = $0 { true } else { false } }.count == 1)
        #expect(machine.handle([.triggered, .answered(j1, Self.ok)]).isEmpty, "news after the end is ignored")
    }

    /// Random interleavings of answers, claims, recordings and triggers:
    /// never more than two times the width on the wire, every claimed job
    /// either sent once or returned unsent, every answer recorded once.
    @Test(arguments: 0..<40)
    func randomInterleavings_keepTheLimits_andLoseNothing(seed: Int) {
        var random = SeededRandom(seed: UInt64(seed) &+ 7)
        let width = 1 + random.next(3)
        var machine = PassMachine(width: width)
        var nextSeq: Int64 = 1
        var outstanding: [Event] = []
        var claimedJobs: [OutboxJob] = [], sent: [OutboxJob] = [], recorded: [OutboxJob] = []
        var inFlight = 0, steps = 0, finish: (Drainer.Stop?, [OutboxJob])?
        var events: [Event] = [.start]
        while finish == nil {
            steps += 1
            guard steps < 10_000 else {
                Issue.record("seed \(seed): no end")
                return
            }
            for action in machine.handle(events) {
                switch action {
                case .claim(let limit, let seen):
                    let count = nextSeq > 60 ? 0 : random.next(min(limit, 6) + 1)
                    let jobs = (0..<count).map { _ in defer { nextSeq += 1 }; return Self.job(nextSeq) }
                    claimedJobs += jobs
                    outstanding.append(.claimed(jobs, afterChanges: seen))
                case .send(let job):
                    sent.append(job)
                    inFlight += 1
                    #expect(inFlight <= 2 * width, "seed \(seed)")
                    let answer = random.chance(0.1) ? Self.noAnswer : Self.ok
                    outstanding.append(.answered(job, answer))
                case .record(let batch):
                    recorded += batch.map(\.job)
                    outstanding.append(.recorded(nil, count: batch.count, batch: true))
                case .handleAlone(let job, _):
                    recorded.append(job)
                    outstanding.append(.recorded(random.chance(0.3) ? .unreachable : nil, count: 1, batch: false))
                case .startHoldTimer:
                    outstanding.append(.holdOver)
                case .finish(let stop, let unsent):
                    finish = (stop, unsent)
                case .answerArrived, .publishChange, .markProgress:
                    break
                }
            }
            events = []
            if finish != nil { break }
            if random.chance(0.05) { events.append(.triggered) }
            if random.chance(0.01) { events.append(.stopping) }
            // Any outstanding news may come next, several at once.
            for _ in 0..<(1 + random.next(2)) where !outstanding.isEmpty {
                let event = outstanding.remove(at: random.next(outstanding.count))
                if case .answered = event { inFlight -= 1 }
                events.append(event)
            }
            if events.isEmpty {
                Issue.record("seed \(seed): the pass waits for nothing")
                return
            }
        }
        #expect(outstanding.isEmpty, "seed \(seed): the pass ended with news outstanding")
        #expect(Set(sent.map(\.seq)).count == sent.count, "seed \(seed): a job sent twice")
        #expect(Set(recorded.map(\.seq)) == Set(sent.map(\.seq)) && recorded.count == sent.count, "seed \(seed)")
        #expect(Set(sent.map(\.seq)).union(finish?.1.map(\.seq) ?? []) == Set(claimedJobs.map(\.seq)), "seed \(seed): a claimed job lost")
    }
}
