import ControlProtocol
import ExpenseCore
import Foundation
import Testing

/// The answers as typed values: what the daemon encodes, `expensectl`
/// decodes to the same value, and the JSON the document shows decodes and
/// encodes to the same members; a member renamed or of another type is
/// refused, naming it.
@Suite struct ControlResultTests {
    static let summary = ExpenseSummary(
        transactionID: "cp-0206e11a39722b8b0b0d34", clientID: "1b4e28ba-2fa1-11d2-883f-0000f87d3b6e", state: .needsAttention,
        fields: ExpenseFields(merchant: "Blue \u{1B}Bottle", amount: "12.50", currency: "EUR", date: "2026-11-29", comment: "team lunch"),
        pendingFields: ["merchant", "amount"], receipt: .pending, receiptURL: nil, version: 3, conflict: true,
        conflicts: ["currency": ConflictValues(server: "EUR", client: "USD"), "tax_tag": ConflictValues(server: nil, client: "T1")])

    static let detail = ExpenseDetail(summary: summary, createdAt: "2026-11-29T12:01:00.000Z", jobs: [
        .init(uuid: "0190a5f2-0000-7000-8000-000000000001", seq: 17, kind: .edit, state: .needsAttention, attempts: 5, transientAttempts: 1,
              lastError: "422 invalid_field: amount", lastErrorClass: "rejected", nextAttemptMilliseconds: 1_796_000_000_123,
              createdMilliseconds: 1_795_000_000_000, hint: "discard it"),
        .init(uuid: "0190a5f2-0000-7000-8000-000000000002", seq: 18, kind: .receipt, state: .queued, attempts: 0, transientAttempts: 0,
              lastError: nil, lastErrorClass: nil, nextAttemptMilliseconds: nil, createdMilliseconds: 1_795_000_000_001, hint: nil),
    ])

    static let status: StatusReport = {
        var summary = QueueSummary()
        summary.queued = 3
        summary.sending = 1
        summary.oldestJobMilliseconds = 1_795_000_000_000
        summary.server = .unreachable
        summary.spoolRejected = 2
        summary.spoolWaiting = 5
        summary.held = 2
        var report = StatusReport(summary: summary, line: "3 queued", serverURL: "http://127.0.0.1:8080", stateDirectory: "/var/lib/expensed",
                                  spoolDirectory: nil, deviceID: "d",
                                  contact: .init(lastContactMilliseconds: nil, lastErrorClass: "transport", lastError: "refused", lastErrorMilliseconds: 1_795_000_000_500))
        report.outbox = OutboxRoomState(limits: OutboxLimits(maxJobs: 5, maxReceiptBytes: 3 << 20, diskReserveBytes: 0),
                                        use: OutboxLimits.Use(jobs: 4, receiptBytes: 1 << 20, diskFreeBytes: 4096, headroomMissing: true),
                                        headroomHeld: false)
        report.metered = .init(network: "guess-yes", mode: "pause-receipts", hold: "receipt uploads paused (metered = pause-receipts)")
        return report
    }()

    static let stats = StatsReport(
        sinceStart: .init(applied: 4, latency: LatencySummary(samples: [5, 9, 1, 40]), failures: ["transport": 2], refusals: ["jobs": 3, "disk_full": 1]),
        total: .init(applied: 0, latency: LatencySummary(histogram: [:]), failures: [:]))

    /// Encodes `value`, serializes and parses the line as expensectl would, and decodes it.
    static func roundTrip<T: ControlResult & Equatable>(_ value: T) throws -> T {
        let line = ControlResponse(id: 7, value).json.serializedBytes()
        return try ControlResponse(json: try JSONValue.parse(line)).result(as: T.self)
    }

    @Test func everyResult_decodesToWhatWasEncoded() throws {
        #expect(try Self.roundTrip(Self.summary) == Self.summary)
        #expect(try Self.roundTrip(Self.detail) == Self.detail)
        #expect(try Self.roundTrip(ExpenseList(expenses: [Self.summary, Self.summary])) == ExpenseList(expenses: [Self.summary, Self.summary]))
        #expect(try Self.roundTrip(ExpenseList(expenses: [])) == ExpenseList(expenses: []))
        let page = ExpenseList(expenses: [Self.summary], hasMore: true,
                               totals: [ListTotal(currency: "EUR", count: 3, amount: "40.00", pendingCount: 1, pendingAmount: "12.50")],
                               withoutAmount: 2)
        #expect(try Self.roundTrip(page) == page)
        let added = AddResult(transactionID: "cp-1", clientID: "c", state: .synced, receipt: .none, duplicate: true)
        #expect(try Self.roundTrip(added) == added)
        #expect(try Self.roundTrip(DiscardResult(transactionID: "cp-1", discarded: 3)) == DiscardResult(transactionID: "cp-1", discarded: 3))
        #expect(try Self.roundTrip(DeleteResult(transactionID: "cp-1", sentNothing: true)) == DeleteResult(transactionID: "cp-1", sentNothing: true))
        let receipt = ReceiptResult(transactionID: "cp-1", kind: .pdf, size: 1234, sha256: String(repeating: "ab", count: 32), source: .keptLocally)
        #expect(try Self.roundTrip(receipt) == receipt)
        #expect(try Self.roundTrip(SyncResult(refresh: true)) == SyncResult(refresh: true))
        #expect(try Self.roundTrip(SyncResult(refresh: false, now: true)) == SyncResult(refresh: false, now: true))
        #expect(try Self.roundTrip(Self.status) == Self.status)
        var withoutNetworkManager = Self.status
        withoutNetworkManager.metered = .init(network: nil, mode: "pause", hold: nil)
        #expect(try Self.roundTrip(withoutNetworkManager) == withoutNetworkManager)
        var withoutServer = Self.status
        withoutServer.contact = nil
        withoutServer.serverURL = nil
        withoutServer.metered = nil
        #expect(try Self.roundTrip(withoutServer) == withoutServer)
        #expect(try Self.roundTrip(withoutServer).json["last_contact_at"] == nil, "no server: no contact members")
        #expect(try Self.roundTrip(withoutServer).json["metered_mode"] == nil, "no server: no metered members")
        var unknownRoom = Self.status
        unknownRoom.outbox = OutboxRoomState(limits: .none, use: OutboxLimits.Use(jobs: 0, receiptBytes: 0, diskFreeBytes: nil), headroomHeld: nil)
        #expect(try Self.roundTrip(unknownRoom) == unknownRoom)
        unknownRoom.outbox = nil
        #expect(try Self.roundTrip(unknownRoom) == unknownRoom)
        #expect(try Self.roundTrip(Self.stats) == Self.stats)
        #expect(try Self.roundTrip(Self.status.summary) == Self.status.summary)
    }

    @Test func latencies_ofSamplesAndOfTheHistogram() {
        #expect(LatencySummary(samples: [5, 9, 1, 40]) == LatencySummary(p50: 5, p95: 40, max: 40))
        #expect(LatencySummary(samples: [5, 9, 1]) == LatencySummary(p50: 5, p95: 9, max: 9))
        #expect(LatencySummary(samples: []) == LatencySummary(p50: nil, p95: nil, max: nil))
        // Buckets: 0 ms, [1, 2), [2, 4) ×2, [512, 1024): upper bounds.
        #expect(LatencySummary(histogram: [0: 1, 1: 1, 2: 2, 10: 1]) == LatencySummary(p50: 4, p95: 1024, max: 1024))
    }

    /// `stats`' two halves measure the same answers alike: since start from
    /// the samples, in total from their histogram. For any samples, each
    /// figure of the histogram is the upper bound of the bucket the same
    /// figure of the samples falls in.
    @Test func latencies_ofTheSamplesAndOfTheirHistogram_agree() {
        var random = SystemRandomNumberGenerator()
        for _ in 0..<500 {
            let samples = (0..<Int.random(in: 1...40, using: &random)).map { _ in
                Int64.random(in: 0...(Int64(1) << Int.random(in: 0...16, using: &random)), using: &random)
            }
            let buckets = Dictionary(samples.map { (LatencySummary.bucket(milliseconds: $0), 1) }, uniquingKeysWith: +)
            let exact = LatencySummary(samples: samples)
            let bounded = LatencySummary(histogram: buckets)
            func bound(_ value: Int64?) -> Int64? {
                value.map { LatencySummary.bucket(milliseconds: $0) == 0 ? 0 : Int64(1) << LatencySummary.bucket(milliseconds: $0) }
            }
            #expect(bounded == LatencySummary(p50: bound(exact.p50), p95: bound(exact.p95), max: bound(exact.max)), "\(samples.sorted())")
        }
    }

    /// The JSON in docs/control-protocol.md under `heading`, joined into one text.
    static func documentedExample(after heading: String) throws -> JSONValue {
        let path = #filePath.split(separator: "/").dropLast(3).joined(separator: "/")
        let text = try String(contentsOfFile: "/\(path)/docs/control-protocol.md", encoding: .utf8)
        guard let section = text.components(separatedBy: heading).dropFirst().first else { throw DocumentError() }
        let block = section.split(separator: "\n", omittingEmptySubsequences: false).drop { !$0.hasPrefix("    {") }
            .prefix { $0.hasPrefix("    ") }.map { $0.trimmingCharacters(in: .whitespaces) }.joined()
        return try JSONValue.parse(Array(block.replacingOccurrences(of: "cp-…", with: "cp-0206e11a39722b8b0b0d34").utf8))
    }

    struct DocumentError: Error {}

    @Test func theDocumentsExamples_decode_andEncodeToTheSameMembers() throws {
        let view = try Self.documentedExample(after: "### Expense views")
        let summary = try ExpenseSummary(json: view)
        #expect(summary.json == view)
        let queue = try Self.documentedExample(after: "### The summary")
        #expect(try QueueSummary(json: queue).json == queue)
        // The outbox's room, as the member of a status it is.
        let room = try Self.documentedExample(after: "### The outbox's room")
        guard case .object(var status) = Self.status.json else { return }
        status["outbox"] = room
        #expect(try StatusReport(json: .object(status)).json["outbox"] == room)
    }

    @Test(arguments: ["state", "merchant", "pending_fields", "receipt", "version", "conflicts"])
    func aMemberRenamed_isRefusedByName(_ member: String) throws {
        guard case .object(var object) = Self.summary.json else { return }
        object[member + "_renamed"] = object.removeValue(forKey: member)
        #expect(throws: ControlDecodingError(path: "result.\(member)", "missing")) { try ExpenseSummary(json: .object(object)) }
    }

    @Test func wrongTypesAndUnknownValues_areRefusedByPath() throws {
        guard case .object(var object) = Self.detail.json, case .array(var jobs)? = object["jobs"], case .object(var job) = jobs[1] else { return }
        job["kind"] = "upload"
        jobs[1] = .object(job)
        object["jobs"] = .array(jobs)
        #expect(throws: ControlDecodingError(path: "result.jobs[1].kind", "unknown value 'upload'")) { try ExpenseDetail(json: .object(object)) }
        #expect(throws: ControlDecodingError(path: "result.queued", "expected a whole number, got a string")) {
            try QueueSummary(json: ["queued": "3", "sending": 0, "needs_attention": 0, "oldest_job_at": nil, "server": "ok", "spool_rejected": 0])
        }
        #expect(throws: ControlDecodingError(path: "result.held", "expected a whole number, got a string")) {
            try QueueSummary(json: ["queued": 3, "sending": 0, "needs_attention": 0, "oldest_job_at": nil, "server": "ok", "spool_rejected": 0, "spool_waiting": 0, "held": "2"])
        }
        #expect(throws: ControlDecodingError(path: "result.oldest_job_at", "not a timestamp: 'yesterday'")) {
            try QueueSummary(json: ["queued": 3, "sending": 0, "needs_attention": 0, "oldest_job_at": "yesterday", "server": "ok", "spool_rejected": 0])
        }
    }

    @Test func anErrorLine_isTheFailureWithItsField() throws {
        let failure = ControlFailure(id: 4, .invalidField, "amount: too many digits", field: "amount")
        let line = try ControlResponse(json: try JSONValue.parse(failure.json.serializedBytes()))
        #expect(line == .failure(failure))
        #expect(throws: failure) { try line.result(as: AddResult.self) }
        #expect(throws: ControlDecodingError(path: "answer.ok", "missing")) { try ControlResponse(json: ["id": 1, "result": [:]]) }
    }
}
