import ExpenseCore
import ExpenseTestSupport
import Foundation
import SQLite
import Testing

/// Offline edits and deletes: coalesced in the outbox, folded into reads,
/// conflicts flagged. Counts come from the server's own access log.
@Suite struct OfflineEditTests {
    /// The outbox as (kind, state) pairs, oldest first.
    static func outbox(_ daemon: DaemonHarness) throws -> [(String, String)] {
        let db = try Connection(path: "\(daemon.stateDirectory)/expensed.db")
        return try db.query("SELECT kind, state FROM jobs ORDER BY seq") { ($0.string(0), $0.string(1)) }
    }

    static func payloads(_ daemon: DaemonHarness) throws -> [JSONValue] {
        let db = try Connection(path: "\(daemon.stateDirectory)/expensed.db")
        return try db.query("SELECT payload FROM jobs ORDER BY seq") { try JSONValue.parse(Array($0.string(0).utf8)) }
    }

    /// Requests of `method` the server logged, not counting listings;
    /// waits for `awaiting` of them to be logged (``SyncHarness/accessLog(awaiting:timeout:_:)``).
    static func requests(_ sync: SyncHarness, _ method: String, awaiting: Int = 0) -> Int {
        sync.accessLog(awaiting: awaiting) { $0.first == method && !($0.count > 1 && $0[1].hasPrefix("/v1/expenses?")) }.count
    }

    static func add(_ daemon: DaemonHarness, merchant: String = "Blue Bottle", amount: String = "12.50", currency: String = "EUR") throws -> String {
        let result = try daemon.ctl(["add", "--merchant", merchant, "--amount", amount, "--currency", currency, "--date", "2026-11-29"])
        guard result.status == 0 else { throw TestFailure("add: \(result.stderr)") }
        return result.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    static func edit(_ daemon: DaemonHarness, _ id: String, _ arguments: [String]) throws {
        let result = try daemon.ctl(["edit", id] + arguments)
        guard result.status == 0 else { throw TestFailure("edit: \(result.stderr)") }
    }

    /// The server's version of an expense.
    static func serverExpense(_ sync: SyncHarness, _ id: String) throws -> JSONValue {
        try JSONValue.parse(try sync.serverRequest("GET", "/v1/expenses/\(id)").body)
    }

    /// Starts the daemon queueing only (`--server none`): no attempt can be
    /// in flight, so what the user does meets a create that never left.
    static func startQueueingOnly(_ sync: SyncHarness) throws {
        sync.daemon.arguments += ["--server", "none"]
        try sync.daemon.start()
    }

    /// Restarts the daemon with its server (and starts that server).
    static func goOnline(_ sync: SyncHarness) throws {
        sync.daemon.stop()
        sync.daemon.arguments.removeLast(2)
        try sync.daemon.start()
        try sync.startServer()
    }

    @Test func editsOfANeverSentCreate_mergeIntoIt() throws {
        let sync = try SyncHarness(startServer: false)
        try Self.startQueueingOnly(sync)
        defer { sync.daemon.stop() }
        let id = try Self.add(sync.daemon)
        try Self.edit(sync.daemon, id, ["--amount", "13.00"])
        try Self.edit(sync.daemon, id, ["--comment", "team lunch"])
        #expect(try Self.outbox(sync.daemon).map(\.0) == ["create"])
        let shown = try sync.daemon.ctlJSON(["show", id])
        #expect(shown["amount"] == "13.00")
        #expect(shown["comment"] == "team lunch")
        #expect(shown["state"] == "queued")

        try Self.goOnline(sync)
        try sync.waitUntilDrained()
        #expect(Self.requests(sync, "POST", awaiting: 1) == 1)
        #expect(Self.requests(sync, "PATCH") == 0)
        let server = try Self.serverExpense(sync, id)
        #expect(server["amount"] == "13.00")
        #expect(server["comment"] == "team lunch")
        #expect(server["version"] == 1)
    }

    @Test func threeEditsOffline_costOneRequest() throws {
        let sync = try SyncHarness()
        try sync.daemon.start()
        defer { sync.daemon.stop() }
        let id = try Self.add(sync.daemon)
        try sync.waitUntilDrained()
        // Offline: a daemon that only queues, so no edit is in flight when
        // the next comes (a send that fails for the transport would be).
        sync.daemon.stop()
        sync.stopServer()
        try Self.startQueueingOnly(sync)
        try Self.edit(sync.daemon, id, ["--amount", "13.00"])
        try Self.edit(sync.daemon, id, ["--comment", "with the team"])
        try Self.edit(sync.daemon, id, ["--amount", "14.00", "--category", "Meals"])
        #expect(try Self.outbox(sync.daemon).map(\.0) == ["edit"])
        #expect(try Self.payloads(sync.daemon)[0]["base_version"] == 1)
        let listed = try sync.daemon.ctlJSON(["list"]).arrayValue?.first
        #expect(listed?["amount"] == "14.00", "reads fold the pending edit")
        #expect(listed?["pending_fields"] == ["amount", "category", "comment"])

        try Self.goOnline(sync)
        try sync.waitUntilDrained()
        #expect(Self.requests(sync, "PATCH", awaiting: 1) == 1)
        let server = try Self.serverExpense(sync, id)
        #expect(server["amount"] == "14.00")
        #expect(server["comment"] == "with the team")
        #expect(server["category"] == "Meals")
        #expect(server["version"] == 2)
        #expect(try sync.daemon.list().first?["pending_fields"] == [])
    }

    @Test func createReceiptEditDeleteOffline_sendNothing() throws {
        let sync = try SyncHarness(startServer: false)
        try Self.startQueueingOnly(sync)
        defer { sync.daemon.stop() }
        let receipt = sync.daemon.directory.at("r.jpg")
        SampleReceipt.write(SampleReceipt.jpeg(), to: receipt)
        let id = try sync.daemon.ctl(["add", "--receipt", receipt, "--merchant", "Taxi"]).stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        try Self.edit(sync.daemon, id, ["--comment", "airport"])
        #expect(sync.daemon.receiptFiles().count == 1)
        let deleted = try sync.daemon.ctl(["delete", id])
        #expect(deleted.status == 0)
        #expect(deleted.stdout.contains("nothing is sent"))
        #expect(try Self.outbox(sync.daemon).isEmpty)
        #expect(sync.daemon.receiptFiles().isEmpty, "the receipt file is gone")
        #expect(try sync.daemon.list().isEmpty)

        try Self.goOnline(sync)
        #expect(try sync.daemon.ctl(["sync", "--wait", "--timeout", "20"]).status == 0)
        #expect(Self.writes(sync) == 0)
        #expect(try sync.serverExpenses().isEmpty)
    }

    /// Writes the server received (refreshes and reads aside).
    static func writes(_ sync: SyncHarness) -> Int {
        ["POST", "PUT", "PATCH", "DELETE"].map { requests(sync, $0) }.reduce(0, +)
    }

    /// Adds an expense while the server is down and waits until its create
    /// is claimed: `before-send` holds the attempt until the test releases
    /// it, and the attempt then finds no server.
    static func addWhileAnAttemptHangs(_ sync: SyncHarness, receipt: Bool) throws -> (id: String, hold: FaultHold) {
        let hold = try FaultHold("before-send", on: sync.daemon)
        try sync.daemon.start()
        var arguments = ["add", "--merchant", "Taxi", "--amount", "30.00", "--currency", "EUR", "--date", "2026-11-29"]
        if receipt {
            let file = sync.daemon.directory.at("r.jpg")
            SampleReceipt.write(SampleReceipt.jpeg(), to: file)
            arguments += ["--receipt", file]
        }
        let added = try sync.daemon.ctl(arguments)
        guard added.status == 0 else { throw TestFailure("add: \(added.stderr)") }
        let id = added.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        try waitUntil(timeout: 10, "the create to be claimed") { try Self.outbox(sync.daemon).first?.1 == "sending" }
        return (id, hold)
    }

    @Test func deleteWhileTheCreateIsOnItsWay_butNeverLeaves_sendsNothing() throws {
        let sync = try SyncHarness(startServer: false)
        let (id, hold) = try Self.addWhileAnAttemptHangs(sync, receipt: true)
        defer { sync.daemon.stop() }
        let deleted = try sync.daemon.ctl(["delete", id])
        #expect(deleted.status == 0)
        #expect(deleted.stdout.contains("delete queued"), "the create may reach the server: \(deleted.stdout)")
        #expect(try Self.outbox(sync.daemon).map(\.0) == ["create", "delete"])
        try hold.release(sync.daemon)

        try waitUntil(timeout: 20, "the attempt to fail and the chain to go") { try Self.outbox(sync.daemon).isEmpty }
        try sync.daemon.waitUntilNoReceiptFiles()
        #expect(try sync.daemon.list().isEmpty)
        #expect(sync.daemon.log.contains("Deleted before it reached the server"))

        try sync.startServer()
        #expect(try sync.daemon.ctl(["sync", "--wait", "--timeout", "20"]).status == 0)
        #expect(Self.writes(sync) == 0)
        #expect(try sync.serverExpenses().isEmpty)
    }

    @Test func editWhileTheCreateIsOnItsWay_butNeverLeaves_mergesIntoIt() throws {
        let sync = try SyncHarness(startServer: false)
        let (id, hold) = try Self.addWhileAnAttemptHangs(sync, receipt: false)
        defer { sync.daemon.stop() }
        try Self.edit(sync.daemon, id, ["--comment", "airport"])
        try Self.edit(sync.daemon, id, ["--amount", "31.00"])
        #expect(try Self.outbox(sync.daemon).map(\.0) == ["create", "edit"], "a create on its way is not rewritten")
        try hold.release(sync.daemon)

        try waitUntil(timeout: 20, "the attempt to fail and the edit to merge") { try Self.outbox(sync.daemon).map(\.0) == ["create"] }
        let payload = try Self.payloads(sync.daemon)[0]
        #expect(payload["fields"]?["comment"] == "airport")
        #expect(payload["fields"]?["amount"] == "31.00")

        try sync.startServer()
        try sync.waitUntilDrained()
        #expect(Self.requests(sync, "POST", awaiting: 1) == 1)
        #expect(Self.requests(sync, "PATCH") == 0)
        let server = try Self.serverExpense(sync, id)
        #expect(server["comment"] == "airport")
        #expect(server["amount"] == "31.00")
        #expect(server["version"] == 1)
    }

    @Test func deleteOfASyncedExpense_dropsQueuedEditsAndUploadsAndSendsOneDelete() throws {
        // Receipts are refused (too large) so the upload waits, needing
        // attention at once (a 413); edits back off for long: a job being sent when the delete comes is
        // not dropped (it may reach the server), so no pass may claim the
        // edit or the upload between the check below and the delete. Only
        // the requests of this test start passes.
        let sync = try SyncHarness(daemonArguments: ["--max-attempts", "50", "--drain-interval", "1h", "--backoff-base", "1h", "--backoff-cap", "1h"],
                                   serverArguments: ["--receipt-max-bytes", "100"])
        try sync.daemon.start()
        defer { sync.daemon.stop() }
        let receipt = sync.daemon.directory.at("r.jpg")
        SampleReceipt.write(SampleReceipt.jpeg(size: 4000), to: receipt)
        let id = try sync.daemon.ctl(["add", "--receipt", receipt, "--merchant", "Taxi"]).stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        try waitUntil(timeout: 20, "the create to apply and the upload to be refused") {
            try Self.outbox(sync.daemon).map(\.0) == ["receipt"] && Self.requests(sync, "PUT") >= 1
        }
        sync.stopServer()
        try Self.edit(sync.daemon, id, ["--comment", "moot"])
        // The edit's pass finds the server gone; then both wait, unsent.
        try waitUntil(timeout: 20, "the edit to be tried and to wait again") {
            try Self.outbox(sync.daemon).map { "\($0.0) \($0.1)" }.sorted() == ["edit queued", "receipt needs_attention"]
                && sync.daemon.request(["op": "status"])["result"]?["server"] == "unreachable"
        }
        _ = try sync.daemon.ctl(["delete", id])
        #expect(try Self.outbox(sync.daemon).map(\.0) == ["delete"], "edit and upload dropped, one delete queued")
        #expect(sync.daemon.receiptFiles().isEmpty)
        #expect(try sync.daemon.list().first?["state"] == "deleting")

        try sync.startServer()
        _ = try sync.daemon.ctl(["sync"])
        try sync.waitUntilDrained()
        #expect(Self.requests(sync, "DELETE", awaiting: 1) == 1)
        #expect(Self.requests(sync, "PATCH") == 0)
        #expect(try Self.serverExpense(sync, id)["deleted"] == true)
        #expect(try sync.daemon.list().isEmpty)
    }

    @Test func editWhileTheCreateIsSending_becomesANewJobAfterIt() throws {
        let sync = try SyncHarness()
        // The create's attempt holds before it is sent, as long as the test needs.
        let hold = try FaultHold("before-send", on: sync.daemon)
        try sync.daemon.start()
        defer { sync.daemon.stop() }
        let id = try Self.add(sync.daemon)
        try waitUntil(timeout: 10, "the create to be sending") { try Self.outbox(sync.daemon).first?.1 == "sending" }
        try Self.edit(sync.daemon, id, ["--amount", "99.00"])
        #expect(try Self.outbox(sync.daemon).map(\.0) == ["create", "edit"], "the create being sent was not rewritten")
        try hold.release(sync.daemon)
        try sync.waitUntilDrained(timeout: 30)
        #expect(Self.requests(sync, "POST", awaiting: 1) == 1)
        #expect(Self.requests(sync, "PATCH", awaiting: 1) == 1)
        let server = try Self.serverExpense(sync, id)
        #expect(server["amount"] == "99.00")
        #expect(server["version"] == 2)
    }

    @Test func conflict_secondDeviceGetsTheFlagAndResolvesIt() throws {
        let sync = try SyncHarness()
        let other = sync.secondDevice()
        try sync.daemon.start()
        try other.start()
        defer { sync.daemon.stop(); other.stop() }
        let id = try Self.add(sync.daemon)
        try sync.waitUntilDrained()
        #expect(try other.ctl(["sync", "--refresh", "--wait", "--timeout", "20"]).status == 0)
        try waitUntil(timeout: 10, "the other device to learn the expense") { try other.list().count == 1 }

        // Both edit the currency (and a safe field) while offline.
        sync.stopServer()
        try Self.edit(sync.daemon, id, ["--currency", "USD", "--merchant", "First"])
        try Self.edit(other, id, ["--currency", "GBP", "--merchant", "Second"])
        // The first device's edit must reach the server first. Both retry on
        // their own once it is back, so the other stays stopped (its edit
        // waiting in its outbox) until the first one's has been applied.
        other.stop()
        try sync.startServer()
        #expect(try sync.daemon.ctl(["sync", "--wait", "--timeout", "20"]).status == 0)
        try other.start()
        #expect(try other.ctl(["sync", "--wait", "--timeout", "20"]).status == 0)

        let server = try Self.serverExpense(sync, id)
        #expect(server["currency"] == "USD", "the first writer's currency stays")
        #expect(server["merchant"] == "Second", "safe fields: last writer wins, no flag")
        #expect(server["conflict"] == true)
        #expect(server["conflicts"]?["currency"] == ["server": "USD", "client": "GBP"])
        #expect(server["conflicts"]?["merchant"] == nil)
        let listed = try other.ctlJSON(["list"]).arrayValue?.first
        #expect(listed?["conflict"] == true)
        #expect(try other.ctl(["list"]).stdout.contains("(conflict)"))
        let shown = try other.ctl(["show", id])
        #expect(shown.stdout.contains("currency: server has USD, you sent GBP"), "\(shown.stdout)")

        let resolved = try other.ctl(["resolve", id, "--take", "mine"])
        #expect(resolved.status == 0, "\(resolved.stderr)")
        #expect(try other.ctl(["sync", "--wait", "--timeout", "20"]).status == 0)
        let settled = try Self.serverExpense(sync, id)
        #expect(settled["currency"] == "GBP")
        #expect(settled["conflict"] == false)
        #expect(try other.list().first?["conflict"] == false)
        let again = try other.ctl(["resolve", id, "--take", "server"])
        #expect(again.status == 1, "nothing left to resolve")
    }

    @Test func deleteLearnedFromARefresh_removesTheExpenseAndFlagsAWaitingEdit() throws {
        let sync = try SyncHarness()
        let other = sync.secondDevice(["--backoff-base", "5s", "--backoff-cap", "5s"])
        try sync.daemon.start()
        try other.start()
        defer { sync.daemon.stop(); other.stop() }
        let kept = try Self.add(sync.daemon, merchant: "Kept")
        let gone = try Self.add(sync.daemon, merchant: "Gone")
        try sync.waitUntilDrained()
        #expect(try other.ctl(["sync", "--refresh", "--wait"]).status == 0)
        try waitUntil(timeout: 10, "the other device to learn both") { try other.list().count == 2 }
        #expect(try sync.daemon.ctl(["delete", gone]).status == 0)
        try sync.waitUntilDrained()
        #expect(try other.ctl(["sync", "--refresh", "--wait"]).status == 0)
        try waitUntil(timeout: 10, "the tombstone to arrive") { try other.list().map { $0["transaction_id"]?.stringValue } == [kept] }
        _ = gone
    }

    @Test func editOfAnExpenseDeletedOnTheServer_needsAttentionAndDiscardHidesIt() throws {
        let sync = try SyncHarness()
        try sync.daemon.start()
        defer { sync.daemon.stop() }
        let id = try Self.add(sync.daemon)
        try sync.waitUntilDrained()
        // Deleted elsewhere; this device has not refreshed since.
        #expect(try sync.serverRequest("DELETE", "/v1/expenses/\(id)", key: ClientID.make()).status == 200)
        try Self.edit(sync.daemon, id, ["--comment", "late note"])
        try waitUntil(timeout: 20, "the edit to need attention") { try sync.daemon.list().first?["state"] == "needs_attention" }
        let job = try sync.daemon.ctlJSON(["show", id])["jobs"]?.arrayValue?.first
        #expect(job?["last_error"]?.stringValue?.hasPrefix("410") == true)
        #expect(job?["last_error_class"] == "gone")
        #expect(job?["hint"]?.stringValue?.contains("can never apply") == true, "\(job?.serialized() ?? "")")
        let shown = try sync.daemon.ctl(["show", id])
        #expect(shown.stdout.contains("expensectl discard \(id)"), "show says what to do")
        #expect(!shown.stdout.contains("expensectl retry"), "a retry can never succeed, so none is suggested: \(shown.stdout)")
        // Logged after the commit that the list shows.
        try waitUntil("the log to say a retry cannot help") { sync.daemon.log.contains("retrying cannot help") }
        #expect(!sync.daemon.log.contains("Use 'expensectl retry'"))
        let retry = try sync.daemon.ctl(["retry", id])
        #expect(retry.status == 1, "\(retry.stderr)")
        #expect(retry.stderr.contains("can never apply") && retry.stderr.contains("expensectl discard \(id)"), "\(retry.stderr)")
        #expect(try sync.daemon.list().first?["state"] == "needs_attention", "the refused retry changed nothing")
        #expect(try sync.daemon.ctl(["discard", id]).status == 0)
        #expect(try sync.daemon.list().isEmpty, "the server's 410 hid the expense without waiting for a refresh")
    }

    /// One rule for "no value": an empty optional field is cleared, on the
    /// server too after the sync; a required one can be changed, not cleared.
    @Test func clearedOptionalFields_areNullOnTheServerAfterSync() throws {
        let sync = try SyncHarness()
        try sync.daemon.start()
        defer { sync.daemon.stop() }
        let added = try sync.daemon.ctl(["add", "--merchant", "M", "--amount", "10", "--currency", "EUR", "--date", "2026-11-29",
                                         "--category", "Meals", "--comment", "note", "--tax-tag", "T1"])
        let id = added.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        try sync.waitUntilDrained()
        var server = try Self.serverExpense(sync, id)
        #expect(server["amount"] == "10.00" && server["category"] == "Meals" && server["comment"] == "note" && server["tax_tag"] == "T1")
        for option in ["--merchant", "--amount", "--currency", "--date"] {
            let refused = try sync.daemon.ctl(["edit", id, option, ""])
            #expect(refused.status == 65, "\(option) '': \(refused.stderr)")
        }
        let socket = try sync.daemon.request(["op": "edit", "ref": .string(id), "set": ["merchant": .null]])
        #expect(socket["error"]?["code"] == "invalid_field" && socket["error"]?["field"] == "merchant", "\(socket.serialized())")
        try Self.edit(sync.daemon, id, ["--category", "", "--comment", ""])
        #expect(try sync.daemon.request(["op": "edit", "ref": .string(id), "set": ["tax_tag": .null]])["ok"] == true)
        let shown = try sync.daemon.ctlJSON(["show", id])
        #expect(shown["category"] == .null && shown["comment"] == .null && shown["tax_tag"] == .null, "\(shown.serialized())")
        // Online, the changes may already be applied: pending or not, nothing else is.
        let pending = Set(shown["pending_fields"]?.arrayValue?.compactMap(\.stringValue) ?? [])
        #expect(pending.isSubset(of: ["category", "comment", "tax_tag"]), "\(pending)")
        try sync.waitUntilDrained()
        #expect(Self.requests(sync, "PATCH", awaiting: 1) >= 1)
        server = try Self.serverExpense(sync, id)
        #expect(server["category"] == .null && server["comment"] == .null && server["tax_tag"] == .null, "\(server.serialized())")
        #expect(server["merchant"] == "M" && server["amount"] == "10.00")
        let cached = try sync.daemon.ctlJSON(["show", id])
        #expect(cached["comment"] == .null && cached["state"] == "synced")
    }

    /// A second edit made while this device's first is on its way is based
    /// on the version before the first; once the first is applied it is
    /// moved to the version after it, so the server does not hold back its
    /// tax tag (or currency) as a conflict with this device's own change.
    @Test func secondEditWhileTheFirstIsOnItsWay_doesNotConflictWithIt() throws {
        let sync = try SyncHarness(serverArguments: ["--fault-delay-ms", "1500"])
        try sync.daemon.start()
        defer { sync.daemon.stop() }
        let id = try Self.add(sync.daemon)
        try sync.waitUntilDrained()
        try Self.edit(sync.daemon, id, ["--comment", "first"])
        try waitUntil(timeout: 20, "the first edit to be on its way") {
            try sync.daemon.ctlJSON(["show", id])["jobs"]?.arrayValue?.first?["state"] == "sending"
        }
        try Self.edit(sync.daemon, id, ["--tax-tag", "T2"])
        try sync.waitUntilDrained()
        let server = try Self.serverExpense(sync, id)
        #expect(server["tax_tag"] == "T2" && server["comment"] == "first", "\(server.serialized())")
        #expect(server["conflict"] == false, "\(server.serialized())")
        #expect(Self.requests(sync, "PATCH", awaiting: 2) == 2)
    }

    @Test func clearingAFieldOfANeverSentCreate_leavesItOutOfTheCreate() throws {
        let sync = try SyncHarness(startServer: false)
        try Self.startQueueingOnly(sync)
        defer { sync.daemon.stop() }
        let id = try sync.daemon.ctl(["add", "--merchant", "M", "--amount", "1.5", "--currency", "EUR", "--date", "2026-11-29",
                                      "--comment", "draft"]).stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        try Self.edit(sync.daemon, id, ["--comment", ""])
        #expect(try Self.outbox(sync.daemon).map(\.0) == ["create"])
        #expect(try Self.payloads(sync.daemon).first?["fields"]?["comment"] == nil, "a create sends no null")
        try Self.goOnline(sync)
        try sync.waitUntilDrained()
        #expect(Self.requests(sync, "PATCH") == 0)
        let server = try Self.serverExpense(sync, id)
        #expect(server["comment"] == .null && server["amount"] == "1.50")
    }

    @Test func editCrashWindows_converge() throws {
        for point in ["before-send", "after-response"] {
            let sync = try SyncHarness()
            try sync.daemon.start()
            let id = try Self.add(sync.daemon)
            try sync.waitUntilDrained()
            #expect(sync.daemon.stop() == 0)
            try CrashWindowTests.crash(sync, at: point) { sync in
                // The edit's commit wakes the drainer before the answer is
                // written, so the daemon can die at the fault point before
                // expensectl reads it: a crash between the commit and the
                // answer, which the user sees as no answer. Either outcome
                // is allowed; the edit was committed in both (the fault is
                // reached only by sending it), so after the restart it must
                // be on the server exactly once.
                let result = try sync.daemon.ctl(["edit", id, "--amount", "20.00"])
                #expect(result.status == 0 || (result.status == 74 && result.stderr.contains("expensed closed the connection before answering")),
                        "\(point): \(result.status) \(result.stderr)")
            }
            try sync.daemon.start()
            try sync.waitUntilDrained()
            #expect(sync.daemon.stop() == 0)
            let server = try Self.serverExpense(sync, id)
            #expect(server["amount"] == "20.00", "\(point): the edit is not lost")
            #expect(server["version"] == 2, "\(point): the edit is applied once")
        }
    }

    /// Random add/edit/delete/crash/online/offline sequences against a model
    /// of what the server must end up holding.
    @Test(arguments: [11, 29, 47])
    func randomSequences_endWithTheServerEqualToTheModel(seed: Int) throws {
        var random = SeededRandom(seed: UInt64(seed))
        let sync = try SyncHarness()
        try sync.daemon.start()
        defer { sync.daemon.stop() }
        var model: [String: ExpenseFields] = [:]  // live expenses, by transaction id
        var everCreated: Set<String> = []
        var online = true
        for step in 0..<40 {
            switch random.next(10) {
            case 0, 1, 2:
                let amount = "\(random.next(500)).\(10 + random.next(89))"
                let id = try Self.add(sync.daemon, merchant: "M\(step)", amount: amount)
                model[id] = ExpenseFields(merchant: "M\(step)", amount: amount, currency: "EUR", date: "2026-11-29")
                everCreated.insert(id)
            case 3, 4, 5:
                guard let id = model.keys.sorted().randomElement(using: &random) else { continue }
                let comment = "c\(step)"
                let amount = "\(random.next(900)).00"
                try Self.edit(sync.daemon, id, ["--comment", comment, "--amount", amount])
                model[id]?.comment = comment
                model[id]?.amount = amount
            case 6:
                guard let id = model.keys.sorted().randomElement(using: &random) else { continue }
                #expect(try sync.daemon.ctl(["delete", id]).status == 0)
                model[id] = nil
            case 7:
                if online { sync.stopServer() } else { try sync.startServer() }
                online.toggle()
            case 8:
                sync.daemon.crash()
                try sync.daemon.start()
            default:
                usleep(UInt32(random.next(100_000)))
            }
        }
        if !online { try sync.startServer() }
        try sync.waitUntilDrained(timeout: 60)
        let listing = try JSONValue.parse(try sync.serverRequest("GET", "/v1/expenses?limit=1000").body)
        var server: [String: ExpenseFields] = [:]
        for expense in listing["expenses"]?.arrayValue ?? [] where expense["deleted"] != true {
            var fields = ExpenseFields()
            for name in ["merchant", "amount", "currency", "date", "comment"] { fields[name] = expense[name]?.stringValue }
            server[expense["transaction_id"]?.stringValue ?? ""] = fields
        }
        #expect(server == model, "seed \(seed)")
        let serverIDs = Set((listing["expenses"]?.arrayValue ?? []).compactMap { $0["transaction_id"]?.stringValue })
        #expect(serverIDs.isSubset(of: everCreated))
        #expect(Set(try sync.daemon.list().compactMap { $0["transaction_id"]?.stringValue }) == Set(model.keys))
    }
}
