// bench-backends: how fast expensed drains 1,000 creates into ihatemoney
// and into fava, beside a plain HTTP client (libcurl, the same requests,
// as many at once as the daemon sends to that backend) in the same run.
//
// Usage: bench-backends [--bin DIR] [--count N] [--only ihatemoney|fava]
// DIR holds expensed (default .build/release). Each backend is started
// twice from the test venv with fresh data, one for the daemon and one for
// the plain client, so neither sees the other's records. The daemon's
// creates are queued while its backend is down; the clock runs from
// `sync` to an empty outbox. The ratio is plain time / daemon time: 1.0
// means the daemon adds nothing to the backend's own pace.
import Curl
import Digest
import ExpenseCore
import ExpenseTestSupport
import Foundation
import Posix

let arguments = CommandLine.arguments
let bin = arguments.firstIndex(of: "--bin").map { arguments[$0 + 1] } ?? ".build/release"
let count = arguments.firstIndex(of: "--count").flatMap { Int(arguments[$0 + 1]) } ?? 1000
let only = arguments.firstIndex(of: "--only").map { arguments[$0 + 1] }
setenv("EXPENSED_BIN_DIR", bin, 1)

func now() -> Double { Double(Clock.monotonicNanoseconds) / 1e9 }

/// Queues `count` creates over one connection.
func queue(_ daemon: DaemonHarness) throws {
    let client = try RawClient(path: daemon.socketPath)
    for n in 0..<count {
        try client.send(#"{"id":\#(n),"op":"add","expense":{"merchant":"Shop \#(n)","amount":"12.50","currency":"EUR","date":"2026-11-29","category":"Meals","comment":"bench"}}"# + "\n")
        _ = try client.readLine()
    }
}

/// Asks for a pass and waits until nothing is queued or sending and
/// `stored()` says every create is in the backend; seconds. (A status with
/// nothing queued alone was seen before the creates were in fava.)
func drain(_ daemon: DaemonHarness, stored: () throws -> Int) throws -> Double {
    let start = now()
    _ = try daemon.request(["op": "sync"])
    while true {
        let status = try daemon.request(["op": "status"])["result"]
        if status?["server"] == "needs_credentials" { throw TestFailure("the backend refused the daemon's credentials") }
        let pending = (status?["queued"]?.intValue ?? 0) + (status?["sending"]?.intValue ?? 0)
        if pending == 0, try stored() >= count { return now() - start }
        if now() - start > 600 { throw TestFailure("not drained after 600 s: \(status?.serialized() ?? "")") }
        usleep(pending > 50 ? 20_000 : 2_000)
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

func ihatemoney() async throws {
    let dir = TemporaryDirectory(prefix: "bench-ihm")
    let port = try ServerProcess.unusedPort()
    try FileManager.default.createDirectory(atPath: dir.at("ihm"), withIntermediateDirectories: true)
    let backend = try IhatemoneyProcess(directory: dir.at("ihm"), port: port)
    defer { backend.stop() }
    let project = try backend.makeProject(members: ["Alice", "Bob"])
    backend.stop()
    SampleReceipt.write(Array(project.privateCode.utf8), to: dir.at("token"))
    SampleReceipt.write(Array("backend = ihatemoney\nserver = http://127.0.0.1:\(port)\(project.path)\ntoken_file = \(dir.at("token"))\nihatemoney_payer = Alice\n".utf8),
                        to: dir.at("expensed.conf"))
    let daemon = DaemonHarness(arguments: ["--drain-interval", "200ms", "--concurrency", "4"], directory: dir)
    try daemon.start()
    defer { daemon.stop() }
    try queue(daemon)
    try backend.restart()
    let daemonSeconds = try drain(daemon) { try backend.storedBills().count }
    let records = try backend.storedBills().count

    try FileManager.default.createDirectory(atPath: dir.at("ihm-plain"), withIntermediateDirectories: true)
    let other = try IhatemoneyProcess(directory: dir.at("ihm-plain"))
    defer { other.stop() }
    let target = try other.makeProject(members: ["Alice", "Bob"])
    let url = target.url + "/bills", auth = target.basicAuthorization
    let alice = target.members["Alice"]!, bob = target.members["Bob"]!
    let plainSeconds = try await plain(width: 4) { n in
        let form = FormBody([("date", "2026-11-29"), ("what", "Shop \(n) — bench"), ("payer", "\(alice)"), ("amount", "12.50"),
                             ("original_currency", "EUR"), ("external_link", "https://expensed.invalid/t/plain-\(n)"), ("bill_type", "Expense"),
                             ("payed_for", "\(alice)"), ("payed_for", "\(bob)")])
        return HTTPRequest(method: "POST", url: url, headers: [auth, ("Content-Type", "application/x-www-form-urlencoded")], body: .bytes(form.bytes))
    }
    report("ihatemoney", daemon: daemonSeconds, plain: plainSeconds, records: records)
}

func fava() async throws {
    let dir = TemporaryDirectory(prefix: "bench-fava")
    try FileManager.default.createDirectory(atPath: dir.at("fava"), withIntermediateDirectories: true)
    let backend = try FavaProcess(directory: dir.at("fava"))
    let base = backend.baseURL
    backend.stop()
    SampleReceipt.write(Array("backend = fava\nserver = \(base)\n".utf8), to: dir.at("expensed.conf"))
    let daemon = DaemonHarness(arguments: ["--drain-interval", "200ms"], directory: dir)
    try daemon.start()
    defer { daemon.stop() }
    try queue(daemon)
    try backend.restart()
    defer { backend.stop() }
    let daemonSeconds = try drain(daemon) { try backend.loadLedger().transactions.count }
    let records = try backend.loadLedger().transactions.count

    try FileManager.default.createDirectory(atPath: dir.at("fava-plain"), withIntermediateDirectories: true)
    let other = try FavaProcess(directory: dir.at("fava-plain"))
    defer { other.stop() }
    let url = other.baseURL + "/api/add_entries"
    let plainSeconds = try await plain(width: 1) { n in
        let entry: JSONValue = ["t": "Transaction", "date": "2026-11-29", "flag": "*", "payee": .string("Shop \(n)"), "narration": "bench",
                                "tags": [], "links": .array([.string("plain-\(n)")]), "meta": ["transaction_id": .string("plain-\(n)")],
                                "postings": [["account": "Expenses:Meals", "amount": "12.50 EUR"], ["account": "Assets:Cash", "amount": "-12.50 EUR"]]]
        return HTTPRequest(method: "PUT", url: url, headers: [("Content-Type", "application/json")],
                           body: .bytes(JSONValue.object(["entries": .array([entry])]).serializedBytes()))
    }
    report("fava", daemon: daemonSeconds, plain: plainSeconds, records: records)
}

do {
    if only == nil || only == "ihatemoney" { try await ihatemoney() }
    if only == nil || only == "fava" { try await fava() }
} catch {
    FileHandle.standardError.write(Data("bench-backends: \(error)\n".utf8))
    exit(1)
}
