import ControlProtocol
import ExpenseCore

/// The daemon's figures in Prometheus's text exposition format (version
/// 0.0.4), for node_exporter's textfile collector: the queue, the
/// outbox's use against its limits, the spool, and the totals of `stats`
/// (across restarts). The names agree with contrib/prometheus/expensed-textfile.
enum MetricsText {
    static func render(summary: QueueSummary, stats: StatsReport, room: OutboxRoomState?) -> String {
        var lines: [String] = []
        func metric(_ name: String, _ kind: String, _ help: String, _ samples: [(labels: String, value: Int64)]) {
            lines.append("# HELP \(name) \(help)")
            lines.append("# TYPE \(name) \(kind)")
            for (labels, value) in samples { lines.append("\(name)\(labels.isEmpty ? "" : "{\(labels)}") \(value)") }
        }
        metric("expensed_jobs", "gauge", "Jobs in the outbox by state.",
               [("state=\"queued\"", Int64(summary.queued)), ("state=\"sending\"", Int64(summary.sending)),
                ("state=\"needs_attention\"", Int64(summary.needsAttention))])
        metric("expensed_server_state", "gauge", "The server's state as the daemon sees it.", [("state=\"\(summary.server.rawValue)\"", 1)])
        if let room {
            metric("expensed_outbox_jobs_limit", "gauge", "Jobs the outbox holds at most (outbox_max_jobs).", [("", Int64(room.limits.maxJobs))])
            metric("expensed_outbox_receipt_bytes", "gauge", "Receipt bytes held for uploads not yet done.", [("", room.use.receiptBytes)])
            metric("expensed_outbox_receipt_bytes_limit", "gauge", "Receipt bytes the outbox holds at most (outbox_max_receipt_bytes).",
                   [("", room.limits.maxReceiptBytes)])
            if let free = room.use.diskFreeBytes {
                metric("expensed_disk_free_bytes", "gauge", "Free space of the state directory's file system for adds.", [("", free)])
            }
            metric("expensed_disk_reserve_bytes", "gauge", "Free space adds never take (disk_reserve).", [("", room.limits.diskReserveBytes)])
            if let held = room.headroomHeld {
                metric("expensed_headroom_held", "gauge", "1 while the drain's headroom is set aside, 0 once the drain used it.", [("", held ? 1 : 0)])
            }
        }
        metric("expensed_spool_rejected", "gauge", "Files in the spool's rejected/ folder.", [("", Int64(summary.spoolRejected))])
        metric("expensed_spool_waiting", "gauge", "Spool files waiting for room in the outbox.", [("", Int64(summary.spoolWaiting))])
        metric("expensed_held_jobs", "gauge", "Queued jobs a metered link holds.", [("", Int64(summary.held))])
        metric("expensed_incomplete_expenses", "gauge", "Expenses held until an edit gives them what the backend needs (ihatemoney, fava).",
               [("", Int64(summary.incomplete))])
        metric("expensed_outbox_refusals_total", "counter", "Adds and spool drops refused for room, by reason, all time.",
               OutboxRefusal.Reason.allCases.map { ("reason=\"\($0.rawValue)\"", Int64(stats.total.refusals[$0.rawValue] ?? 0)) })
        metric("expensed_applied_total", "counter", "Jobs applied by the server, all time.", [("", Int64(stats.total.applied))])
        metric("expensed_failures_total", "counter", "Failed attempts by class, all time.",
               stats.total.failures.sorted { $0.key < $1.key }.map { ("class=\"\(escaped($0.key))\"", Int64($0.value)) })
        return lines.joined(separator: "\n") + "\n"
    }

    /// A label value as the format wants it: backslash, quote and newline escaped.
    static func escaped(_ value: String) -> String {
        var text = ""
        for character in value {
            switch character {
            case "\\": text += "\\\\"
            case "\"": text += "\\\""
            case "\n": text += "\\n"
            default: text.append(character)
            }
        }
        return text
    }
}
