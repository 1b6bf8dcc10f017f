// bench-sync: how fast expensed drains its outbox to a local expense-server,
// beside plain libcurl sending the same requests at the same concurrency.
//
// Usage: bench-sync [--bin DIR] [--quick]
// DIR holds expensed and expense-server (default .build/release).
import Curl
import Digest
import ExpenseCore
import ExpenseTestSupport
import Foundation
import Posix

let arguments = CommandLine.arguments
let quick = arguments.contains("--quick")
let bin = arguments.firstIndex(of: "--bin").map { arguments[$0 + 1] } ?? ".build/release"
setenv("EXPENSED_BIN_DIR", bin, 1)
let concurrency = 4

func now() -> Double { Double(Clock.monotonicNanoseconds) / 1e9 }

func rss(_ pid: Int32) -> Int {
    let status = (try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8)) ?? ""
    return status.split(separator: "\n").first { $0.hasPrefix("VmRSS") }
        .map { Int($0.split(whereSeparator: { $0 == " " || $0 == "\t" })[1]) ?? 0 } ?? 0
}

/// CPU seconds (user + system) a process has used, from /proc/PID/stat.
func cpuSeconds(_ pid: Int32) -> Double {
    guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
          let close = stat.lastIndex(of: ")") else { return 0 }
    let fields = stat[stat.index(after: close)...].split(separator: " ")
    // After the command: state is field 3; utime and stime are fields 14 and 15.
    let utime = Double(fields[11]) ?? 0, stime = Double(fields[12]) ?? 0
    return (utime + stime) / Double(sysconf(Int32(_SC_CLK_TCK)))
}

/// Queues `count` expenses (with a receipt file when given) while the server is down.
func queue(_ daemon: DaemonHarness, count: Int, receipt: String?) throws {
    let clients = 4
    let group = DispatchGroup()
    for c in 0..<clients {
        group.enter()
        Thread {
            defer { group.leave() }
            guard let client = try? RawClient(path: daemon.socketPath) else { return }
            for n in stride(from: c, to: count, by: clients) {
                let line = #"{"id":\#(n),"op":"add","receipt":\#(receipt != nil),"expense":{"merchant":"Shop \#(n)","amount":"12.50","currency":"EUR","date":"2026-11-29","category":"Meals","comment":"bench"}}"# + "\n"
                if let receipt { try? client.send(line, passingFileAt: receipt) } else { try? client.send(line) }
                _ = try? client.readLine()
            }
        }.start()
    }
    group.wait()
}

/// Starts the server, asks for a pass, and waits until the outbox is empty.
/// Returns seconds taken and the daemon's peak RSS (KiB) meanwhile.
func drain(_ sync: SyncHarness) throws -> (Double, Int) {
    try sync.startServer()
    let daemonCPU = cpuSeconds(sync.daemon.process!.pid), serverCPU = cpuSeconds(sync.server!.child.pid)
    defer {
        lastCPU = (cpuSeconds(sync.daemon.process!.pid) - daemonCPU, cpuSeconds(sync.server!.child.pid) - serverCPU)
    }
    let start = now()
    _ = try sync.daemon.request(["op": "sync"])
    var peak = 0
    while true {
        peak = max(peak, rss(sync.daemon.process!.pid))
        let status = try sync.daemon.request(["op": "status"])["result"]
        if status?["queued"] == 0 && status?["sending"] == 0 { break }
        usleep(20_000)
    }
    return (now() - start, peak)
}

/// The same creates (and uploads) sent by libcurl's multi interface alone:
/// `concurrency` connections; each answer starts the next request, or, with
/// `queued`, as many more wait in the client for a free connection (as expensed does).
func plainLibcurl(server: ServerProcess, count: Int, receipt: [UInt8]?, receiptPath: String?, queued: Bool) async -> Double {
    let client = HTTPClient(maxConnections: concurrency)
    defer { client.shutdown() }
    let base = "http://127.0.0.1:\(server.port)"
    let digest = receipt.map { "sha-256=:" + Base64Digest.of($0) + ":" }
    let start = now()
    await withTaskGroup(of: Void.self) { group in
        var next = 0
        func launch() {
            let n = next
            next += 1
            group.addTask {
                let key = ClientID.make()
                let body: JSONValue = ["merchant": .string("Shop \(n)"), "amount": "12.50", "currency": "EUR", "date": "2026-11-29",
                                       "category": "Meals", "comment": "bench", "device_id": "bench", "device_seq": .integer(Int64(n)),
                                       "created_at_device": "2026-11-29T12:00:00.000Z"]
                _ = await client.send(HTTPRequest(method: "POST", url: base + "/v1/expenses",
                    headers: [("Authorization", "Bearer \(server.token)"), ("Idempotency-Key", "\"\(key)\""), ("Content-Type", "application/json")],
                    body: .bytes(body.serializedBytes())))
                if let receiptPath, let digest {
                    _ = await client.send(HTTPRequest(method: "PUT", url: base + "/v1/expenses/\(TransactionID.derive(from: key))/receipt",
                        headers: [("Authorization", "Bearer \(server.token)"), ("Idempotency-Key", "\"\(ClientID.make())\""),
                                  ("Content-Type", "image/jpeg"), ("Repr-Digest", digest)],
                        body: .file(path: receiptPath, size: Int64(receipt!.count))))
                }
            }
        }
        for _ in 0..<(queued ? 2 * concurrency : concurrency) { launch() }
        while await group.next() != nil { if next < count { launch() } }
    }
    return now() - start
}

enum Base64Digest {
    static func of(_ bytes: [UInt8]) -> String { Base64.encode(SHA256.hash(bytes)) }
}

nonisolated(unsafe) var lastCPU: (daemon: Double, server: Double) = (0, 0)

print("bench-sync: bin=\(bin) concurrency=\(concurrency)")

func scenario(_ label: String, count: Int, receiptSize: Int?) async throws {
    let sync = try SyncHarness(daemonArguments: ["--concurrency", "\(concurrency)", "--drain-interval", "1h"], startServer: false)
    var receiptPath: String?
    var receiptBytes: [UInt8]?
    if let receiptSize {
        receiptBytes = SampleReceipt.jpeg(size: receiptSize)
        receiptPath = sync.daemon.directory.at("receipt.jpg")
        SampleReceipt.write(receiptBytes!, to: receiptPath!)
    }
    try sync.daemon.start()
    try queue(sync.daemon, count: count, receipt: receiptPath)
    let (seconds, peak) = try drain(sync)
    let jobs = count * (receiptSize == nil ? 1 : 2)
    sync.daemon.stop()
    let baseline = await plainLibcurl(server: sync.server!, count: count, receipt: receiptBytes, receiptPath: receiptPath, queued: false)
    let queuedBaseline = await plainLibcurl(server: sync.server!, count: count, receipt: receiptBytes, receiptPath: receiptPath, queued: true)
    let rate = Double(jobs) / seconds, plain = Double(jobs) / baseline, plainQueued = Double(jobs) / queuedBaseline
    print("\(label): expensed \(Int(rate)) jobs/s (\(String(format: "%.2f", seconds)) s, peak RSS \(peak / 1024) MiB)")
    print("  plain libcurl \(Int(plain)) requests/s: ratio \(String(format: "%.2f", rate / plain)) (target >= 0.8); with \(concurrency) more queued \(Int(plainQueued)) requests/s: ratio \(String(format: "%.2f", rate / plainQueued))")
    print("  CPU per job while draining: expensed \(String(format: "%.0f", lastCPU.daemon / Double(jobs) * 1e6)) µs, expense-server \(String(format: "%.0f", lastCPU.server / Double(jobs) * 1e6)) µs")
    sync.stopServer()
}

try await scenario("drain \(quick ? 500 : 2000) expenses", count: quick ? 500 : 2000, receiptSize: nil)
try await scenario("drain \(quick ? 100 : 500) expenses with 200 KiB receipts", count: quick ? 100 : 500, receiptSize: 200 * 1024)

// Memory while draining a large backlog.
do {
    let count = quick ? 20_000 : 100_000
    let sync = try SyncHarness(daemonArguments: ["--concurrency", "\(concurrency)", "--drain-interval", "1h"], startServer: false)
    try sync.daemon.start()
    try queue(sync.daemon, count: count, receipt: nil)
    let idle = rss(sync.daemon.process!.pid)
    let (seconds, peak) = try drain(sync)
    sync.daemon.stop()
    print("drain \(count) queued expenses: \(Int(Double(count) / seconds)) jobs/s; RSS \(idle / 1024) MiB queued, peak \(peak / 1024) MiB while draining (target <= 50 MiB)")
    sync.stopServer()
}
