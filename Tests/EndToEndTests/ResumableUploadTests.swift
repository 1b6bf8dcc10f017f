import Digest
import ExpenseCore
import ExpenseTestSupport
import Foundation
import SQLite
import Testing

/// Large receipts as resumable uploads (docs/sync.md, "Resumable
/// uploads"), through a link that drops, a daemon killed mid-upload, a
/// server that refuses the size, and an expense deleted while its upload
/// waits.
@Suite struct ResumableUploadTests {
    /// A daemon sending through `proxy` to its own server; receipts are
    /// not read (a PDF of filler has nothing to read).
    static func harness(through proxy: CuttingProxy, _ arguments: [String] = [], serverArguments: [String] = []) throws -> SyncHarness {
        let sync = try SyncHarness(daemonArguments: ["--server", proxy.url, "--reading", "off", "--request-timeout", "30s"] + arguments,
                                   serverArguments: serverArguments)
        proxy.target = sync.port
        try sync.daemon.start()
        return sync
    }

    /// Adds an expense with `bytes` as its receipt (a PDF goes as it is).
    static func add(_ sync: SyncHarness, _ bytes: [UInt8], name: String = "scan.pdf", daemon: DaemonHarness? = nil) throws -> String {
        let daemon = daemon ?? sync.daemon
        let file = daemon.directory.at(name)
        SampleReceipt.write(bytes, to: file)
        return try daemon.ctl(["add", "--receipt", file, "--merchant", "Rail", "--amount", "84.20", "--currency", "EUR",
                               "--date", "2026-11-29"]).stdout.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// A PDF of `size` bytes, complete in its structure, its bytes its own.
    static func scan(_ sync: SyncHarness, tag: Int, size: Int) throws -> [UInt8] {
        try WholeReceipts(directory: sync.daemon.directory.at("whole")).pdf(tag: tag, size: size)
    }

    static func serverReceipt(_ sync: SyncHarness, _ id: String) throws -> [UInt8]? {
        let answer = try sync.serverRequest("GET", "/v1/expenses/\(id)/receipt")
        return answer.status == 200 ? answer.body : nil
    }

    static func serverUploads(_ sync: SyncHarness) throws -> [(id: String, offset: Int64)] {
        let db = try Connection(path: "\(sync.serverData)/expense-server.db")
        return try db.query("SELECT id, upload_offset FROM uploads ORDER BY id") { ($0.string(0), $0.int64(1)) }
    }

    static func jobs(_ sync: SyncHarness, _ id: String, daemon: DaemonHarness? = nil) throws -> [JSONValue] {
        try (daemon ?? sync.daemon).ctlJSON(["show", id])["jobs"]?.arrayValue ?? []
    }

    @Test func aTwentyMiBScan_overALinkCutEvery512KiB_arrivesWhole_sendingAtMostAQuarterMore_whereAPutNeverArrives() throws {
        let proxy = try CuttingProxy(mode: .cut(after: 512 << 10))
        defer { proxy.stop() }
        let sync = try Self.harness(through: proxy)
        defer { sync.daemon.stop() }
        let scan = try Self.scan(sync, tag: 1, size: 20 << 20)
        let id = try Self.add(sync, scan)
        try sync.waitUntilDrained(timeout: 240)
        let stored = try #require(try Self.serverReceipt(sync, id))
        #expect(SHA256.hash(stored) == SHA256.hash(scan))
        #expect(stored.count == scan.count)
        let ratio = Double(proxy.bytesFromClients) / Double(scan.count)
        #expect(ratio <= 1.25, "sent \(proxy.bytesFromClients) bytes for \(scan.count): \(ratio)")
        #expect(proxy.cuts >= 39, "the link was cut \(proxy.cuts) times")
        #expect(try Self.serverUploads(sync).isEmpty)

        // The same scan as a plain PUT, through the same link: every try
        // is cut, none arrives; the job waits, counting no attempt.
        let plain = sync.secondDevice(["--server", proxy.url, "--reading", "off", "--request-timeout", "30s",
                                       "--resumable-upload-min-bytes", "never"])
        try plain.start()
        defer { plain.stop() }
        let other = try Self.scan(sync, tag: 2, size: 20 << 20)
        let cutsBefore = proxy.cuts
        let second = try Self.add(sync, other, name: "other.pdf", daemon: plain)
        try waitUntil(timeout: 120, "three PUTs of the scan cut") {
            let waiting = try Self.jobs(sync, second, daemon: plain).contains { $0["kind"] == "receipt" && $0["last_error_class"] == "transport" }
            return proxy.cuts >= cutsBefore + 3 && waiting
        }
        #expect(try Self.serverReceipt(sync, second) == nil)
        #expect(try Self.jobs(sync, second, daemon: plain).contains { $0["kind"] == "receipt" && $0["attempts"] == 0 })
    }

    @Test func daemonKilledMidUpload_resumesFromTheServersOffset_neverFromZero() throws {
        let proxy = try CuttingProxy(mode: .hold(after: 3 << 20))
        defer { proxy.stop() }
        let sync = try Self.harness(through: proxy)
        defer { sync.daemon.stop() }
        let scan = try Self.scan(sync, tag: 3, size: 8 << 20)
        let id = try Self.add(sync, scan)
        // The upload is made and recorded, and its bytes flow until the
        // link holds them: the daemon dies there.
        try waitUntil(timeout: 60, "the link to hold the upload") { proxy.holds >= 1 }
        let recorded = try #require(try Self.jobs(sync, id).first { $0["kind"] == "receipt" })
        #expect(recorded["state"] == "sending")
        sync.daemon.crash()
        _ = sync.daemon.process?.waitForExit(timeout: 20)
        // The server keeps what arrived once the connection is gone.
        try waitUntil(timeout: 30, "the server to keep the bytes of the cut append") {
            (try Self.serverUploads(sync)).first.map { $0.offset > 0 } ?? false
        }
        let held = try #require(try Self.serverUploads(sync).first?.offset)
        #expect(held > 1 << 20)
        let sentBefore = proxy.bytesFromClients
        proxy.mode = .clean
        try sync.daemon.start()
        try sync.waitUntilDrained(timeout: 120)
        let stored = try #require(try Self.serverReceipt(sync, id))
        #expect(SHA256.hash(stored) == SHA256.hash(scan))
        // After the restart only the rest went, plus requests' heads.
        let resent = proxy.bytesFromClients - sentBefore
        #expect(resent <= scan.count - Int(held) + (64 << 10), "resent \(resent) bytes; the server held \(held) of \(scan.count)")
        #expect(try Self.serverUploads(sync).isEmpty)
        #expect(try sync.serverExpenses().count == 1)
    }

    @Test func aReceiptOverTheServersLimit_needsAttentionAtOnce_withTheLimit() throws {
        let proxy = try CuttingProxy()
        defer { proxy.stop() }
        let sync = try Self.harness(through: proxy, serverArguments: ["--receipt-max-bytes", "3145728"])
        defer { sync.daemon.stop() }
        let id = try Self.add(sync, try Self.scan(sync, tag: 4, size: 4 << 20))
        try waitUntil(timeout: 60, "the upload to need attention") {
            try Self.jobs(sync, id).contains { $0["kind"] == "receipt" && $0["state"] == "needs_attention" }
        }
        let job = try #require(try Self.jobs(sync, id).first { $0["kind"] == "receipt" })
        #expect(job["last_error_class"] == "too_large")
        #expect(job["last_error"]?.stringValue?.contains("3145728 bytes (3 MiB)") == true, "\(job)")
        #expect(job["attempts"] == 1)
        #expect(try Self.serverUploads(sync).isEmpty)
    }

    @Test func anExpenseDeletedWhileItsUploadWaits_cancelsTheUploadOnTheServer() throws {
        let proxy = try CuttingProxy(mode: .cut(after: 1 << 20))
        defer { proxy.stop() }
        let sync = try Self.harness(through: proxy)
        defer { sync.daemon.stop() }
        let id = try Self.add(sync, try Self.scan(sync, tag: 5, size: 6 << 20))
        // Some of it is there; then the link goes down and the job waits.
        try waitUntil(timeout: 60, "part of the upload on the server") {
            (try Self.serverUploads(sync)).first.map { $0.offset > 0 } ?? false
        }
        proxy.mode = .down
        try waitUntil(timeout: 60, "the upload to wait for the link") {
            try Self.jobs(sync, id).contains { $0["kind"] == "receipt" && $0["state"] == "queued" && $0["last_error_class"] == "transport" }
        }
        #expect(try Self.serverUploads(sync).count == 1)
        _ = try sync.daemon.ctl(["delete", id])
        proxy.mode = .clean
        try sync.waitUntilDrained(timeout: 60)
        do {
            try waitUntil(timeout: 30, "the upload to be cancelled on the server") { try Self.serverUploads(sync).isEmpty }
        } catch {
            let db = try Connection(path: "\(sync.daemon.stateDirectory)/expensed.db")
            let listed = try db.query("SELECT url, account FROM upload_cancellations") { "\($0.string(0)) \($0.string(1))" }
            let jobs = try db.query("SELECT kind, state, upload_url FROM jobs") { "\($0.string(0)) \($0.string(1)) \($0.optionalString(2) ?? "-")" }
            Issue.record("listed: \(listed) jobs: \(jobs)")
            Issue.record("\(error)\ndaemon:\n\(sync.daemon.log.suffix(6000))\nserver:\n\(sync.accessLog().suffix(40).map { $0.joined(separator: " ") }.joined(separator: "\n"))")
            throw error
        }
        #expect(try sync.serverExpenses().first?.deleted == true)
        #expect(try Self.serverReceipt(sync, id) == nil)
        let db = try Connection(path: "\(sync.daemon.stateDirectory)/expensed.db")
        #expect(try db.scalarInt("SELECT count(*) FROM upload_cancellations") == 0)
    }

    /// A backend that knows nothing of resumable uploads answers the
    /// creation `405`: the receipt goes as one `PUT`, and the next large
    /// receipt goes straight as a `PUT`.
    @Test func aServerWithoutResumableUploads_getsThePlainPut_andIsNotAskedAgain() throws {
        let server = try LoopbackHTTPServer { request in
            let path = request.path
            if request.method == "GET" { return .respond(status: 200, headers: [:], body: Array(#"{"expenses":[],"next_cursor":"0","has_more":false}"#.utf8)) }
            if request.method == "POST" && path == "/v1/expenses" { return SyncTests.created(request) }
            guard path.hasPrefix("/v1/expenses/"), path.hasSuffix("/receipt") else { return .respond(status: 404, headers: [:], body: []) }
            if request.method != "PUT" {
                return .respond(status: 405, headers: ["Allow": "GET, HEAD, PUT", "Content-Type": "application/json"],
                                body: Array(#"{"error":{"code":"method_not_allowed","message":"POST is not allowed here"}}"#.utf8))
            }
            let id = String(path.dropFirst("/v1/expenses/".count).dropLast("/receipt".count))
            let expense: JSONValue = ["transaction_id": .string(id), "client_id": "c", "merchant": "Rail", "version": 2,
                                      "receipt_url": .string("/v1/expenses/\(id)/receipt"),
                                      "created_at": "2026-11-30T00:00:00.000Z", "updated_at": "2026-11-30T00:00:00.000Z"]
            return .respond(status: 200, headers: ["Content-Type": "application/json"], body: expense.serializedBytes())
        }
        defer { server.stop() }
        let daemon = try SyncTests.daemon(sendingTo: server, ["--reading", "off", "--drain-interval", "100ms", "--backoff-base", "10ms",
                                                              "--resumable-upload-min-bytes", "1M"])
        defer { daemon.stop() }
        let whole = try WholeReceipts(directory: daemon.directory.at("whole"))
        var scans: [[UInt8]] = []
        for n in 0..<2 {
            let scan = whole.pdf(tag: 10 + n, size: (2 << 20) + n)
            scans.append(scan)
            let file = daemon.directory.at("scan-\(n).pdf")
            SampleReceipt.write(scan, to: file)
            _ = try daemon.ctl(["add", "--receipt", file, "--merchant", "Rail", "--amount", "1.00", "--currency", "EUR", "--date", "2026-11-29"])
            try daemon.waitForQueue("receipt \(n) sent")
        }
        let receiptRequests = server.requests.filter { $0.path.hasSuffix("/receipt") }
        #expect(receiptRequests.map(\.method) == ["POST", "PUT", "PUT"], "\(receiptRequests.map(\.method))")
        let puts = receiptRequests.filter { $0.method == "PUT" }
        #expect(puts.map { SHA256.hash($0.body) } == scans.map { SHA256.hash($0) })
    }

    /// Three server processes on one PostgreSQL database behind HAProxy:
    /// the process receiving the upload's bytes is killed mid-append; the
    /// daemon asks another where the upload is (the bytes committed before,
    /// from a cut, are there; the killed append's are not) and completes it
    /// there: one receipt, byte-identical, no upload left.
    @Test func serverProcessKilledMidAppend_behindHAProxy_anotherProcessCompletesIt() throws {
        let cluster = try ServerCluster(processes: 3)
        SampleReceipt.write(Array((cluster.token + "\n").utf8), to: cluster.directory.at("token"))
        let proxy = try CuttingProxy(mode: .cut(after: 1 << 20))
        defer { proxy.stop() }
        proxy.target = cluster.balancerPort
        let daemon = DaemonHarness(arguments: [
            "--server", proxy.url, "--token-file", cluster.directory.at("token"), "--reading", "off",
            "--drain-interval", "200ms", "--backoff-base", "50ms", "--backoff-cap", "1s",
            "--connect-timeout", "2s", "--request-timeout", "30s",
        ])
        try daemon.start()
        defer { daemon.stop() }
        let scan = try WholeReceipts(directory: daemon.directory.at("whole")).pdf(tag: 20, size: 8 << 20)
        let file = daemon.directory.at("scan.pdf")
        SampleReceipt.write(scan, to: file)
        let id = try daemon.ctl(["add", "--receipt", file, "--merchant", "Rail", "--amount", "84.20", "--currency", "EUR",
                                 "--date", "2026-11-29"]).stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        // One cut: the first MiB is committed. Then the link holds an
        // append mid-body, on whichever process HAProxy chose.
        try waitUntil(timeout: 60, "a committed part of the upload") {
            (try cluster.storage.scalar("SELECT coalesce(max(upload_offset), 0) FROM uploads") ?? 0) > 0
        }
        proxy.mode = .hold(after: 3 << 20)
        var receiving: Int?
        try waitUntil(timeout: 60, "a process to be receiving an append") {
            receiving = (0..<3).first { index in
                let staging = cluster.directory.at("staging-\(index)") + "/tmp"
                let parts = (try? FileManager.default.contentsOfDirectory(atPath: staging)) ?? []
                return parts.contains { name in
                    name.hasSuffix(".part") && ((try? FileManager.default.attributesOfItem(atPath: "\(staging)/\(name)")[.size] as? Int) ?? 0) >= 1 << 20
                }
            }
            return receiving != nil
        }
        let committed = try #require(try cluster.storage.scalar("SELECT max(upload_offset) FROM uploads"))
        cluster.crash(try #require(receiving))
        proxy.mode = .clean
        try daemon.waitForQueue(timeout: 120)
        #expect(try cluster.storage.receiptDigestsByTransaction() == [id: Hex.encode(SHA256.hash(scan))])
        #expect(try cluster.storage.scalar("SELECT count(*) FROM receipts") == 1)
        #expect(try cluster.storage.scalar("SELECT count(*) FROM uploads") == 0)
        #expect(try cluster.storage.scalar("SELECT count(*) FROM upload_parts") == 0)
        // HAProxy drops what it still buffered of a request whose client
        // went: the cut committed what reached the process, some KiB.
        #expect(committed > 0 && committed < 3 << 20, "committed before the kill: \(committed)")
    }

    /// A job whose recorded upload is on another server (the configured
    /// URL changed since) never asks that server, whose host would get the
    /// token: the upload starts again on the configured one.
    @Test func anUploadRecordedOnAnotherServer_isNeverAskedAbout() throws {
        let elsewhere = try LoopbackHTTPServer { _ in .respond(status: 204, headers: ["Upload-Offset": "0"], body: []) }
        defer { elsewhere.stop() }
        let sync = try SyncHarness(daemonArguments: ["--reading", "off"], startServer: false)
        try sync.daemon.start()
        let scan = try Self.scan(sync, tag: 30, size: 3 << 20)
        let id = try Self.add(sync, scan)
        #expect(sync.daemon.stop() == 0)
        let db = try Connection(path: "\(sync.daemon.stateDirectory)/expensed.db")
        try db.execute("UPDATE jobs SET upload_url = ?, upload_offset = 1024 WHERE kind = 'receipt'",
                       [.text("\(elsewhere.baseURL)/v1/uploads/\(String(repeating: "ab", count: 16))")])
        #expect(db.changes == 1)
        try sync.startServer()
        try sync.daemon.start()
        defer { sync.daemon.stop() }
        try sync.waitUntilDrained(timeout: 60)
        #expect(try Self.serverReceipt(sync, id) == scan)
        #expect(elsewhere.requests.map { "\($0.method) \($0.path)" } == [])
    }
}
