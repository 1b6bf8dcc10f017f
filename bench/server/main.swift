// bench-server: load on a live expense-server over loopback.
//
// Creates per second and latency with 1, 8 and 32 keep-alive clients
// (JSON bodies of about 300 bytes, a fresh Idempotency-Key each), beside
// the same load on GET /healthz, then receipt uploads of 200 KiB and
// 10 MiB in MiB/s. Every create and upload is a durable commit. Last,
// GET /healthz on a fresh connection per request, alone and beside slow
// clients that trickle header lines ("slowloris"), on a server with
// --max-connections 32.
//
// Usage: bench-server [--server PATH] [--seconds S] [--clients 1,8,32] [--slow-clients N]
import Digest
import ExpenseTestSupport
import Foundation
import Synchronization

struct Settings {
    var server = BuiltProducts.packageRoot + "/.build/release/expense-server"
    var seconds = 5.0
    var clients = [1, 8, 32]
    var receiptClients = 4
    var slowClients = 64

    init(_ arguments: [String]) {
        var it = arguments.makeIterator()
        while let argument = it.next() {
            switch argument {
            case "--server": server = it.next() ?? server
            case "--seconds": seconds = it.next().flatMap(Double.init) ?? seconds
            case "--clients": clients = (it.next() ?? "").split(separator: ",").compactMap { Int($0) }
            case "--receipt-clients": receiptClients = it.next().flatMap(Int.init) ?? receiptClients
            case "--slow-clients": slowClients = it.next().flatMap(Int.init) ?? slowClients
            default:
                print("usage: bench-server [--server PATH] [--seconds S] [--clients 1,8,32] [--receipt-clients N] [--slow-clients N]")
                exit(64)
            }
        }
    }
}

/// What one run measured.
struct Measurement {
    var requests = 0
    var bytes = 0
    var failures = 0
    var latencies: [UInt64] = []
    var seconds = 0.0

    var perSecond: Double { Double(requests) / seconds }
    var mibPerSecond: Double { Double(bytes) / seconds / 1_048_576 }

    func percentile(_ p: Double) -> Double {
        guard !latencies.isEmpty else { return .nan }
        let sorted = latencies.sorted()
        let index = min(sorted.count - 1, Int((Double(sorted.count) * p).rounded(.up)) - 1)
        return Double(sorted[max(0, index)]) / 1_000_000
    }
}

/// Runs `clients` threads, each on its own keep-alive connection, for
/// `seconds`. `step` performs one measured request and returns the bytes
/// it sent, or nil when the answer was wrong.
func run(clients: Int, seconds: Double, port: UInt16,
         step: @escaping @Sendable (HTTPConnection, Int, Int) throws -> (bytes: Int, nanoseconds: UInt64)?) -> Measurement {
    let total = Mutex(Measurement())
    let start = DispatchTime.now().uptimeNanoseconds
    let deadline = start + UInt64(seconds * 1e9)
    let group = DispatchGroup()
    for client in 0..<clients {
        group.enter()
        let thread = Thread {
            var local = Measurement()
            local.latencies.reserveCapacity(100_000)
            do {
                var connection = try HTTPConnection(port: port)
                var sequence = 0
                while DispatchTime.now().uptimeNanoseconds < deadline {
                    sequence += 1
                    do {
                        if let result = try step(connection, client, sequence) {
                            local.requests += 1
                            local.bytes += result.bytes
                            local.latencies.append(result.nanoseconds)
                        } else {
                            local.failures += 1
                        }
                    } catch {
                        local.failures += 1
                        connection = try HTTPConnection(port: port)
                    }
                }
            } catch {
                local.failures += 1
            }
            total.withLock {
                $0.requests += local.requests
                $0.bytes += local.bytes
                $0.failures += local.failures
                $0.latencies += local.latencies
            }
            group.leave()
        }
        thread.stackSize = 1 << 20
        thread.start()
    }
    group.wait()
    var result = total.withLock { $0 }
    result.seconds = Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
    return result
}

func timed(_ body: () throws -> HTTPMessage) rethrows -> (HTTPMessage, UInt64) {
    let t0 = DispatchTime.now().uptimeNanoseconds
    let message = try body()
    return (message, DispatchTime.now().uptimeNanoseconds - t0)
}

let settings = Settings(Array(CommandLine.arguments.dropFirst()))
guard FileManager.default.isExecutableFile(atPath: settings.server) else {
    print("bench-server: no server at \(settings.server); run 'swift build -c release' first")
    exit(1)
}
let scratch = TemporaryDirectory(prefix: "bench-server")
let server = try ServerProcess(dataDirectory: scratch.at("data"), arguments: ["--max-connections", "512"],
                               executable: settings.server, outputDirectory: scratch.path)
let auth = ("Authorization", "Bearer \(server.token)")
let json = ("Content-Type", "application/json")
// About 300 bytes, like an expense the daemon sends.
let createBody = Array("""
    {"merchant":"Blue Bottle Coffee","amount":"12.50","currency":"EUR","date":"2026-11-29",\
    "category":"Meals","comment":"team lunch with the field sales group after the quarterly review",\
    "device_id":"bench-0d6f2c1e-5a7b-4f8e-9c3d-2b1a0f9e8d7c","device_seq":17,"created_at_device":"2026-11-29T12:01:00Z"}
    """.utf8)

print("expense-server benchmark: \(ProcessInfo.processInfo.activeProcessorCount) cores, loopback, \(settings.seconds) s per row")
print("server: \(settings.server)")
print("creates: POST /v1/expenses, \(createBody.count)-byte JSON body, fresh Idempotency-Key, durable commit (WAL, synchronous=FULL)")
print("")
print("clients  endpoint               req/s     p50 ms   p99 ms   errors")

func row(_ clients: Int, _ name: String, _ m: Measurement) {
    print(String(format: "%-8d ", clients) + name.padding(toLength: 20, withPad: " ", startingAt: 0)
          + String(format: " %8.0f  %8.2f %8.2f   %d", m.perSecond, m.percentile(0.5), m.percentile(0.99), m.failures))
}

for clients in settings.clients {
    let health = run(clients: clients, seconds: settings.seconds, port: server.port) { connection, _, _ in
        let (message, ns) = try timed { try connection.request("GET", "/healthz") }
        return message.status == 200 ? (0, ns) : nil
    }
    row(clients, "GET /healthz", health)
    let creates = run(clients: clients, seconds: settings.seconds, port: server.port) { connection, _, _ in
        let key = UUID().uuidString.lowercased()
        let (message, ns) = try timed {
            try connection.request("POST", "/v1/expenses", headers: [auth, json, ("Idempotency-Key", "\"\(key)\"")], body: createBody)
        }
        return message.status == 201 ? (createBody.count, ns) : nil
    }
    row(clients, "POST /v1/expenses", creates)
}

print("")
print("receipts: PUT /v1/expenses/{id}/receipt (PNG bytes, Repr-Digest checked, file fsynced and renamed, row committed)")
print("clients  size        uploads/s   MiB/s    p50 ms   p99 ms   errors")
/// Makes `count` expenses for uploads to go to, with 16 clients, before
/// the measured run, so the figures are the uploads' alone.
func prepareExpenses(_ count: Int) -> [String] {
    let ids = Mutex<[String]>([])
    let done = DispatchGroup()
    for client in 0..<16 {
        done.enter()
        Thread {
            defer { done.leave() }
            guard let connection = try? HTTPConnection(port: server.port) else { return }
            for _ in stride(from: client, to: count, by: 16) {
                guard let created = try? connection.request("POST", "/v1/expenses", headers: [
                    auth, json, ("Idempotency-Key", UUID().uuidString.lowercased()),
                ], body: Array("{}".utf8)), created.status == 201, let id = created.json?["transaction_id"] as? String else { continue }
                ids.withLock { $0.append(id) }
            }
        }.start()
    }
    done.wait()
    return ids.withLock { $0 }
}

for size in [200 << 10, 10 << 20] {
    var bytes = [UInt8](repeating: 0, count: size)
    for i in bytes.indices { bytes[i] = UInt8(truncatingIfNeeded: i &* 2_654_435_761 >> 13) }
    bytes.replaceSubrange(0..<8, with: [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A])
    let digest = "sha-256=:\(Base64.encode(SHA256.hash(bytes))):"
    let body = bytes
    // More than the run can use: about twice the uploads a fast disk takes.
    let expenseIDs = prepareExpenses(Int(settings.seconds * (size < 1 << 20 ? 1500 : 100)))
    let nextExpense = Mutex(0)
    let m = run(clients: settings.receiptClients, seconds: settings.seconds, port: server.port) { connection, _, _ in
        let index = nextExpense.withLock { n -> Int in n += 1; return n - 1 }
        var id = index < expenseIDs.count ? expenseIDs[index] : nil
        if id == nil {
            // Ran out: make one now (its time is not measured).
            let created = try connection.request("POST", "/v1/expenses", headers: [auth, json, ("Idempotency-Key", UUID().uuidString.lowercased())],
                                                 body: Array("{}".utf8))
            id = created.json?["transaction_id"] as? String
        }
        guard let id else { return nil }
        let (message, ns) = try timed {
            try connection.request("PUT", "/v1/expenses/\(id)/receipt", headers: [
                auth, ("Content-Type", "image/png"), ("Repr-Digest", digest), ("Idempotency-Key", UUID().uuidString.lowercased()),
            ], body: body)
        }
        return message.status == 200 ? (body.count, ns) : nil
    }
    let label = size >= 1 << 20 ? "\(size >> 20) MiB" : "\(size >> 10) KiB"
    print(String(format: "%-8d ", settings.receiptClients) + label.padding(toLength: 10, withPad: " ", startingAt: 0)
          + String(format: " %10.1f %8.1f  %8.2f %8.2f   %d", m.perSecond, m.mibPerSecond, m.percentile(0.5), m.percentile(0.99), m.failures))
}
server.stop()

// Slow heads: what trickling clients, more of them than there are slots,
// cost everyone else. The baseline is the same load without them.
let slotLimit = 32
let guarded = try ServerProcess(dataDirectory: scratch.at("slow-heads"), arguments: ["--max-connections", "\(slotLimit)"],
                                executable: settings.server, outputDirectory: scratch.path)
print("")
print("slow heads: GET /healthz, a fresh connection per request, 4 clients; --max-connections \(slotLimit), --header-timeout as default;")
print("slow clients send a header line every 0.25 s and never end the head, and come back 1 s after being closed")
print("slow clients  req/s     p50 ms   p99 ms   errors")
func freshConnectionHealth() -> Measurement {
    run(clients: 4, seconds: settings.seconds, port: guarded.port) { _, _, _ in
        let (message, ns) = try timed { try HTTPConnection(port: guarded.port).request("GET", "/healthz") }
        return message.status == 200 ? (0, ns) : nil
    }
}
func slowRow(_ count: Int, _ m: Measurement) {
    print(String(format: "%-12d %7.0f  %8.2f %8.2f   %d", count, m.perSecond, m.percentile(0.5), m.percentile(0.99), m.failures))
}
let alone = freshConnectionHealth()
slowRow(0, alone)
let tricklers = (0..<settings.slowClients).map { _ in Trickler(port: guarded.port, reconnectAfter: 1) }
for trickler in tricklers { trickler.start() }
let connectBy = Date().addingTimeInterval(20)
while Date() < connectBy && !tricklers.allSatisfy({ $0.connections > 0 }) { Thread.sleep(forTimeInterval: 0.01) }
let beside = freshConnectionHealth()
for trickler in tricklers { trickler.stop() }
slowRow(settings.slowClients, beside)
let visits = tricklers.flatMap(\.visits)
print(String(format: "ratio with / without: req/s %.2f, p99 %.2f; slow connections closed by the server: %d, answered: %d",
             beside.perSecond / alone.perSecond, beside.percentile(0.99) / alone.percentile(0.99),
             visits.filter(\.closedByServer).count, visits.filter(\.answered).count))
guarded.stop()
