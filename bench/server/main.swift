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
// With --postgres: creates with 32 clients on SQLite (one process) beside
// PostgreSQL with 1, 2 and 4 processes behind HAProxy, each as a ratio of
// PostgreSQL's WAL-flush bound measured in the same run (Scaling.swift).
//
// With --web: the web interface's list page for a user with 100,000
// expenses, and the export's rows per second beside sqlite3 -csv (Web.swift).
//
// Usage: bench-server [--server PATH] [--seconds S] [--clients 1,8,32] [--receipt-clients N] [--slow-clients N]
//        bench-server --postgres [--server PATH] [--seconds S] [--scaling-clients N] [--processes 1,2,4] [--server-cpu FRACTION]
//        bench-server --web [--server PATH] [--seconds S]
import ExpenseTestSupport
import Foundation

struct Settings {
    var server = BuiltProducts.packageRoot + "/.build/release/expense-server"
    var seconds = 5.0
    var clients = [1, 8, 32]
    var receiptClients = 4
    var slowClients = 64
    var postgres = false
    var web = false
    var scalingClients = 32
    var processes = [1, 2, 4]
    var serverCPU: Double?

    static let usage = """
        usage: bench-server [--server PATH] [--seconds S] [--clients 1,8,32] [--receipt-clients N] [--slow-clients N]
               bench-server --postgres [--server PATH] [--seconds S] [--scaling-clients N] [--processes 1,2,4] [--server-cpu FRACTION]
               bench-server --web [--server PATH] [--seconds S]
        """

    init(_ arguments: [String]) {
        var it = arguments.makeIterator()
        while let argument = it.next() {
            switch argument {
            case "--server": server = it.next() ?? server
            case "--seconds": seconds = it.next().flatMap(Double.init) ?? seconds
            case "--clients": clients = (it.next() ?? "").split(separator: ",").compactMap { Int($0) }
            case "--receipt-clients": receiptClients = it.next().flatMap(Int.init) ?? receiptClients
            case "--slow-clients": slowClients = it.next().flatMap(Int.init) ?? slowClients
            case "--postgres": postgres = true
            case "--web": web = true
            case "--scaling-clients": scalingClients = it.next().flatMap(Int.init) ?? scalingClients
            case "--processes": processes = (it.next() ?? "").split(separator: ",").compactMap { Int($0) }
            case "--server-cpu":
                guard let value = it.next().flatMap(Double.init) else { print("bench-server: --server-cpu needs a fraction of a core"); exit(64) }
                serverCPU = value
            case "--help", "-h":
                print(Self.usage)
                exit(0)
            default:
                FileHandle.standardError.write(Data("bench-server: unknown argument '\(argument)'\n\(Self.usage)\n".utf8))
                exit(64)
            }
        }
    }
}

let settings = Settings(Array(CommandLine.arguments.dropFirst()))
guard FileManager.default.isExecutableFile(atPath: settings.server) else {
    print("bench-server: no server at \(settings.server); run 'swift build -c release' first")
    exit(1)
}
if settings.postgres {
    try Scaling(settings).report()
    exit(0)
}
if settings.web {
    try WebBench(settings: settings).report()
    exit(0)
}
let scratch = TemporaryDirectory(prefix: "bench-server")
let server = try ServerProcess(dataDirectory: scratch.at("data"), arguments: ["--max-connections", "512"],
                               executable: settings.server, outputDirectory: scratch.path)

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
    row(clients, "POST /v1/expenses", measureCreates(clients: clients, seconds: settings.seconds, port: server.port, tokens: [server.token]))
}

print("")
print("receipts: PUT /v1/expenses/{id}/receipt (PNG bytes, Repr-Digest checked, file fsynced and renamed, row committed)")
print("clients  size        uploads/s   MiB/s    p50 ms   p99 ms   errors")
for size in [200 << 10, 10 << 20] {
    let m = measureUploads(size: size, clients: settings.receiptClients, seconds: settings.seconds, port: server.port, token: server.token)
    print(String(format: "%-8d ", settings.receiptClients) + sizeLabel(size).padding(toLength: 10, withPad: " ", startingAt: 0)
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
