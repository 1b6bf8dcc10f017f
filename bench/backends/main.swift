// bench-backends: how fast expensed drains 1,000 creates into ihatemoney
// and into fava, beside a plain HTTP client (libcurl, the same requests,
// as many at once as the daemon sends to that backend) in the same run.
//
// Usage: bench-backends [--bin DIR] [--count N] [--only ihatemoney|fava]
// DIR holds expensed (default .build/release). Each backend is started
// twice from the test venv with fresh data, one for the daemon and one for
// the plain client, so neither sees the other's records. The daemon's
// creates are queued while its backend is down; then both sides start at
// once and run side by side, so both meet the same machine (it is shared
// and its speed moves by a third within minutes: one side after the other
// compared two different machines). The daemon's clock runs from `sync`
// to the first status with nothing queued or sending; the plain client's
// from its first request to its last answer. The ratio is plain time /
// daemon time: 1.0 means the daemon adds nothing to the backend's own pace.
import Curl
import Digest
import ExpenseCore
import ExpenseTestSupport
import Foundation
import Posix

let options = BenchArguments("bench-backends", usage: "usage: bench-backends [--bin DIR] [--count N] [--only ihatemoney|fava]",
                             options: ["--bin", "--count", "--only"])
let bin = options.binaryDirectory()
let count = options.int("--count", default: 1000)
let only = options.value("--only")
if let only, !["ihatemoney", "fava"].contains(only) { options.refuse("--only must be ihatemoney or fava") }

func now() -> Double { Double(Clock.monotonicNanoseconds) / 1e9 }

/// Queues `count` creates over one connection.
func queue(_ daemon: DaemonHarness) throws {
    let client = try RawClient(path: daemon.socketPath)
    for n in 0..<count {
        try client.send(#"{"id":\#(n),"op":"add","expense":{"merchant":"Shop \#(n)","amount":"12.50","currency":"EUR","date":"2026-11-29","category":"Meals","comment":"bench"}}"# + "\n")
        _ = try client.readLine()
    }
}

/// Asks for a pass and times it to the first status with nothing queued
/// or sending (polled every 20 ms, every 2 ms near the end).
/// - Returns: the seconds, and that status, for ``check(_:held:)``.
func drain(_ daemon: DaemonHarness) throws -> (seconds: Double, status: JSONValue?) {
    let start = now()
    _ = try daemon.request(["op": "sync"])
    while true {
        let status = try daemon.request(["op": "status"])["result"]
        let seen = now() - start
        if status?["server"] == "needs_credentials" { throw TestFailure("the backend refused the daemon's credentials") }
        let pending = (status?["queued"]?.intValue ?? 0) + (status?["sending"]?.intValue ?? 0)
        if pending == 0 { return (seen, status) }
        if seen > 900 { throw TestFailure("not drained after 900 s: \(status?.serialized() ?? "")") }
        usleep(pending > 50 ? 20_000 : 2_000)
    }
}

/// After both sides are done (a check while the plain client still runs
/// would take CPU from it): the daemon's backend must hold every create
/// and nothing may need attention. A status that said drained before
/// that is a defect, and the run stops with it.
func check(_ drained: (seconds: Double, status: JSONValue?), held: Int) throws {
    if held != count || drained.status?["needs_attention"]?.intValue != 0 {
        throw TestFailure("status said nothing pending after \(String(format: "%.2f", drained.seconds)) s but the backend holds \(held) of \(count) creates: \(drained.status?.serialized() ?? "")")
    }
}

/// `count` requests from `make`, `width` at once; seconds. Fails on any non-2xx.
func plain(width: Int, _ make: @escaping @Sendable (Int) -> HTTPRequest) async throws -> Double {
    let client = HTTPClient(maxConnections: width)
    defer { client.shutdown() }
    let start = now()
    let failures = try await withThrowingTaskGroup(of: Int.self) { group in
        var next = 0, failures = 0
        for _ in 0..<min(width, count) {
            let n = next; next += 1
            group.addTask { if case .success(let r) = await client.send(make(n)), (200..<300).contains(r.status) { 0 } else { 1 } }
        }
        while let failed = try await group.next() {
            failures += failed
            if next < count {
                let n = next; next += 1
                group.addTask { if case .success(let r) = await client.send(make(n)), (200..<300).contains(r.status) { 0 } else { 1 } }
            }
        }
        return failures
    }
    if failures > 0 { throw TestFailure("\(failures) plain requests failed") }
    return now() - start
}

func report(_ name: String, daemon: Double, plain: Double, records: Int) {
    // Written at once, not buffered: a figure is not lost with a later failure.
    FileHandle.standardOutput.write(Data("\(name): \(count) creates; daemon \(String(format: "%.2f", daemon)) s (\(Int(Double(count) / daemon))/s), plain client \(String(format: "%.2f", plain)) s (\(Int(Double(count) / plain))/s); ratio plain/daemon \(String(format: "%.2f", plain / daemon)); \(records) records in the daemon's backend\n".utf8))
}

/// Runs `body` on a thread of its own: the daemon's side polls over a
/// blocking socket, which must not hold one of the cooperative pool's
/// threads (two on this machine) while the plain client runs on them.
func onThread<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { continuation in
        Thread { continuation.resume(with: Result { try body() }) }.start()
    }
}

/// The daemon's drain and the plain client's run, started together.
func sideBySide(daemon: @escaping @Sendable () throws -> (seconds: Double, status: JSONValue?), plain: () async throws -> Double)
    async throws -> (daemon: (seconds: Double, status: JSONValue?), plain: Double) {
    async let daemonSeconds = onThread(daemon)
    let plainSeconds = try await plain()
    return (try await daemonSeconds, plainSeconds)
}

func ihatemoney() async throws {
    let dir = TemporaryDirectory(prefix: "bench-ihm")
    let port = try ServerProcess.unusedPort()
    try FileManager.default.createDirectory(atPath: dir.at("ihm"), withIntermediateDirectories: true)
    let backend = try IhatemoneyProcess(directory: dir.at("ihm"), port: port, passwordHash: nil)
    defer { backend.stop() }
    let project = try backend.makeProject(members: ["Alice", "Bob"])
    backend.stop()
    SampleReceipt.write(Array(project.privateCode.utf8), to: dir.at("token"))
    SampleReceipt.write(Array("backend = ihatemoney\nserver = http://127.0.0.1:\(port)\(project.path)\ntoken_file = \(dir.at("token"))\nihatemoney_payer = Alice\n".utf8),
                        to: dir.at("expensed.conf"))
    // No timer pass: the first pass after the backend is back is `sync`'s.
    let daemon = DaemonHarness(arguments: ["--drain-interval", "1d", "--concurrency", "4"], directory: dir)
    try daemon.start()
    defer { daemon.stop() }
    try queue(daemon)

    try FileManager.default.createDirectory(atPath: dir.at("ihm-plain"), withIntermediateDirectories: true)
    let other = try IhatemoneyProcess(directory: dir.at("ihm-plain"), passwordHash: nil)
    defer { other.stop() }
    let target = try other.makeProject(members: ["Alice", "Bob"])
    let url = target.url + "/bills", auth = target.basicAuthorization
    let alice = target.members["Alice"]!, bob = target.members["Bob"]!
    try backend.restart()
    let (drained, plainSeconds) = try await sideBySide(daemon: { try drain(daemon) }) {
        try await plain(width: 4) { n in
            let form = FormBody([("date", "2026-11-29"), ("what", "Shop \(n) — bench"), ("payer", "\(alice)"), ("amount", "12.50"),
                                 ("original_currency", "EUR"), ("external_link", "https://expensed.invalid/t/\(plainID(n))?client_id=\(plainUUID(n))"),
                                 ("bill_type", "Expense"), ("payed_for", "\(alice)"), ("payed_for", "\(bob)")])
            return HTTPRequest(method: "POST", url: url, headers: [auth, ("Content-Type", "application/x-www-form-urlencoded")], body: .bytes(form.bytes))
        }
    }
    let records = try backend.storedBills().count
    try check(drained, held: records)
    report("ihatemoney", daemon: drained.seconds, plain: plainSeconds, records: records)
}

/// Markers as long as the daemon's (`cp-` and 22 hex digits, a UUID).
func plainID(_ n: Int) -> String { "cp-" + String(format: "%022x", n) }
func plainUUID(_ n: Int) -> String { String(format: "00000000-0000-4000-8000-%012x", n) }

func fava() async throws {
    let dir = TemporaryDirectory(prefix: "bench-fava")
    try FileManager.default.createDirectory(atPath: dir.at("fava"), withIntermediateDirectories: true)
    let backend = try FavaProcess(directory: dir.at("fava"))
    let base = backend.baseURL
    backend.stop()
    SampleReceipt.write(Array("backend = fava\nserver = \(base)\n".utf8), to: dir.at("expensed.conf"))
    let daemon = DaemonHarness(arguments: ["--drain-interval", "1d"], directory: dir)
    try daemon.start()
    defer { daemon.stop() }
    try queue(daemon)

    try FileManager.default.createDirectory(atPath: dir.at("fava-plain"), withIntermediateDirectories: true)
    let other = try FavaProcess(directory: dir.at("fava-plain"))
    defer { other.stop() }
    let url = other.baseURL + "/api/add_entries"
    try backend.restart()
    defer { backend.stop() }
    let (drained, plainSeconds) = try await sideBySide(daemon: { try drain(daemon) }) {
        try await plain(width: 1) { n in
            let entry: JSONValue = ["t": "Transaction", "date": "2026-11-29", "flag": "*", "payee": .string("Shop \(n)"), "narration": "bench",
                                    "tags": [], "links": .array([.string(plainID(n))]),
                                    "meta": ["transaction_id": .string(plainID(n)), "client_id": .string(plainUUID(n))],
                                    "postings": [["account": "Expenses:Meals", "amount": "12.50 EUR"], ["account": "Assets:Cash", "amount": "-12.50 EUR"]]]
            return HTTPRequest(method: "PUT", url: url, headers: [("Content-Type", "application/json")],
                               body: .bytes(JSONValue.object(["entries": .array([entry])]).serializedBytes()))
        }
    }
    let records = try backend.loadLedger().transactions.count
    try check(drained, held: records)
    report("fava", daemon: drained.seconds, plain: plainSeconds, records: records)
}

do {
    if only == nil || only == "ihatemoney" { try await ihatemoney() }
    if only == nil || only == "fava" { try await fava() }
} catch {
    FileHandle.standardError.write(Data("bench-backends: \(error)\n".utf8))
    exit(1)
}
