// bench-daemon: how fast a durable add is, against what durability costs.
//
// Usage: bench-daemon [--bin DIR] [--baseline-bin DIR] [--quick]
// Starts the expensed in DIR (default .build/release) in a temporary
// folder, measures, and prints one line per figure. Compare the ratios
// printed in one run: absolute numbers move with the machine. With
// --baseline-bin, the expensed of another build (an older commit's) is
// measured beside it, the two alternating, and each figure is also given
// as a ratio of the builds: a regression shows as that ratio, not as a
// difference between two hours of the machine.
import ControlProtocol
import Digest
import ExpenseCore
import ExpenseDaemon
import ExpenseTestSupport
import Foundation
import OutboxStore
import Posix
import SQLite

let options = BenchArguments("bench-daemon", usage: "usage: bench-daemon [--bin DIR] [--baseline-bin DIR] [--quick]",
                             options: ["--bin", "--baseline-bin"], switches: ["--quick"])
let quick = options.has("--quick")
let bin = options.binaryDirectory()
let baselineBin = options.value("--baseline-bin")
if let baselineBin, !FileManager.default.isExecutableFile(atPath: baselineBin + "/expensed") {
    options.refuse("--baseline-bin: no executable expensed in '\(baselineBin)'")
}
let samples = quick ? 500 : 3000
let backlog = quick ? 20_000 : 100_000

func ms(_ seconds: Double) -> String { String(format: "%.3f ms", seconds * 1000) }

/// A started daemon in its own folder.
func startDaemon(arguments: [String] = [], environment: [String: String] = [:]) throws -> DaemonHarness {
    let daemon = DaemonHarness(arguments: arguments, environment: environment)
    try daemon.start()
    return daemon
}

let addText = #"{"id":1,"op":"add","receipt":false,"expense":{"merchant":"Blue Bottle","amount":"12.50","currency":"EUR","date":"2026-11-29","category":"Meals"}}"# + "\n"

/// One add over `connection`, with `receipt` attached when given; the
/// answer line. A refused add stops the run: timed, it would pass for one.
func add(_ connection: RawClient, receipt: FileDescriptor? = nil) throws -> [UInt8] {
    if let receipt {
        try connection.send(addText.replacingOccurrences(of: #""receipt":false"#, with: #""receipt":true"#), passing: receipt)
    } else {
        try connection.send(addText)
    }
    guard let answer = try connection.readLine() else { throw TestFailure("expensed closed the connection") }
    precondition(answer.starts(with: Array(#"{"id":1,"ok":true"#.utf8)), "an add was refused: " + String(decoding: answer, as: UTF8.self))
    return answer
}

/// Makes the receipt at `path` (a ``photoReceipt(in:width:height:)``: SOI, then a comment
/// segment) another's: `n` in the first bytes of its comment. Receipts
/// sent with the same bytes would be held as the same receipt twice
/// (docs/receipts.md), which is not the add measured here.
func makeDistinct(_ path: String, _ n: Int) throws {
    let file = try FileHandle(forWritingTo: URL(fileURLWithPath: path))
    defer { try? file.close() }
    try file.seek(toOffset: 6)
    try file.write(contentsOf: Data(String(format: "%016x", n).utf8))
}

/// A photo as a receipt, about 200 KiB at its default size: libvips's
/// Gaussian noise as a JPEG (nearly all of it entropy-coded data, which
/// the add's check reads and the decoder decodes), with a comment segment
/// right after SOI whose first bytes ``makeDistinct(_:_:)`` changes.
func photoReceipt(in directory: String, width: Int = 640, height: Int = 480) throws -> [UInt8] {
    let path = directory + "/photo-receipt-\(width).jpg"
    let made = try runCommand("/usr/bin/vips", ["gaussnoise", path + "[Q=95]", "\(width)", "\(height)"], timeout: 120)
    guard made.status == 0, let photo = FileManager.default.contents(atPath: path).map(Array.init) else {
        throw TestFailure("vips gaussnoise: \(made.stderr)")
    }
    return Array(photo[0..<2]) + [0xFF, 0xFE, 0x00, 0x12] + Array(repeating: 0x30, count: 16) + Array(photo[2...])
}

/// Latencies of `count` sequential adds on one connection, each receipt
/// (when given) of bytes of its own.
func sequentialAdds(_ daemon: DaemonHarness, count: Int, receiptPath: String? = nil) throws -> [Double] {
    let connection = try RawClient(path: daemon.socketPath)
    var latencies: [Double] = []
    for n in 0..<count {
        if let receiptPath { try makeDistinct(receiptPath, n) }
        let file = try receiptPath.map { try FileDescriptor.open($0, .readOnly) }
        let start = BenchRun.now()
        _ = try add(connection, receipt: file)
        latencies.append(BenchRun.now() - start)
    }
    return latencies
}

/// Baseline: write a receipt (temporary name, fsync, rename, directory fsync), then commit a row.
func receiptWritesAndCommits(in dir: String, bytes: [UInt8], count: Int) throws -> [Double] {
    let db = try Connection(path: dir + "/baseline-r.db")
    try db.execute("PRAGMA journal_mode = WAL; PRAGMA synchronous = FULL; CREATE TABLE t (id INTEGER PRIMARY KEY, file TEXT)")
    try FileManager.default.createDirectory(atPath: dir + "/files", withIntermediateDirectories: true)
    var latencies: [Double] = []
    for i in 0..<count {
        let start = BenchRun.now()
        try FileSystem.writeDurably(bytes, to: "\(i).jpg", in: dir + "/files")
        try db.transaction { try db.execute("INSERT INTO t (file) VALUES (?)", [.text("\(i).jpg")]) }
        latencies.append(BenchRun.now() - start)
    }
    return latencies
}

/// Adds per second from `clients` connections at once, for `seconds`.
func concurrentRate(_ daemon: DaemonHarness, clients: Int, total: Int) throws -> Double {
    let perClient = total / clients
    let group = DispatchGroup()
    let start = BenchRun.now()
    for _ in 0..<clients {
        group.enter()
        Thread {
            defer { group.leave() }
            guard let connection = try? RawClient(path: daemon.socketPath) else { fatalError("cannot connect to \(daemon.socketPath)") }
            for _ in 0..<perClient {
                do { _ = try add(connection) } catch { fatalError("an add failed: \(error)") }
            }
        }.start()
    }
    group.wait()
    return Double(perClient * clients) / (BenchRun.now() - start)
}

/// Context switches of each of the daemon's threads, and its RSS, from /proc.
func processCounters(_ pid: Int32) -> (switches: [String: Int], rssKiB: Int) {
    var switches: [String: Int] = [:]
    let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task")) ?? []
    for task in tasks {
        let status = (try? String(contentsOfFile: "/proc/\(pid)/task/\(task)/status", encoding: .utf8)) ?? ""
        for line in status.split(separator: "\n") where line.contains("ctxt_switches") {
            switches[task, default: 0] += Int(line.split(separator: "\t").last ?? "0") ?? 0
        }
    }
    let status = (try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8)) ?? ""
    let rss = status.split(separator: "\n").first { $0.hasPrefix("VmRSS") }.map { Int($0.split(whereSeparator: { $0 == " " || $0 == "\t" })[1]) ?? 0 } ?? 0
    return (switches, rss)
}

/// Wake-ups between two readings: growth of threads present in both, plus
/// all switches of threads that appeared.
func wakeups(_ before: [String: Int], _ after: [String: Int]) -> Int {
    after.reduce(0) { sum, entry in sum + entry.value - (before[entry.key] ?? 0) }
}

print("bench-daemon: bin=\(bin) samples=\(samples) backlog=\(backlog)")

// 0. The control protocol's own cost, in process: parse a request line, serialize an answer.
do {
    let line = Array(addText.utf8.dropLast())
    let n = 20_000
    var start = BenchRun.now()
    for _ in 0..<n { _ = ControlRequest.parse(line) }
    let parse = (BenchRun.now() - start) / Double(n)
    let added = AddResult(transactionID: "cp-0206e11a39722b8b0b0d34", clientID: "1b4e28ba-2fa1-11d2-883f-0000f87d3b6e", state: .queued, receipt: .none, duplicate: false)
    start = BenchRun.now()
    for _ in 0..<n { _ = ControlResponse(id: 1, added).json.serializedBytes() }
    let serialize = (BenchRun.now() - start) / Double(n)
    print("control line: parse \(ms(parse)), serialize answer \(ms(serialize))")
}

let scratch = NSTemporaryDirectory() + "bench-baseline-\(UUID().uuidString.prefix(8))"
try FileManager.default.createDirectory(atPath: scratch, withIntermediateDirectories: true)
defer { try? FileManager.default.removeItem(atPath: scratch) }

// 0b. A photo's check (ReceiptValidator, as an add with a receipt makes
// it) beside its SHA-256 (which the add takes too), in process: libvips's
// Gaussian noise as a 1000×750 JPEG, nearly all of it entropy-coded data.
do {
    let bytes = try photoReceipt(in: scratch, width: 1000, height: 750)
    var checks: [Double] = [], hashes: [Double] = []
    for _ in 0..<(quick ? 50 : 200) {
        var start = BenchRun.now()
        precondition(ReceiptValidator.check(bytes) == .complete(.jpeg), "the photo is not a whole JPEG")
        checks.append(BenchRun.now() - start)
        start = BenchRun.now()
        _ = SHA256.hash(bytes)
        hashes.append(BenchRun.now() - start)
    }
    let (check, hash) = (BenchRun.percentile(checks, 0.5), BenchRun.percentile(hashes, 0.5))
    print("a \(bytes.count / 1024) KiB photo's check: p50 \(ms(check)); its SHA-256 \(ms(hash)); ratio \(String(format: "%.2f", check / hash))")
}

// 1. Durable add, no receipt, beside one fsync'd commit, sampled in turn
// (one commit, one add, …) so both see the same machine; and the store's
// own enqueue in process, to split the add into commit and hand-offs.
do {
    let db = try Connection(path: scratch + "/baseline.db")
    try db.execute("PRAGMA journal_mode = WAL; PRAGMA synchronous = FULL; CREATE TABLE t (id INTEGER PRIMARY KEY, uuid TEXT, payload TEXT)")
    let daemon = try startDaemon()
    let connection = try RawClient(path: daemon.socketPath)
    var commits: [Double] = [], adds: [Double] = []
    for _ in 0..<samples {
        var start = BenchRun.now()
        try db.transaction { try db.execute("INSERT INTO t (uuid, payload) VALUES (?, ?)", [.text(UUID().uuidString), .text(#"{"merchant":"Blue Bottle","amount":"12.50"}"#)]) }
        commits.append(BenchRun.now() - start)
        start = BenchRun.now()
        _ = try add(connection)
        adds.append(BenchRun.now() - start)
    }
    daemon.stop()
    let store = try Store(stateDirectory: scratch + "/store")
    var enqueues: [Double] = []
    let fields = ExpenseFields(merchant: "Blue Bottle", amount: "12.50", currency: "EUR", date: "2026-11-29", category: "Meals")
    for _ in 0..<samples {
        let start = BenchRun.now()
        _ = try await store.enqueueCreate(fields: fields, clientID: ClientID.make(), receipt: nil, now: Clock.wallMilliseconds)
        enqueues.append(BenchRun.now() - start)
    }
    let p50 = BenchRun.percentile(adds, 0.5), commit = BenchRun.percentile(commits, 0.5)
    print("add (no receipt), one connection: p50 \(ms(p50)), p99 \(ms(BenchRun.percentile(adds, 0.99)))")
    print("  one fsync'd SQLite commit: p50 \(ms(commit)); ratio \(String(format: "%.2f", p50 / commit)) (target <= 1.5)")
    print("  the store's enqueue in process (its transaction and commit): p50 \(ms(BenchRun.percentile(enqueues, 0.5)))")
}

// 2. Durable add with a 200 KiB receipt (a photo), beside receipt write + commit.
do {
    let receipt = try photoReceipt(in: scratch)
    let path = scratch + "/receipt.jpg"
    _ = FileManager.default.createFile(atPath: path, contents: Data(receipt))
    let baseline = BenchRun.percentile(try receiptWritesAndCommits(in: scratch, bytes: receipt, count: samples / 3), 0.5)
    let daemon = try startDaemon()
    let adds = try sequentialAdds(daemon, count: samples / 3, receiptPath: path)
    daemon.stop()
    let p50 = BenchRun.percentile(adds, 0.5)
    print("add (200 KiB receipt), one connection: p50 \(ms(p50)), p99 \(ms(BenchRun.percentile(adds, 0.99)))")
    print("  receipt write + fsync + rename + dir fsync + commit: p50 \(ms(baseline)); ratio \(String(format: "%.2f", p50 / baseline)) (target <= 1.3)")
}

// 3. Throughput from 8 concurrent clients.
do {
    let daemon = try startDaemon()
    let rate = try concurrentRate(daemon, clients: 8, total: samples * 4)
    daemon.stop()
    print("adds/s, 8 concurrent clients: \(Int(rate)) (target >= 5000)")
}

// 4. Add latency with a large backlog queued vs. none (the outbox's job
// limit above the backlog and the samples).
do {
    let daemon = try startDaemon(arguments: ["--outbox-max-jobs", String(backlog * 2)])
    let empty = BenchRun.percentile(try sequentialAdds(daemon, count: samples), 0.5)
    _ = try concurrentRate(daemon, clients: 8, total: backlog)
    let full = BenchRun.percentile(try sequentialAdds(daemon, count: samples), 0.5)
    daemon.stop()
    print("add p50 with \(backlog) jobs queued: \(ms(full)) vs \(ms(empty)) empty; ratio \(String(format: "%.2f", full / empty)) (target <= 1.2)")
}

/// `samples` adds to each of two daemons in turn, one to `a`, one to `b`,
/// so both see the same machine; `afterB` runs, untimed, after each of
/// `b`'s with its answer.
func addsInTurn(_ a: DaemonHarness, _ b: DaemonHarness, afterB: ([UInt8]) throws -> Void) throws -> (a: [Double], b: [Double]) {
    let first = try RawClient(path: a.socketPath), second = try RawClient(path: b.socketPath)
    var timesA: [Double] = [], timesB: [Double] = []
    for _ in 0..<samples {
        var start = BenchRun.now()
        _ = try add(first)
        timesA.append(BenchRun.now() - start)
        start = BenchRun.now()
        let answer = try add(second)
        timesB.append(BenchRun.now() - start)
        try afterB(answer)
    }
    return (timesA, timesB)
}

// 5. Add latency with accounts configured (accounts_dir with the caller's
// token file: its uid looked up, its file looked at, on every add) vs
// without, two daemons sampled in turn so both see the same machine.
do {
    let accounts = scratch + "/accounts"
    try FileManager.default.createDirectory(atPath: accounts, withIntermediateDirectories: true)
    guard case .name(let me) = Users.lookup(user: Users.effectiveUserID) else { fatalError("this user has no name") }
    _ = FileManager.default.createFile(atPath: "\(accounts)/\(me)", contents: Data("esk_bench\n".utf8), attributes: [.posixPermissions: 0o600])
    let plain = try startDaemon()
    let withAccounts = DaemonHarness(arguments: ["--accounts-dir", accounts])
    try withAccounts.start()
    let (without, with) = try addsInTurn(plain, withAccounts) { _ in }
    let accountsOfJobs = try Connection(path: withAccounts.stateDirectory + "/expensed.db").query("SELECT DISTINCT account FROM jobs") { $0.string(0) }
    plain.stop()
    withAccounts.stop()
    precondition(accountsOfJobs == [me], "the adds went to \(accountsOfJobs), not \(me)'s account")
    let p50With = BenchRun.percentile(with, 0.5), p50Without = BenchRun.percentile(without, 0.5)
    print("add p50 with accounts_dir: \(ms(p50With)) vs \(ms(p50Without)) without; ratio \(String(format: "%.2f", p50With / p50Without)) (target <= 1.1)")
}

// 5b. Add latency with a watcher of changes (`watch` with `changes`)
// reading each change its add made vs a daemon nobody watches, two daemons
// sampled in turn. The change is read after the add's answer, untimed.
do {
    let plain = try startDaemon(), watched = try startDaemon()
    let watcher = try RawClient(path: watched.socketPath)
    try watcher.send(#"{"op":"watch","changes":true}"# + "\n")
    _ = try watcher.readJSONLine()
    let (without, with) = try addsInTurn(plain, watched) { answer in
        let change = try watcher.readJSONLine()
        let added = try JSONValue.parse(answer)
        precondition(change["result"]?["transaction_id"] == added["result"]?["transaction_id"] && change["result"]?["to"] == "queued",
                     "the watcher saw \(change) for \(added)")
    }
    plain.stop()
    watched.stop()
    let p50With = BenchRun.percentile(with, 0.5), p50Without = BenchRun.percentile(without, 0.5)
    print("add p50 with a watcher of changes: \(ms(p50With)) vs \(ms(p50Without)) unwatched; ratio \(String(format: "%.2f", p50With / p50Without))")
}

// 6. Idle: wakeups and memory over a window, without and with a watchdog.
for (label, env) in [("no watchdog", [String: String]()), ("WatchdogSec=30s", ["WATCHDOG_USEC": "30000000"])] {
    let daemon = try startDaemon(environment: env)
    let pid = daemon.process!.pid
    sleep(3)
    let window = quick ? 10.0 : 30.0
    let before = processCounters(pid)
    usleep(UInt32(window * 1e6))
    let after = processCounters(pid)
    daemon.stop()
    let rate = Double(wakeups(before.switches, after.switches)) / window
    print("idle (\(label)), \(Int(window)) s: \(String(format: "%.2f", rate)) wakeups/s, RSS \(after.rssKiB / 1024) MiB (target <= 1/s, <= 16 MiB)")
}

// 7. Against another build (--baseline-bin): the figures of issue-sized
// goals for both builds, the two alternating sample by sample (or round by
// round), each daemon with an empty configuration and no reading.
/// A daemon of the build in `directory`, started with only the flags every
/// build since the first knows (and `--reading off` where it is known).
func startBuild(_ directory: String) throws -> DaemonHarness {
    let folder = TemporaryDirectory(prefix: "bench-build")
    _ = FileManager.default.createFile(atPath: folder.at("expensed.conf"), contents: Data())
    let daemon = DaemonHarness(directory: folder)
    daemon.executable = directory + "/expensed"
    let help = (try? runCommand(directory + "/expensed", ["--help"], timeout: 30).stdout) ?? ""
    daemon.arguments = ["--config", folder.at("expensed.conf"), "--state-dir", daemon.stateDirectory, "--socket", daemon.socketPath,
                        "--spool-dir", "none", "--log-target", "stderr"] + (help.contains("--reading ") ? ["--reading", "off"] : [])
    try daemon.start()
    return daemon
}

func ratio(_ a: Double, _ b: Double) -> String { String(format: "%.2f", a / b) }

/// `count` samples of the baseline, then an add to each build, the two
/// builds taking turns at going first; the medians of the three.
/// `prepare` runs before each sample, outside its time.
func medians(_ count: Int, new: RawClient, old: RawClient, prepare: (Int) throws -> Void = { _ in }, baseline: (Int) throws -> Void,
             add: (RawClient) throws -> Void) throws -> (base: Double, new: Double, old: Double) {
    var bases: [Double] = [], news: [Double] = [], olds: [Double] = []
    for sample in 0..<count {
        try prepare(sample)
        var start = BenchRun.now()
        try baseline(sample)
        bases.append(BenchRun.now() - start)
        for isNew in sample % 2 == 0 ? [true, false] : [false, true] {
            start = BenchRun.now()
            try add(isNew ? new : old)
            if isNew { news.append(BenchRun.now() - start) } else { olds.append(BenchRun.now() - start) }
        }
    }
    return (BenchRun.percentile(bases, 0.5), BenchRun.percentile(news, 0.5), BenchRun.percentile(olds, 0.5))
}


if let baselineBin {
    print("against the build in \(baselineBin) (\"old\"), alternating with \(bin) (\"new\"):")
    // Adds without a receipt, each beside one fsync'd commit: commit, new, old, …
    do {
        let db = try Connection(path: scratch + "/baseline-builds.db")
        try db.execute("PRAGMA journal_mode = WAL; PRAGMA synchronous = FULL; CREATE TABLE t (id INTEGER PRIMARY KEY, uuid TEXT, payload TEXT)")
        let new = try startBuild(bin), old = try startBuild(baselineBin)
        let (commit, n, o) = try medians(samples, new: try RawClient(path: new.socketPath), old: try RawClient(path: old.socketPath), baseline: { _ in
            try db.transaction { try db.execute("INSERT INTO t (uuid, payload) VALUES (?, ?)", [.text(UUID().uuidString), .text(#"{"merchant":"Blue Bottle","amount":"12.50"}"#)]) }
        }, add: { _ = try add($0) })
        new.stop()
        old.stop()
        print("  add p50 ÷ one fsync'd commit: new \(ratio(n, commit)), old \(ratio(o, commit)) (goal <= 1.5); new ÷ old \(ratio(n, o)) (\(ms(n)), \(ms(o)), commit \(ms(commit)))")
    }
    // Adds with a 200 KiB receipt (a photo), each beside its write, fsyncs, rename and commit.
    do {
        let receipt = try photoReceipt(in: scratch)
        let path = scratch + "/receipt-builds.jpg"
        _ = FileManager.default.createFile(atPath: path, contents: Data(receipt))
        let new = try startBuild(bin), old = try startBuild(baselineBin)
        let files = scratch + "/receipt-builds"
        try FileManager.default.createDirectory(atPath: files, withIntermediateDirectories: true)
        let db = try Connection(path: scratch + "/baseline-builds-r.db")
        try db.execute("PRAGMA journal_mode = WAL; PRAGMA synchronous = FULL; CREATE TABLE t (id INTEGER PRIMARY KEY, file TEXT)")
        let (base, n, o) = try medians(samples / 3, new: try RawClient(path: new.socketPath), old: try RawClient(path: old.socketPath), prepare: { i in
            try makeDistinct(path, i)
        }, baseline: { i in
            try FileSystem.writeDurably(receipt, to: "\(i).jpg", in: files)
            try db.transaction { try db.execute("INSERT INTO t (file) VALUES (?)", [.text("\(i).jpg")]) }
        }, add: { connection in
            // Opened for each add, inside its time: a few µs of its 2 ms.
            let file = try FileDescriptor.open(path, .readOnly)
            _ = try add(connection, receipt: file)
        })
        new.stop()
        old.stop()
        print("  add with a 200 KiB receipt p50 ÷ its write, fsyncs, rename, commit: new \(ratio(n, base)), old \(ratio(o, base)) (goal <= 1.3); new ÷ old \(ratio(n, o)) (\(ms(n)), \(ms(o)), baseline \(ms(base)))")
    }
    // Adds/s from 8 clients, and from one: rounds new, old, new, old, …; medians.
    do {
        let new = try startBuild(bin), old = try startBuild(baselineBin)
        var rates: [String: [Double]] = [:], cpu: [String: Double] = [:]
        for _ in 0..<(quick ? 2 : 4) {
            for (name, daemon) in [("new", new), ("old", old)] {
                let before = try cpuSeconds(daemon.process!.pid)
                rates[name + "8", default: []].append(try concurrentRate(daemon, clients: 8, total: samples * 4))
                cpu[name, default: 0] += try cpuSeconds(daemon.process!.pid) - before
                rates[name + "1", default: []].append(try concurrentRate(daemon, clients: 1, total: samples))
            }
        }
        new.stop()
        old.stop()
        let median = { (key: String) in BenchRun.percentile(rates[key]!, 0.5) }
        print("  adds/s, 8 clients: new \(Int(median("new8"))), old \(Int(median("old8"))); new ÷ old \(ratio(median("new8"), median("old8"))) (goal >= 2)")
        print("  adds/s, 8 clients ÷ 1 client: new \(ratio(median("new8"), median("new1"))), old \(ratio(median("old8"), median("old1")))")
        let adds = Double((quick ? 2 : 4) * (samples * 4 / 8) * 8)
        print("  the daemon's CPU per add from 8 clients: new \(Int(cpu["new"]! / adds * 1e6)) µs, old \(Int(cpu["old"]! / adds * 1e6)) µs")
    }
    // Idle memory after start and after 1,000 adds: RSS and its parts (smaps_rollup).
    do {
        let new = try startBuild(bin), old = try startBuild(baselineBin)
        for daemon in [new, old] { _ = try concurrentRate(daemon, clients: 1, total: 1000) }
        sleep(3)
        for (name, daemon) in [("new", new), ("old", old)] {
            let rollup = (try? String(contentsOfFile: "/proc/\(daemon.process!.pid)/smaps_rollup", encoding: .utf8)) ?? ""
            let field = { (key: String) -> Int in
                rollup.split(separator: "\n").first { $0.hasPrefix(key + ":") }
                    .flatMap { Int($0.split(whereSeparator: { $0 == " " || $0 == "\t" })[1]) } ?? 0
            }
            print("  idle after 1,000 adds, \(name): RSS \(field("Rss") / 1024) MiB (goal <= 16 MiB): anonymous \(field("Anonymous") / 1024) MiB, file-backed \(field("Rss") / 1024 - field("Anonymous") / 1024) MiB")
        }
        new.stop()
        old.stop()
    }
}
