// bench-sync: how fast expensed drains its outbox to a local expense-server,
// beside plain libcurl sending the same requests at the same concurrency.
//
// Usage: bench-sync [--bin DIR] [--quick] [--rounds N] [--count N] [--server-cpu N] [--perf DIR]
// DIR holds expensed and expense-server (default .build/release). Each
// scenario runs N rounds (default 5; 1 with --quick), each a fresh daemon
// and server, the daemon's drain followed at once by the baseline, so every
// ratio compares two runs a second apart; the median ratio is the figure.
// --count N drains N expenses (and N/4 with receipts) per round.
// --server-cpu N moves expense-server's threads to CPU N once it listens
// (run the bench itself under `taskset -c M`, another CPU, so the client,
// expensed or plain libcurl, and the server never share a core).
// --perf DIR records a system-wide `perf record -g` while the daemon
// drains, one file per round, in DIR (`perf report --pid` picks the daemon).
import Curl
import Digest
import ExpenseCore
import ExpenseTestSupport
import Foundation
import Posix

let options = BenchArguments("bench-sync", usage: """
    usage: bench-sync [--bin DIR] [--quick] [--rounds N] [--count N] [--server-cpu N] [--perf DIR] [--only creates|receipts|memory]
    """, options: ["--bin", "--rounds", "--count", "--server-cpu", "--perf", "--only"], switches: ["--quick"])
let quick = options.has("--quick")
let bin = options.binaryDirectory()
let rounds = options.int("--rounds", default: quick ? 1 : 5)
let creates = options.int("--count", default: quick ? 500 : 2000)
let serverCore = options.value("--server-cpu").map { _ in String(options.int("--server-cpu", default: 0, in: 0...4095)) }
let perfDirectory = options.value("--perf")
/// Runs one part only: creates, receipts or memory.
let only = options.value("--only")
if let only, !["creates", "receipts", "memory"].contains(only) { options.refuse("--only must be creates, receipts or memory") }
let concurrency = 4

func now() -> Double { Double(Clock.monotonicNanoseconds) / 1e9 }

func rss(_ pid: Int32) -> Int {
    let status = (try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8)) ?? ""
    return status.split(separator: "\n").first { $0.hasPrefix("VmRSS") }
        .map { Int($0.split(whereSeparator: { $0 == " " || $0 == "\t" })[1]) ?? 0 } ?? 0
}

/// CPU seconds a process has used (0 when /proc cannot tell).
func cpu(_ pid: Int32) -> Double { (try? cpuSeconds(pid)) ?? 0 }

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

/// Waits until the passes the adds triggered (each finding no server) are
/// over: the count of passes that found the server unreachable has not
/// moved for 300 ms. Else the last of them could meet the server started
/// next and drain before the measurement.
func waitForQuiet(_ daemon: DaemonHarness) throws {
    var last: Int64 = -1, steady = 0
    while steady < 6 {
        let stats = try daemon.request(["op": "stats"])["result"]
        let count = stats?["since_start"]?["failures"]?["transport"]?.intValue ?? 0
        steady = count == last && count > 0 ? steady + 1 : 0
        last = count
        usleep(50_000)
    }
}

/// Starts the server (on its own core with `--server-cpu`).
func startServer(_ sync: SyncHarness) throws {
    try waitForQuiet(sync.daemon)
    try sync.startServer()
    if let serverCore {
        let taskset = try runCommand("/usr/bin/taskset", ["-a", "-p", "-c", serverCore, "\(sync.server!.child.pid)"])
        guard taskset.status == 0 else { throw TestFailure("taskset failed: \(taskset.stderr)") }
    }
}

/// Asks for a pass, and waits until the outbox is empty.
/// Returns seconds taken and the daemon's peak RSS (KiB) meanwhile.
func drain(_ sync: SyncHarness, profile: String? = nil) throws -> (Double, Int) {
    let perf = try profile.map { path in
        // Subprocess starts perf with no signal blocked (this process
        // blocks some), so SIGINT stops it.
        let perf = try Subprocess("/usr/bin/perf", arguments: ["record", "-q", "-a", "-e", "cpu-clock", "-g", "-F", "2000", "-o", path],
                                  standardOutput: .inherit, standardError: .inherit)
        usleep(300_000)
        return perf
    }
    defer {
        if let perf {
            perf.signal(SIGINT)
            perf.wait()
        }
    }
    let daemonCPU = cpu(sync.daemon.process!.pid), serverCPU = cpu(sync.server!.child.pid)
    defer {
        lastCPU = (cpu(sync.daemon.process!.pid) - daemonCPU, cpu(sync.server!.child.pid) - serverCPU)
    }
    let start = now()
    _ = try sync.daemon.request(["op": "sync"])
    var peak = 0
    while true {
        peak = max(peak, rss(sync.daemon.process!.pid))
        let status = try sync.daemon.request(["op": "status"])["result"]
        let pending = (status?["queued"]?.intValue ?? 0) + (status?["sending"]?.intValue ?? 0)
        if pending == 0 { break }
        // Finely near the end, so the drain's time is not rounded up by a poll.
        usleep(pending > 200 ? 20_000 : 2_000)
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
    // One descriptor for every upload: each request reads it with pread
    // from offset 0, as the daemon's uploads do.
    let receiptFile = receiptPath.map { path in
        guard let file = try? FileDescriptor.open(path, [.readOnly]) else { fatalError("bench-sync: cannot open \(path)") }
        return file
    }
    let start = now(), startCPU = cpu(getpid())
    defer { lastPlainCPU = cpu(getpid()) - startCPU }
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
                if let receiptFile, let digest {
                    _ = await client.send(HTTPRequest(method: "PUT", url: base + "/v1/expenses/\(TransactionID.derive(from: key))/receipt",
                        headers: [("Authorization", "Bearer \(server.token)"), ("Idempotency-Key", "\"\(ClientID.make())\""),
                                  ("Content-Type", "image/jpeg"), ("Repr-Digest", digest)],
                        body: .file(receiptFile, size: Int64(receipt!.count))))
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
/// CPU seconds this process spent in the last plainLibcurl run.
nonisolated(unsafe) var lastPlainCPU = 0.0

print("bench-sync: bin=\(bin) concurrency=\(concurrency)")

/// One round: the daemon drains `count` queued expenses and plain libcurl
/// sends the same requests to the same server, one right after the other;
/// with `plainFirst`, plain libcurl goes first (so neither always meets a
/// fresh server). Returns the three rates.
func round(count: Int, receiptSize: Int?, profile: String?, plainFirst: Bool) async throws -> (daemon: Double, plain: Double, queued: Double) {
    let sync = try SyncHarness(daemonArguments: ["--concurrency", "\(concurrency)", "--drain-interval", "1h"], startServer: false)
    defer { sync.stopServer() }
    var receiptPath: String?
    var receiptBytes: [UInt8]?
    if let receiptSize {
        receiptBytes = SampleReceipt.jpeg(size: receiptSize)
        receiptPath = sync.daemon.directory.at("receipt.jpg")
        SampleReceipt.write(receiptBytes!, to: receiptPath!)
    }
    try sync.daemon.start()
    try queue(sync.daemon, count: count, receipt: receiptPath)
    try startServer(sync)
    let jobs = Double(count * (receiptSize == nil ? 1 : 2))
    var baseline = 0.0, queuedBaseline = 0.0, plainCPU = 0.0
    func plainRuns() async {
        baseline = await plainLibcurl(server: sync.server!, count: count, receipt: receiptBytes, receiptPath: receiptPath, queued: false)
        plainCPU = lastPlainCPU
        queuedBaseline = await plainLibcurl(server: sync.server!, count: count, receipt: receiptBytes, receiptPath: receiptPath, queued: true)
    }
    if plainFirst { await plainRuns() }
    let queued = try sync.daemon.request(["op": "status"])["result"]?["queued"]?.intValue
    guard queued == Int64(jobs) else { throw TestFailure("\(queued ?? 0) of \(Int(jobs)) jobs queued when the drain was to start") }
    let (seconds, peak) = try drain(sync, profile: profile)
    sync.daemon.stop()
    if !plainFirst { await plainRuns() }
    let rates = (daemon: jobs / seconds, plain: jobs / baseline, queued: jobs / queuedBaseline)
    print("  \(plainFirst ? "plain first: " : "")expensed \(Int(rates.daemon)) jobs/s (peak RSS \(peak / 1024) MiB), plain libcurl \(Int(rates.plain)): ratio \(String(format: "%.2f", rates.daemon / rates.plain)); "
          + "with \(concurrency) more queued \(Int(rates.queued)): \(String(format: "%.2f", rates.daemon / rates.queued)); "
          + "CPU per job: expensed \(String(format: "%.0f", lastCPU.daemon / jobs * 1e6)) µs, expense-server \(String(format: "%.0f", lastCPU.server / jobs * 1e6)) µs; "
          + "plain libcurl \(String(format: "%.0f", plainCPU / jobs * 1e6)) µs")
    return rates
}

func median(_ values: [Double]) -> Double {
    let sorted = values.sorted()
    return sorted.count % 2 == 1 ? sorted[sorted.count / 2] : (sorted[sorted.count / 2 - 1] + sorted[sorted.count / 2]) / 2
}

func scenario(_ label: String, count: Int, receiptSize: Int?) async throws {
    print("\(label), \(rounds) round\(rounds == 1 ? "" : "s"):")
    var ratios: [Double] = [], queuedRatios: [Double] = []
    for n in 1...rounds {
        let profile = perfDirectory.map { "\($0)/\(receiptSize == nil ? "creates" : "receipts")-\(n).perf" }
        let rates = try await round(count: count, receiptSize: receiptSize, profile: profile, plainFirst: n % 2 == 0)
        ratios.append(rates.daemon / rates.plain)
        queuedRatios.append(rates.daemon / rates.queued)
    }
    print("  median ratio \(String(format: "%.2f", median(ratios))) (target >= 0.8); against libcurl with \(concurrency) more queued \(String(format: "%.2f", median(queuedRatios)))")
}

if only == nil || only == "creates" {
    try await scenario("drain \(creates) expenses", count: creates, receiptSize: nil)
}
if only == nil || only == "receipts" {
    try await scenario("drain \(creates / 4) expenses with 200 KiB receipts", count: creates / 4, receiptSize: 200 * 1024)
}

// Memory while draining a large backlog.
if only == nil || only == "memory" {
    let count = quick ? 20_000 : 100_000
    let sync = try SyncHarness(daemonArguments: ["--concurrency", "\(concurrency)", "--drain-interval", "1h"], startServer: false)
    try sync.daemon.start()
    try queue(sync.daemon, count: count, receipt: nil)
    let idle = rss(sync.daemon.process!.pid)
    try startServer(sync)
    let (seconds, peak) = try drain(sync)
    sync.daemon.stop()
    print("drain \(count) queued expenses: \(Int(Double(count) / seconds)) jobs/s; RSS \(idle / 1024) MiB queued, peak \(peak / 1024) MiB while draining (target <= 50 MiB)")
    sync.stopServer()
}
