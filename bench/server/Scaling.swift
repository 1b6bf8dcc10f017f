import ExpenseTestSupport
import Foundation
import Postgres
import Synchronization

/// `bench-server --postgres`: creates with many clients on SQLite (one
/// process, direct) beside PostgreSQL (one process direct, then 1, 2 and 4
/// processes behind HAProxy), all on one durable PostgreSQL cluster of the
/// run's own, and PostgreSQL's WAL-flush bound measured in the same run:
/// one-row INSERTs, each its own commit, from as many connections as there
/// are clients. Each creates/s is printed as a ratio of that bound.
struct Scaling {
    let settings: Settings
    let scratch = TemporaryDirectory(prefix: "bench-scaling")
    let clients: Int
    /// Each server process's CPU budget, when `--server-cpu` gives one.
    let quota: CPUQuota?

    init(_ settings: Settings) throws {
        self.settings = settings
        clients = settings.scalingClients
        quota = try settings.serverCPU.map { try CPUQuota(fraction: $0) }
    }

    func report() throws {
        defer { quota?.release() }
        print("expense-server on PostgreSQL and SQLite: \(clients) clients, one user each, \(settings.seconds) s per row")
        if let quota {
            print("each server process held to \(quota.fraction) of a core (a cgroup cpu quota of its own), standing for a machine of its own")
        }
        print("server: \(settings.server)")
        print("machine: \(ProcessInfo.processInfo.activeProcessorCount) cores; \(Self.load())")
        print("busiest processes before: \(Self.busiest())")
        let cluster = try PostgresCluster(name: "bench", durable: true, settings: ["max_connections": "300"])
        let version = try Connection(cluster.url(database: "postgres")).serverVersion
        print("PostgreSQL \(version / 10000).\(version % 10000), fsync on, synchronous_commit on, data in \(cluster.dataDirectory)")
        print("")

        print("WAL-flush bound: INSERT of one ~300-byte row per transaction (autocommit)")
        print("connections   commits/s   p50 ms   p99 ms")
        let bounds = try [1, clients].map { connections -> (Int, Measurement) in
            let m = try commits(cluster, connections: connections)
            print(String(format: "%-12d %10.0f %8.2f %8.2f", connections, m.perSecond, m.percentile(0.5), m.percentile(0.99)))
            return (connections, m)
        }
        let bound = bounds.last!.1.perSecond
        print("")

        print("creates: POST /v1/expenses, \(createBody.count)-byte body, fresh key, durable commit; ratio = creates/s ÷ \(clients)-connection commits/s")
        print("storage      processes  path      users  creates/s   p50 ms   p99 ms  errors   ratio   CPU µs per create: server postgres haproxy client")
        let sqlite = try ServerProcess(dataDirectory: scratch.at("sqlite"), arguments: ["--max-connections", "512"],
                                       executable: settings.server, outputDirectory: scratch.path)
        try quota?.confine(sqlite.child.pid)
        let sqliteTokens = try users(dataDirectory: sqlite.dataDirectory, database: nil)
        let alone = CPUGroups(servers: [sqlite.child.pid], postmaster: nil, balancer: nil)
        row("SQLite", 1, "direct", sqliteTokens.count, alone, bound) { measureCreates(clients: clients, seconds: settings.seconds, port: sqlite.port, tokens: sqliteTokens) }
        row("SQLite", 1, "direct", 1, alone, bound) { measureCreates(clients: clients, seconds: settings.seconds, port: sqlite.port, tokens: [sqlite.token]) }

        var last: (ServerCluster, CPUGroups)?
        for processes in settings.processes {
            let servers = try ServerCluster(processes: processes, database: try cluster.makeDatabase(),
                                            arguments: ["--max-connections", "512"], executable: settings.server)
            for index in 0..<processes { try quota?.confine(try servers.process(index).child.pid) }
            let tokens = try users(dataDirectory: servers.directory.at("users"), database: servers.storage.database)
            let groups = CPUGroups(servers: try (0..<processes).map { try servers.process($0).child.pid }, postmaster: cluster.pid,
                                   balancer: servers.balancer.pid)
            if processes == 1 {
                let direct = try servers.process(0)
                row("PostgreSQL", 1, "direct", tokens.count, groups, bound) {
                    measureCreates(clients: clients, seconds: settings.seconds, port: direct.port, tokens: tokens)
                }
            }
            row("PostgreSQL", processes, "HAProxy", tokens.count, groups, bound) {
                measureCreates(clients: clients, seconds: settings.seconds, port: servers.balancer.port, tokens: tokens)
            }
            last = (servers, groups)
        }
        if let (servers, groups) = last {
            // One user: that user's writes commit one after another (the feed's order).
            row("PostgreSQL", servers.ports.count, "HAProxy", 1, groups, bound) {
                measureCreates(clients: clients, seconds: settings.seconds, port: servers.balancer.port, tokens: [servers.token])
            }
        }
        print("")

        print("receipts: PUT /v1/expenses/{id}/receipt, \(settings.receiptClients) clients, one process, direct")
        print("storage      size        uploads/s   MiB/s    p50 ms   p99 ms   errors")
        let postgresOne = try ServerCluster(processes: 1, database: try cluster.makeDatabase(), startBalancer: false)
        try quota?.confine(try postgresOne.process(0).child.pid)
        for size in [200 << 10, 10 << 20] {
            for (name, port, token) in [("SQLite", sqlite.port, sqlite.token), ("PostgreSQL", try postgresOne.process(0).port, postgresOne.token)] {
                let m = measureUploads(size: size, clients: settings.receiptClients, seconds: settings.seconds, port: port, token: token)
                print(name.padding(toLength: 12, withPad: " ", startingAt: 0) + " " + sizeLabel(size).padding(toLength: 10, withPad: " ", startingAt: 0)
                      + String(format: " %10.1f %8.1f  %8.2f %8.2f   %d", m.perSecond, m.mibPerSecond, m.percentile(0.5), m.percentile(0.99), m.failures))
            }
        }
        print("")
        print("pg_test_fsync, 1 s per test, on the cluster's file system: \(try fsyncRate(cluster))")
        print("busiest processes after: \(Self.busiest())")
        print("machine after: \(Self.load())")
        sqlite.stop()
    }

    /// Runs `measure`, and prints its figures with the CPU each group of
    /// processes spent per create meanwhile.
    private func row(_ storage: String, _ processes: Int, _ path: String, _ users: Int, _ groups: CPUGroups, _ bound: Double,
                     _ measure: () -> Measurement) {
        let before = groups.sample()
        let m = measure()
        let spent = zip(groups.sample(), before).map { ($0 - $1) / Double(max(1, m.requests)) * 1e6 }
        print(storage.padding(toLength: 12, withPad: " ", startingAt: 0) + String(format: " %-10d ", processes)
              + path.padding(toLength: 9, withPad: " ", startingAt: 0)
              + String(format: " %-6d %9.0f %8.2f %8.2f  %6d   %5.2f   %6.0f %8.0f %7.0f %6.0f",
                       users, m.perSecond, m.percentile(0.5), m.percentile(0.99), m.failures, m.perSecond / bound,
                       spent[0], spent[1], spent[2], spent[3]))
    }

    /// One user per client: `user add` for each, as the server's own command does it.
    private func users(dataDirectory: String, database: String?) throws -> [String] {
        try (0..<clients).map { n in
            try ServerProcess.addUser("bench\(n)", dataDirectory: dataDirectory, database: database, executable: settings.server)
        }
    }

    /// One-row INSERTs, each its own transaction, from `connections` at once.
    private func commits(_ cluster: PostgresCluster, connections: Int) throws -> Measurement {
        let url = try cluster.makeDatabase()
        try Connection(url).execute("CREATE TABLE bench_commit (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, body text NOT NULL)")
        let body = String(decoding: createBody, as: UTF8.self)
        return run(clients: connections, seconds: settings.seconds, connect: { try Connection(url) }) { db, _, _ in
            let (changed, ns) = try timed { try db.execute("INSERT INTO bench_commit (body) VALUES ($1)", [.text(body)]) }
            return changed == 1 ? (createBody.count, ns) : nil
        }
    }

    /// pg_test_fsync's `fdatasync` line for one 8 kB write: the rate of
    /// flushes one after another (PostgreSQL's `wal_sync_method` on Linux).
    private func fsyncRate(_ cluster: PostgresCluster) throws -> String {
        let result = try cluster.run("pg_test_fsync", ["-s", "1", "-f", "\(cluster.directory.path)/pg_test_fsync.out"], timeout: 120)
        let line = result.stdout.split(separator: "\n").first { $0.contains("fdatasync") && $0.contains("ops/sec") }
        return line.map { $0.split(separator: " ", omittingEmptySubsequences: true).joined(separator: " ") } ?? "(no fdatasync line)"
    }

    static func load() -> String {
        "load average " + ((try? String(contentsOfFile: "/proc/loadavg", encoding: .utf8)) ?? "?")
            .split(separator: " ").prefix(3).joined(separator: " ")
    }

    /// The five processes using most CPU since they started, as `ps` sees them.
    static func busiest() -> String {
        guard let result = try? runCommand("/bin/ps", ["-eo", "pcpu,comm", "--sort=-pcpu", "--no-headers"]) else { return "?" }
        return result.stdout.split(separator: "\n").prefix(5)
            .map { $0.split(separator: " ", omittingEmptySubsequences: true).joined(separator: " ") }.joined(separator: ", ")
    }
}

/// The processes of a run whose CPU time is counted: the servers, PostgreSQL
/// (the postmaster and its children), HAProxy, and this benchmark.
struct CPUGroups {
    let servers: [Int32]
    let postmaster: Int32?
    let balancer: Int32?

    /// CPU seconds so far of each group, in that order.
    func sample() -> [Double] {
        let postgres = postmaster.map { [$0] + Self.children(of: $0) } ?? []
        return [servers, postgres, balancer.map { [$0] } ?? [], [getpid()]].map { pids in
            pids.reduce(0) { $0 + ((try? cpuSeconds($1)) ?? 0) }
        }
    }

    /// Processes whose parent is `pid`, from `/proc/*/stat` (the field after the state).
    static func children(of pid: Int32) -> [Int32] {
        ((try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []).compactMap { name -> Int32? in
            guard let child = Int32(name), let stat = try? String(contentsOfFile: "/proc/\(name)/stat", encoding: .utf8),
                  let fields = stat.split(separator: ")").last?.split(separator: " "), fields.count > 2,
                  Int32(fields[1]) == pid else { return nil }
            return child
        }
    }
}
