import ControlProtocol
import ExpenseCore
@testable import ExpenseDaemon
import Testing

/// The metrics file's text: Prometheus's exposition format, every refusal
/// reason present (0 until counted), the room only when known.
@Suite struct MetricsTextTests {
    static let stats = StatsReport(
        sinceStart: .init(applied: 1, latency: LatencySummary(samples: [5]), failures: [:], refusals: ["jobs": 1]),
        total: .init(applied: 40, latency: LatencySummary(histogram: [:]), failures: ["transport": 3, "odd\"class\\\n": 1],
                     refusals: ["jobs": 7, "disk_full": 2]))

    @Test func everyFigure_withItsHelpAndType() {
        var summary = QueueSummary()
        summary.queued = 3
        summary.needsAttention = 1
        summary.server = .unreachable
        summary.spoolWaiting = 2
        summary.held = 1
        summary.incomplete = 4
        let room = OutboxRoomState(limits: OutboxLimits(maxJobs: 5, maxReceiptBytes: 3 << 20, diskReserveBytes: 1 << 20),
                                   use: OutboxLimits.Use(jobs: 4, receiptBytes: 1 << 20, diskFreeBytes: 9 << 20), headroomHeld: true)
        let text = MetricsText.render(summary: summary, stats: Self.stats, room: room)
        for line in [
            "# TYPE expensed_jobs gauge", "expensed_jobs{state=\"queued\"} 3", "expensed_jobs{state=\"sending\"} 0",
            "expensed_jobs{state=\"needs_attention\"} 1", "expensed_server_state{state=\"unreachable\"} 1",
            "expensed_outbox_jobs_limit 5", "expensed_outbox_receipt_bytes 1048576", "expensed_outbox_receipt_bytes_limit 3145728",
            "expensed_disk_free_bytes 9437184", "expensed_disk_reserve_bytes 1048576", "expensed_headroom_held 1",
            "expensed_spool_rejected 0", "expensed_spool_waiting 2", "expensed_held_jobs 1", "expensed_incomplete_expenses 4",
            "# TYPE expensed_outbox_refusals_total counter", "expensed_outbox_refusals_total{reason=\"jobs\"} 7",
            "expensed_outbox_refusals_total{reason=\"receipt_bytes\"} 0", "expensed_outbox_refusals_total{reason=\"disk_reserve\"} 0",
            "expensed_outbox_refusals_total{reason=\"disk_full\"} 2", "expensed_applied_total 40",
            "expensed_failures_total{class=\"transport\"} 3", #"expensed_failures_total{class="odd\"class\\\n"} 1"#,
        ] {
            #expect(text.split(separator: "\n").contains(Substring(line)), "\(line)")
        }
        #expect(text.hasSuffix("\n"))
        // Each metric has its HELP and TYPE once, before its samples.
        let names = text.split(separator: "\n").filter { $0.hasPrefix("# TYPE ") }.map { $0.split(separator: " ")[2] }
        #expect(Set(names).count == names.count)
        for name in names { #expect(text.contains("# HELP \(name) "), "\(name)") }
    }

    @Test func withoutTheRoom_itsFiguresAreLeftOut() {
        let text = MetricsText.render(summary: QueueSummary(), stats: Self.stats, room: nil)
        #expect(!text.contains("expensed_outbox_jobs_limit") && !text.contains("expensed_disk_free_bytes") && !text.contains("expensed_headroom_held"))
        #expect(text.contains("expensed_server_state{state=\"not_configured\"} 1\n"))
    }
}
