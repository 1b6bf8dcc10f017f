import Curl
import Digest
import DaemonSupport
import ExpenseCore
import Posix

extension Drainer {
    /// One job's trip: the answer (nil when it could not even be sent) and
    /// the generation of the token it carried.
    struct Sent {
        let result: Result<HTTPResponse, TransportError>?
        let tokenGeneration: Int

        /// The answer, when recording it is all there is to do: nothing to
        /// pause, nothing but the job's own row and the cache to change.
        /// Such answers are recorded together, in one store call; the rest
        /// (no answer, a refused token) go to ``handle(_:_:)``.
        var plainResponse: HTTPResponse? {
            guard case .success(let response)? = result, !Self.isRefusal(response.status) else { return nil }
            return response
        }

        static func isRefusal(_ status: Int) -> Bool { status == 401 || status == 403 }
    }

    /// Hands one job's request to the HTTP client; `answered` gets the
    /// trip, on the client's thread. A receipt is hashed first (for
    /// `Repr-Digest`) on the digest threads: then the request leaves from
    /// a task of its own. A receipt file that cannot be read marks the job
    /// as needing attention, and the trip has no answer.
    func send(_ job: OutboxJob, answered: @escaping @Sendable (Sent) -> Void) {
        let request = SyncRequest.make(for: job, deviceID: store.deviceID)
        switch request.body {
        case .none:
            start(job, request, body: .none, answered: answered)
        case .json(let bytes):
            start(job, request, body: .bytes(bytes), answered: answered)
        case .receipt(let file, let size, _):
            Task { [self] in
                let path = store.receipts.filePath(file)
                do {
                    let digest = try await digests.run { try Self.digest(of: path) }
                    start(job, request, body: .file(path: path, size: size), digest: digest, answered: answered)
                } catch {
                    logger.error("Receipt file '\(file)' cannot be read: \(error)", transactionID: job.transactionID, jobUUID: job.uuid,
                                 messageID: .needsAttention)
                    try? await store.markNeedsAttention(job, error: "receipt file cannot be read: \(error)")
                    answered(Sent(result: nil, tokenGeneration: tokens.generation))
                }
            }
        }
    }

    /// Hands the request over: `body` as the job's, and a receipt file's
    /// `Repr-Digest`.
    private func start(_ job: OutboxJob, _ request: SyncRequest, body: HTTPRequest.Body, digest: String? = nil,
                       answered: @escaping @Sendable (Sent) -> Void) {
        var headers = request.headers
        if let digest { headers.append(("Repr-Digest", "sha-256=:\(digest):")) }
        var total = configuration.requestTimeoutMilliseconds
        if case .file(_, let size) = body {
            // A large receipt on a slow uplink needs longer than a small
            // request: 64 KiB/s more. The low-speed limit still ends a stall.
            total += size * 1000 / (64 * 1024)
        }
        let (token, generation) = tokens.latest()
        if let token { headers.append(("Authorization", "Bearer \(token)")) }
        var http = HTTPRequest(method: request.method, url: baseURL + request.path, headers: headers, body: body,
                               connectTimeoutMilliseconds: configuration.connectTimeoutMilliseconds,
                               totalTimeoutMilliseconds: total)
        http.lowSpeedSeconds = 30
        FaultPoints.hit("before-send")
        logger.debug("Sending \(job.kind.rawValue) \(request.method) \(request.path)", transactionID: job.transactionID, jobUUID: job.uuid)
        client.start(http) { result in answered(Sent(result: result, tokenGeneration: generation)) }
    }

    /// Base64 of the SHA-256 of a file, read in chunks: `Repr-Digest`.
    static func digest(of path: String) throws -> String {
        let fd = try FileDescriptor.open(path, [.readOnly, .noFollow])
        var hasher = SHA256()
        var buffer = [UInt8](repeating: 0, count: 256 * 1024)
        var offset: Int64 = 0
        while true {
            let n = try fd.read(into: &buffer, at: offset)
            if n == 0 { break }
            buffer[0..<n].withUnsafeBytes { hasher.update($0) }
            offset += Int64(n)
        }
        return Base64.encode(hasher.finalize())
    }

    /// Applies the outcome of one send that is not a plain answer (see
    /// `Sent.plainResponse`) to the store and logs it.
    /// - Returns: why the pass must stop, or nil to carry on.
    func handle(_ job: OutboxJob, _ sent: Sent) async -> Stop? {
        switch sent.result {
        case nil:
            publisher.markChanged()
            return nil
        case .failure(let error)?:
            // Back to the queue with no attempt counted, saying why (show
            // tells). When nothing left this machine the job counts as never
            // sent: a create takes the edits or the delete made meanwhile.
            let dropped = try? await store.requeue(job, error: "no answer: \(error)", errorClass: "transport", wasSent: error.requestSent)
            noteUnreachable("Server unreachable (\(error)); \(job.kind.rawValue) stays queued, no attempt counted",
                            reason: "\(error)", transactionID: job.transactionID, jobUUID: job.uuid)
            if let dropped { noteDropped([dropped]) }
            publisher.markChanged()
            return .unreachable
        case .success(let response)?:
            precondition(Sent.isRefusal(response.status), "plain answers are recorded in batches")
            let now = Clock.wallMilliseconds
            noteAnswer { $0.answered(at: now) }
            _ = try? await store.requeue(job, error: ServerError(body: response.body).summary(status: response.status),
                                     errorClass: "auth", wasSent: true)
            // Refused with a token that has been replaced since: try again with the new one.
            return pauseForCredentials(refusedGeneration: sent.tokenGeneration, status: response.status) ? .credentials : nil
        }
    }

    /// Logs the expenses whose never-sent chain a job going back to the
    /// queue dropped (deleted while their create was claimed).
    func noteDropped(_ transactionIDs: [String]) {
        for transactionID in transactionIDs {
            logger.info("Deleted before it reached the server; nothing will be sent", transactionID: transactionID)
        }
    }

    /// Records answers (the server was reached, with our credentials): the
    /// retry policy decides each job's fate, one transaction stores them,
    /// then receipt files go and each outcome is logged.
    func record(_ answers: [(OutboxJob, HTTPResponse)]) async {
        let now = Clock.wallMilliseconds
        noteAnswer { $0.answered(at: now) }
        let updates = answers.map { job, response in
            (job: job, update: policy.update(for: job, status: response.status, body: response.body,
                                             retryAfter: response.header("retry-after"), now: now, random: { Double.random(in: 0...1) }),
             goneOnServer: response.status == 410)
        }
        let results: [Result<String?, any Error>]
        do {
            results = try await store.complete(updates, now: now)
        } catch {
            results = updates.map { _ in .failure(error) }
        }
        for ((job, update, _), ((_, response), result)) in zip(updates, zip(answers, results)) {
            switch result {
            case .failure(let error):
                logger.error("Failed to record the server's answer (\(response.status)): \(error); the job is resent after restart as a replay",
                             transactionID: job.transactionID, jobUUID: job.uuid)
            case .success(let file):
                if let file {
                    FaultPoints.hit("after-job-removed")
                    do {
                        try store.receipts.remove(file)
                    } catch {
                        logger.warning("Failed to remove receipt file '\(file)': \(error); the next start removes it", transactionID: job.transactionID)
                    }
                }
                report(job, update, status: response.status, replayed: response.header("idempotent-replayed") == "true")
            }
        }
        publisher.markChanged()
    }

    private func report(_ job: OutboxJob, _ update: JobUpdate, status: Int, replayed: Bool) {
        let what = job.kind.rawValue
        switch update {
        case .applied(let expense):
            let latency = Clock.wallMilliseconds - job.createdMilliseconds
            state.withLock { $0.stats.recordApplied(latencyMilliseconds: latency) }
            publisher.updateServer { $0.succeeded(at: Clock.wallMilliseconds) }
            logger.info("Applied \(what) (\(status)\(replayed ? ", replayed" : ""))", transactionID: job.transactionID, jobUUID: job.uuid,
                        messageID: job.kind == .receipt ? .receiptUploaded : .expenseApplied)
            if expense == nil && job.kind != .delete {
                logger.warning("Server applied \(what) but its answer held no expense; the next refresh brings it", transactionID: job.transactionID)
                state.withLock { $0.refreshRequested = true }
            }
        case .dropReceipt:
            logger.notice("Expense was deleted on the server (\(status)); its receipt upload is dropped", transactionID: job.transactionID, jobUUID: job.uuid)
        case .requeue:
            break
        case .retry(let next, _, _, let error, let errorClass):
            state.withLock { $0.stats.recordFailure(errorClass) }
            publisher.updateServer { $0.failed(errorClass, error, at: Clock.wallMilliseconds) }
            let delay = max(next - Clock.wallMilliseconds, 0)
            logger.notice("Server answered \(error) to \(what) (\(errorClass)); retrying in \(QueueSummary.age(milliseconds: delay))",
                          transactionID: job.transactionID, jobUUID: job.uuid)
        case .needsAttention(let attempts, let transient, let error, let errorClass):
            state.withLock { $0.stats.recordFailure(errorClass) }
            publisher.updateServer { $0.failed(errorClass, error, at: Clock.wallMilliseconds) }
            logger.warning("\(what.capitalized) needs attention after \(attempts + transient) failed attempts; last answer: \(error). \(AttentionHint.text(errorClass: errorClass, transactionID: job.transactionID))",
                           transactionID: job.transactionID, jobUUID: job.uuid, messageID: .needsAttention)
        }
    }
}

private extension String {
    var capitalized: String { prefix(1).uppercased() + dropFirst() }
}
