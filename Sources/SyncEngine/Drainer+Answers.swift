import DaemonSupport
import ExpenseCore
import OutboxStore
import Posix

extension Drainer {
    /// The code of a refusal made here, without a request: the job's
    /// account has no usable token.
    static let noTokenCode = "no token"

    /// One job's trip: what the backend made of it, and the generation of
    /// the token it carried.
    struct Answer: Sendable, Equatable {
        let outcome: SyncOutcome
        let tokenGeneration: Int

        /// Whether recording it is all there is to do: nothing to pause,
        /// nothing but the job's own row and the cache to change. Such
        /// answers are recorded together, in one store call; the rest (no
        /// answer, a refused token, an unreadable receipt) go to
        /// ``handle(_:_:)``.
        var isPlain: Bool {
            switch outcome {
            case .applied, .failed: true
            case .unanswered, .refused, .receiptUnreadable: false
            }
        }

        /// Whether a request was made (answered or not): not for a receipt
        /// that could not be read.
        var madeARequest: Bool {
            if case .receiptUnreadable = outcome { return false }
            return true
        }
    }

    /// Hands one job to the backend with its account's token as last read
    /// (the thread that hands requests over must not wait for a file
    /// system); `answered` gets the trip, on the backend's thread. With
    /// accounts, a job whose account has no usable token is not sent: it
    /// comes back refused without a request, and pauses its account.
    func send(_ job: OutboxJob, answered: @escaping @Sendable (Answer) -> Void) {
        let source = tokens.source(for: job.account)
        let (token, generation) = source.latest()
        if token == nil && tokens.holdsWithoutToken(job.account) {
            answered(Answer(outcome: .refused(code: Drainer.noTokenCode, summary: "no usable token"), tokenGeneration: generation))
            return
        }
        FaultPoints.hit("before-send")
        logger.debug("Sending \(job.kind.rawValue) \(backend.describe(job))", transactionID: job.transactionID, jobUUID: job.uuid, account: job.account)
        backend.send(job, receiptPath: job.receiptFile.map(store.receipts.filePath), token: token) { outcome in
            answered(Answer(outcome: outcome, tokenGeneration: generation))
        }
    }

    /// Applies the outcome of one send that is not a plain answer (see
    /// ``Answer/isPlain``) to the store and logs it.
    /// - Returns: why the pass must stop, or nil to carry on.
    func handle(_ job: OutboxJob, _ answer: Answer) async -> Stop? {
        switch answer.outcome {
        case .receiptUnreadable(let reason):
            logger.error("Receipt file '\(job.receiptFile ?? "")' cannot be read: \(reason)", transactionID: job.transactionID, jobUUID: job.uuid, account: job.account,
                         messageID: .needsAttention)
            try? await store.markNeedsAttention(job, error: "receipt file cannot be read: \(reason)")
            onChange()
            return nil
        case .unanswered(let reason, let requestSent):
            // Back to the queue with no attempt counted, saying why (show
            // tells). When nothing left this machine the job counts as never
            // sent: a create takes the edits or the delete made meanwhile.
            // Cut off by a stop: to a backend that looks the marker up before
            // sending a create again, the request may still be committing there.
            let settleUntil = isStopping && requestSent && job.kind == .create && settings.settlesInterruptedCreates
                ? Clock.wallMilliseconds + settings.longestRequestMilliseconds : nil
            let dropped = try? await store.requeue(job, error: settleUntil == nil ? "no answer: \(reason)"
                                                       : "no answer: \(reason); stopped while it was in flight, its marker is looked up once the request can no longer be committing",
                                                   errorClass: settleUntil == nil ? "transport" : "transient", wasSent: requestSent, settleUntil: settleUntil)
            noteUnreachable("Server unreachable (\(reason)); \(job.kind.rawValue) stays queued, no attempt counted",
                            reason: reason, transactionID: job.transactionID, jobUUID: job.uuid, account: job.account)
            if let dropped { noteDropped([dropped]) }
            onChange()
            return .unreachable
        case .refused(let code, let summary):
            let contacted = code != Drainer.noTokenCode
            let now = Clock.wallMilliseconds
            if contacted { noteAnswer { $0.answered(at: now) } }
            _ = try? await store.requeue(job, error: summary, errorClass: "auth", wasSent: contacted)
            // Refused with a token that has been replaced since: try again
            // with the new one. A pause holds only this job's account: with
            // accounts, the pass goes on for the others.
            let paused = await pauseForCredentials(account: job.account, refusedGeneration: answer.tokenGeneration, code: code, contacted: contacted)
            return paused ? .accountPaused(job.account) : nil
        case .applied, .failed:
            preconditionFailure("plain answers are recorded in batches")
        }
    }

    /// Logs the expenses whose never-sent chain a job going back to the
    /// queue dropped (deleted while their create was claimed).
    func noteDropped(_ transactionIDs: [String]) {
        for transactionID in transactionIDs {
            logger.info("Deleted before it reached the server; nothing will be sent", transactionID: transactionID)
        }
    }

    /// Records plain answers (the server was reached, with our
    /// credentials): the retry policy decides each job's fate, one
    /// transaction stores them, then receipt files go and each outcome is logged.
    func record(_ answers: [PassMachine.PlainAnswer]) async {
        let now = Clock.wallMilliseconds
        noteAnswer { $0.answered(at: now) }
        let updates = answers.map { answer in
            (job: answer.job, update: policy.update(for: answer.job, after: answer.outcome, now: now, random: { Double.random(in: 0...1) }),
             goneOnServer: answer.outcome.isGone)
        }
        let results: [Result<String?, any Error>]
        do {
            // An answer is counted as its commit is seen: a summary read
            // after it (`sync --wait`'s end, `status` showing a job that
            // needs attention) comes with `stats` counting it.
            results = try await store.complete(updates, now: now) { [self] results in
                for ((job, update, _), result) in zip(updates, results) {
                    guard case .success = result else { continue }
                    switch update {
                    case .applied: countApplied(job, now: now)
                    case .retry(_, _, _, _, let errorClass), .needsAttention(_, _, _, let errorClass): recordFailure(errorClass, account: job.account)
                    case .dropReceipt, .requeue: break
                    }
                }
            }
            FaultPoints.hit("after-answers-recorded")
        } catch {
            results = updates.map { _ in .failure(error) }
        }
        for ((job, update, _), (answer, result)) in zip(updates, zip(answers, results)) {
            let outcome = answer.outcome
            switch result {
            case .failure(let error):
                logger.error("Failed to record the server's answer (\(outcome.code)): \(error); the job is resent after restart as a replay",
                             transactionID: job.transactionID, jobUUID: job.uuid, account: job.account)
            case .success(let file):
                if let file {
                    FaultPoints.hit("after-job-removed")
                    do {
                        try store.receipts.remove(file)
                    } catch {
                        logger.warning("Failed to remove receipt file '\(file)': \(error); the next start removes it", transactionID: job.transactionID, account: job.account)
                    }
                }
                report(job, update, outcome)
            }
        }
        onChange()
    }

    /// Counts an applied job in the stats since start, its latency to the
    /// answer at `now`: the moment the store's total takes, so both halves
    /// of `stats` measure the same.
    private func countApplied(_ job: OutboxJob, now: Int64) {
        let latency = now - job.createdMilliseconds
        state.withLock { state in
            state.stats.recordApplied(latencyMilliseconds: latency)
            if tokens.directory != nil { state.accountStats[job.account, default: SyncStats()].recordApplied(latencyMilliseconds: latency) }
        }
    }

    private func report(_ job: OutboxJob, _ update: JobUpdate, _ outcome: SyncOutcome) {
        let what = job.kind.rawValue
        switch update {
        case .applied(let expense):
            updateServer { $0.succeeded(account: job.account, at: Clock.wallMilliseconds) }
            logger.info("Applied \(what) (\(outcome.code)\(outcome.isReplay ? ", replayed" : ""))", transactionID: job.transactionID, jobUUID: job.uuid, account: job.account,
                        messageID: job.kind == .receipt ? .receiptUploaded : .expenseApplied)
            if expense == nil && job.kind != .delete {
                logger.warning("Server applied \(what) but its answer held no expense; the next refresh brings it", transactionID: job.transactionID, account: job.account)
                state.withLock { $0.refreshRequested = true }
            }
        case .dropReceipt:
            logger.notice("Expense was deleted on the server (\(outcome.code)); its receipt upload is dropped", transactionID: job.transactionID, jobUUID: job.uuid, account: job.account)
        case .requeue:
            break
        case .retry(let next, _, _, let error, let errorClass):
            updateServer { $0.failed(account: job.account, errorClass, error, at: Clock.wallMilliseconds) }
            let delay = max(next - Clock.wallMilliseconds, 0)
            logger.notice("Server answered \(error) to \(what) (\(errorClass)); retrying in \(QueueSummary.age(milliseconds: delay))",
                          transactionID: job.transactionID, jobUUID: job.uuid, account: job.account)
        case .needsAttention(let attempts, let transient, let error, let errorClass):
            updateServer { $0.failed(account: job.account, errorClass, error, at: Clock.wallMilliseconds) }
            logger.warning("\(what.capitalized) needs attention after \(attempts + transient) failed attempts; last answer: \(error). \(AttentionHint.text(errorClass: errorClass, transactionID: job.transactionID))",
                           transactionID: job.transactionID, jobUUID: job.uuid, account: job.account, messageID: .needsAttention)
        }
    }
}

extension SyncOutcome {
    /// The backend's name for its answer, for log lines.
    var code: String {
        switch self {
        case .applied(_, _, let code), .refused(let code, _): code
        // The summary starts with it: "503 service_unavailable: …".
        case .failed(let failure): String(failure.summary.prefix { $0 != " " })
        case .unanswered, .receiptUnreadable: "no answer"
        }
    }

    var isReplay: Bool {
        if case .applied(_, true, _) = self { return true }
        return false
    }

    /// The backend says the expense is gone for good: the cache marks it deleted at once.
    var isGone: Bool {
        if case .failed(let failure) = self { return failure.kind == .gone }
        return false
    }
}

private extension String {
    var capitalized: String { prefix(1).uppercased() + dropFirst() }
}
