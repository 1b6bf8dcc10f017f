import ExpenseCore
@testable import OutboxStore
import ExpenseTestSupport
import Foundation
import Posix
import Testing

@Suite struct StoreTests {
    let fields = ExpenseFields(merchant: "Blue Bottle", amount: "12.50", currency: "EUR", date: "2026-11-29")

    @Test func enqueue_isReadBackAfterReopening() async throws {
        let dir = TemporaryDirectory()
        let clientID = ClientID.make()
        do {
            let store = try Store(stateDirectory: dir.at("state"))
            let result = try await store.enqueueCreate(fields: fields, clientID: clientID, receipt: nil, now: 1000)
            #expect(result.isNew)
            #expect(result.transactionID == TransactionID.derive(from: clientID))
        }
        let store = try Store(stateDirectory: dir.at("state"))
        let views = try await store.views()
        #expect(views.count == 1)
        #expect(views[0].fields == fields)
        #expect(views[0].state == .queued)
        #expect(views[0].clientID == clientID)
        #expect(views[0].jobs.map(\.kind) == [.create])
    }

    @Test func sameClientID_isOneExpense() async throws {
        let dir = TemporaryDirectory()
        let store = try Store(stateDirectory: dir.at("state"))
        let clientID = ClientID.make()
        let results = try await withThrowingTaskGroup(of: EnqueueResult.self) { group in
            for _ in 0..<10 {
                group.addTask { try await store.enqueueCreate(fields: fields, clientID: clientID, receipt: nil, now: 1) }
            }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        #expect(results.filter(\.isNew).count == 1)
        #expect(try await store.views().count == 1)
    }

    @Test func deviceSequence_isMonotonicAndNeverReused() async throws {
        let dir = TemporaryDirectory()
        let store = try Store(stateDirectory: dir.at("state"))
        let first = try await store.enqueueCreate(fields: fields, clientID: ClientID.make(), receipt: nil, now: 1)
        _ = try await store.discard(ref: first.transactionID)
        _ = try await store.enqueueCreate(fields: fields, clientID: ClientID.make(), receipt: nil, now: 2)
        let seqs = try await store.views().flatMap { $0.jobs.map(\.seq) }
        #expect(seqs == [2])
    }

    @Test func stagedReceipt_isDurableAndReferenced() async throws {
        let dir = TemporaryDirectory()
        let store = try Store(stateDirectory: dir.at("state"))
        let source = dir.at("in.pdf")
        SampleReceipt.write(SampleReceipt.pdf(size: 300_000), to: source)
        let fd = try FileDescriptor.open(source, .readOnly)
        let staged = try store.receipts.stage(from: fd, jobUUID: ClientID.make(), maxBytes: 1 << 20)
        #expect(staged.kind == .pdf)
        #expect(staged.size == 300_000)
        let result = try await store.enqueueCreate(fields: ExpenseFields(), clientID: ClientID.make(), receipt: staged, now: 5)
        #expect(result.hasReceipt)
        let copy = FileManager.default.contents(atPath: store.receipts.filePath(staged.fileName))
        #expect(copy == FileManager.default.contents(atPath: source))
        let view = try await store.view(ref: result.transactionID)
        #expect(view.receipt == .pending)
        #expect(view.jobs.map(\.kind) == [.create, .receipt])
    }

    @Test func everyChangeAUserIsToldOf_commitsWithSynchronousFull() async throws {
        let dir = TemporaryDirectory()
        let store = try Store(stateDirectory: dir.at("state"))
        func synchronous() async throws -> Int64? { try await store.read { db in try db.scalarInt("PRAGMA synchronous") } }
        // A bookkeeping write first each time: deferred, NORMAL. Every
        // acknowledged change after it must switch back to FULL (2).
        func afterDeferred(_ change: () async throws -> Void) async throws -> Int64? {
            try await store.countServerFailure("transport")
            #expect(try await synchronous() == 1)
            try await change()
            return try await synchronous()
        }
        var a = ""
        #expect(try await afterDeferred { a = try await store.enqueueCreate(fields: fields, clientID: ClientID.make(), receipt: nil, now: 1).transactionID } == 2)
        #expect(try await afterDeferred { _ = try await store.edit(ref: a, fields: ExpenseFields(comment: "later"), now: 2) } == 2)
        var b = ""
        #expect(try await afterDeferred { b = try await store.enqueueCreate(fields: fields, clientID: ClientID.make(), receipt: nil, now: 3).transactionID } == 2)
        #expect(try await afterDeferred { _ = try await store.discard(ref: b) } == 2)
        #expect(try await afterDeferred { _ = try await store.claim(limit: 10, now: 4) } == 2)
        #expect(try await afterDeferred { _ = try await store.delete(ref: a, now: 5) } == 2)
        // Recording answers: durable only when a receipt file is removed
        // after the commit (the job must never come back without it).
        let upload = OutboxJob(seq: 999, uuid: ClientID.make(), kind: .receipt, transactionID: b, receiptFile: "gone.jpg")
        #expect(try await afterDeferred { _ = try await store.complete([(upload, .dropReceipt, true)], now: 6) } == 2)
        let create = OutboxJob(seq: 998, uuid: ClientID.make(), kind: .create, transactionID: a)
        #expect(try await afterDeferred { _ = try await store.complete([(create, .applied(nil), false)], now: 7) } == 1)
    }

    @Test func answersRecordedTogether_oneThatFailsLeavesTheOthers() async throws {
        let dir = TemporaryDirectory()
        let store = try Store(stateDirectory: dir.at("state"))
        for n in 1...3 {
            _ = try await store.enqueueCreate(fields: fields, clientID: ClientID.make(), receipt: nil, now: Int64(n))
        }
        let jobs = try await store.claim(limit: 10, now: 10)
        #expect(jobs.count == 3)
        // The second job's row cannot be removed (as a failing disk page would refuse it).
        try await store.read { db in
            try db.execute("""
                CREATE TEMP TRIGGER refuse BEFORE DELETE ON jobs WHEN OLD.seq = \(jobs[1].seq)
                BEGIN SELECT RAISE(ABORT, 'refused by the test'); END
                """, [])
        }
        let results = try await store.complete(jobs.map { ($0, JobUpdate.applied(nil), false) }, now: 20)
        #expect(results.count == 3)
        let recorded = results.map { result -> Bool in if case .success = result { true } else { false } }
        #expect(recorded == [true, false, true])
        let left = try await store.views().flatMap(\.jobs)
        #expect(left.map(\.seq) == [jobs[1].seq], "the others are recorded, the refused one is not")
        let summary = try await store.summary()
        #expect(summary.queued == 0 && summary.sending == 1, "the counters follow the rows: \(summary)")
    }

    @Test func claim_marksEveryJobOfTheBatchSending_andReleaseReturnsThemUnsent() async throws {
        let dir = TemporaryDirectory()
        let store = try Store(stateDirectory: dir.at("state"))
        for n in 1...5 {
            _ = try await store.enqueueCreate(fields: fields, clientID: ClientID.make(), receipt: nil, now: Int64(n))
        }
        let rows = { try await store.read { db in try db.query("SELECT state, sends FROM jobs ORDER BY seq") { "\($0.string(0)) \($0.int(1))" } } }
        let jobs = try await store.claim(limit: 4, now: 10)
        #expect(jobs.count == 4 && jobs.allSatisfy { $0.sends == 1 })
        #expect(try await rows() == ["sending 1", "sending 1", "sending 1", "sending 1", "queued 0"], "stored as claimed, send counted")
        #expect(try await store.claim(limit: 10, now: 10).map(\.seq) == [jobs.last!.seq + 1], "a claimed job is not claimed again")
        var summary = try await store.summary()
        #expect(summary.queued == 0 && summary.sending == 5)
        try await store.release(jobs)
        #expect(try await rows() == ["queued 0", "queued 0", "queued 0", "queued 0", "sending 1"], "back unsent, the send uncounted")
        summary = try await store.summary()
        #expect(summary.queued == 4 && summary.sending == 1, "the counters follow the rows: \(summary)")
    }

    @Test func reconcile_requeuesSendingAndSweepsOnlyDaemonNamedOrphans() async throws {
        let dir = TemporaryDirectory()
        let store = try Store(stateDirectory: dir.at("state"))
        let result = try await store.enqueueCreate(fields: fields, clientID: ClientID.make(), receipt: nil, now: 1)
        try await store.read { db in try db.execute("UPDATE jobs SET state = 'sending'", []) }
        let receipts = store.receipts.path
        let orphan = "\(ClientID.make()).jpg"
        let leftover = ".\(ClientID.make()).tmp"
        let foreign = ["notes.txt", "\(ClientID.make().uppercased()).jpg", "\(ClientID.make()).gif", "photo.jpg"]
        for name in [orphan, leftover] + foreign { SampleReceipt.write([1], to: "\(receipts)/\(name)") }

        let report = try store.reconcile()
        #expect(report.requeued == 1)
        #expect(Set(report.removedReceipts) == [orphan, leftover])
        let remaining = Set(try FileManager.default.contentsOfDirectory(atPath: receipts))
        #expect(remaining == Set(foreign))
        #expect(try await store.view(ref: result.transactionID).state == .queued)
    }

    /// A backend without idempotency keys: a create the last run was
    /// sending is tried (its marker looked up) only once a request that run
    /// sent can no longer be committing; its edit, and the creates it was not
    /// sending, are not held.
    @Test func reconcile_settlingCreates_holdsOnlyTheCreatesInFlight_untilTheSettleIsOver() async throws {
        let dir = TemporaryDirectory()
        let store = try Store(stateDirectory: dir.at("state"))
        let sent = try await store.enqueueCreate(fields: fields, clientID: ClientID.make(), receipt: nil, now: 1)
        let claimed = try await store.claim(limit: 1, now: 2)
        #expect(claimed.map(\.transactionID) == [sent.transactionID])
        let waiting = try await store.enqueueCreate(fields: fields, clientID: ClientID.make(), receipt: nil, now: 3)

        let report = try store.reconcile(settlingCreatesFor: 10_000, now: 1_000)
        #expect(report.requeued == 1 && report.settling == 1)
        let job = try #require(try await store.view(ref: sent.transactionID).jobs.first)
        #expect(job.state == .queued && job.transientAttempts == 1 && job.attempts == 0 && job.nextAttemptMilliseconds == 11_000)
        #expect(job.lastErrorClass == "transient" && job.lastError?.contains("interrupted while sending") == true)
        #expect(try await store.claim(limit: 10, now: 10_999).map(\.transactionID) == [waiting.transactionID], "the other create goes at once")
        #expect(try await store.pendingWork().earliestRetry == 11_000, "the drain wakes for it")
        let again = try await store.claim(limit: 10, now: 11_000)
        #expect(again.map(\.transactionID) == [sent.transactionID] && again.first?.sends == 2, "a resend: looked up first")
    }

    @Test func resolve_acceptsIdsClientIDsAndUniquePrefixes() async throws {
        let dir = TemporaryDirectory()
        let store = try Store(stateDirectory: dir.at("state"))
        let a = try await store.enqueueCreate(fields: fields, clientID: "aaaaaaaa-0000-4000-8000-000000000001", receipt: nil, now: 1)
        _ = try await store.enqueueCreate(fields: fields, clientID: "aaaaaaab-0000-4000-8000-000000000002", receipt: nil, now: 2)
        #expect(try await store.view(ref: a.transactionID).transactionID == a.transactionID)
        #expect(try await store.view(ref: "aaaaaaaa-0000-4000-8000-000000000001").transactionID == a.transactionID)
        #expect(try await store.view(ref: "aaaaaaaa").transactionID == a.transactionID)
        await #expect(throws: StoreError.self) { try await store.view(ref: "aaaaaaa") }
        await #expect(throws: StoreError.self) { try await store.view(ref: "ffff") }
    }

    @Test func summary_countsWithoutScanning() async throws {
        let dir = TemporaryDirectory()
        let store = try Store(stateDirectory: dir.at("state"))
        for i in 0..<5 { _ = try await store.enqueueCreate(fields: fields, clientID: ClientID.make(), receipt: nil, now: Int64(100 + i)) }
        try await store.read { db in try db.execute("UPDATE jobs SET state = 'needs_attention' WHERE seq <= 2", []) }
        let summary = try await store.summary()
        #expect(summary.queued == 3)
        #expect(summary.needsAttention == 2)
        #expect(summary.oldestJobMilliseconds == 100)
    }

    /// The queued jobs that wait behind one needing attention: an upload
    /// behind its create; not one behind nothing, nor the kinds held apart,
    /// nor another account's.
    @Test func queuedBehindAttention_countsWhatWaitsForIt() async throws {
        let dir = TemporaryDirectory()
        let store = try Store(stateDirectory: dir.at("state"))
        func staged(_ seed: UInt8) throws -> StagedReceipt {
            let path = dir.at("in-\(seed).jpg")
            SampleReceipt.write(SampleReceipt.jpeg(seed: seed), to: path)
            return try store.receipts.stage(from: try FileDescriptor.open(path, .readOnly), jobUUID: ClientID.make(), maxBytes: 1 << 20, digesting: true)
        }
        let held = try await store.enqueueCreate(fields: fields, clientID: ClientID.make(), receipt: try staged(1), now: 1, account: "alice")
        _ = try await store.enqueueCreate(fields: fields, clientID: ClientID.make(), receipt: try staged(2), now: 2, account: "alice")
        #expect(try await store.queuedBehindAttention() == 0, "nothing needs attention")
        try await store.read { db in
            try db.execute("UPDATE jobs SET state = 'needs_attention' WHERE transaction_id = ? AND kind = 'create'", [.text(held.transactionID)])
        }
        #expect(try await store.queuedBehindAttention() == 1, "the held create's upload, not the other expense's")
        #expect(try await store.queuedBehindAttention(in: .account("alice")) == 1)
        #expect(try await store.queuedBehindAttention(in: .account("bob")) == 0)
        #expect(try await store.queuedBehindAttention(excluding: [.receipt]) == 0, "a metered link's uploads are counted apart")
        let summary = try await store.summary()
        #expect(summary.queued == 3 && summary.needsAttention == 1)
    }

    /// The order the claim keeps, job by job: an upload waits only for its
    /// create and for an earlier upload that does not need attention (a
    /// newer file supersedes it); every other job for every earlier job but
    /// uploads.
    @Test func queuedBehindAttention_keepsTheClaimsOrder() async throws {
        let dir = TemporaryDirectory()
        let store = try Store(stateDirectory: dir.at("state"))
        let jobs: [(seq: Int, kind: String, expense: String, state: String)] = [
            // An upload needs attention: neither a newer upload nor an edit waits for it.
            (1001, "receipt", "cp-0000000000000000000001", "needs_attention"),
            (1002, "receipt", "cp-0000000000000000000001", "queued"),
            (1003, "edit", "cp-0000000000000000000001", "queued"),
            // An edit needs attention: the next edit and the delete wait, an upload does not.
            (1011, "edit", "cp-0000000000000000000002", "needs_attention"),
            (1012, "edit", "cp-0000000000000000000002", "queued"),
            (1013, "delete", "cp-0000000000000000000002", "queued"),
            (1014, "receipt", "cp-0000000000000000000002", "queued"),
        ]
        try await store.read { db in
            for job in jobs {
                try db.execute("""
                    INSERT INTO jobs (seq, uuid, kind, transaction_id, payload, state, created_at, account)
                    VALUES (?, ?, ?, ?, '{}', ?, 1, '')
                    """, [.integer(Int64(job.seq)), .text(ClientID.make()), .text(job.kind), .text(job.expense), .text(job.state)])
            }
        }
        #expect(try await store.queuedBehindAttention() == 2, "1012 and 1013")
        #expect(try await store.queuedBehindAttention(excluding: [.edit]) == 1, "1013")
    }
}
