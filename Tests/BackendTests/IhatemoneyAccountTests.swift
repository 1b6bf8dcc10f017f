import ExpenseCore
import ExpenseTestSupport
import Foundation
import Testing

/// A household sharing one ihatemoney project from one machine: each
/// account's expenses are bills paid by its own member, each account lists
/// the bills its member paid, and exactly once holds per account. Real
/// local users, the real daemon, the real ihatemoney on loopback.
/// Serialized: users and groups are the machine's.
@Suite(.serialized) struct IhatemoneyAccountTests {
    /// The last error of `id`'s first job, as root sees it.
    static func lastError(_ h: IhatemoneyAccountHarness, _ id: String) throws -> String? {
        try h.daemon.ctlJSON(["show", id])["jobs"]?.arrayValue?.first?["last_error"]?.stringValue
    }

    @Test func twoAccounts_payAsTheirOwnMember_andEachListsOnlyWhatItsMemberPaid() throws {
        let h = try IhatemoneyAccountHarness()
        try h.startDaemon()
        let alice1 = try h.add("alice", merchant: "Alice Bakery")
        let alice2 = try h.add("alice", merchant: "Alice Market")
        let bob1 = try h.add("bob", merchant: "Bob Garage")
        try h.waitUntilDrained()
        let bills = try h.bills()
        #expect(bills.count == 3)
        for (id, payer) in [(alice1, "Alice"), (alice2, "Alice"), (bob1, "Bob")] {
            let mine = try h.bills(for: id)
            #expect(mine.count == 1 && mine.first?.payer == payer, "\(id): \(mine)")
            #expect(mine.first?.owers == ["Alice", "Bob", "Carol"])
        }
        #expect(try h.listed("alice") == [alice1, alice2])
        #expect(try h.listed("bob") == [bob1])

        // Other devices of the household's make a bill paid by Alice and
        // one paid by Bob, straight through ihatemoney's API: each account's
        // refresh brings the one its member paid. (Accounts refresh in name
        // order: alice's first would take both if payers did not decide.)
        let byAlice = try Self.makeBill(h, payer: "Alice", what: "Pharmacy", amount: "7.50")
        let byBob = try Self.makeBill(h, payer: "Bob", what: "Hardware", amount: "3.10")
        let sync = try h.daemon.ctl(["sync", "--refresh", "--wait"])
        #expect(sync.status == 0, "\(sync.stderr)")
        try waitUntil(timeout: 30, "the refresh to bring the bills made in ihatemoney") {
            try h.listed("alice").contains(byAlice) && h.listed("bob").contains(byBob)
        }
        #expect(try h.listed("alice") == [alice1, alice2, byAlice])
        #expect(try h.listed("bob") == [bob1, byBob], "a bill Alice paid is not bob's")
        #expect(try h.ctlJSON("alice", ["show", byAlice])["amount"] == "7.50")
        #expect(try h.ctlJSON("bob", ["show", byBob])["merchant"] == "Hardware")
        #expect(try h.bills().count == 5, "the refresh made nothing")
    }

    /// Makes a bill carrying a marker of another device's, paid by `payer`
    /// for Bob, through ihatemoney's API; returns its transaction id.
    static func makeBill(_ h: IhatemoneyAccountHarness, payer: String, what: String, amount: String) throws -> String {
        let id = TransactionID.derive(from: ClientID.make())
        var form = FormBody([("date", "2026-11-30"), ("what", what), ("payer", String(h.project.members[payer]!)),
                             ("amount", amount), ("original_currency", "EUR"),
                             ("external_link", "https://expensed.invalid/t/\(id)?client_id=x"), ("bill_type", "Expense")])
        form.fields.append(("payed_for", String(h.project.members["Bob"]!)))
        let made = try h.ihatemoney.request("POST", "\(h.project.path)/bills",
                                            headers: [h.project.basicAuthorization, ("Content-Type", "application/x-www-form-urlencoded")],
                                            body: form.bytes)
        guard made.status == 201 else { throw TestFailure("making a bill in ihatemoney: \(made.status) \(made.text)") }
        return id
    }

    /// An account without a paying member: its create is not sent at all
    /// and needs attention at once, saying what to add. A payer who is
    /// not a member of the project: refused with the name. Others go on.
    @Test func accountWithoutAPayer_needsAttentionWithTheReason_andNothingIsSent() throws {
        let h = try IhatemoneyAccountHarness(payers: ["alice": "Dave", "bob": "Bob"], odds: FaultProxy.Odds.none, daemonArguments: ["--max-attempts", "1"])
        try h.startDaemon()
        let carols = try h.add("carol", merchant: "Carol Books")
        let alices = try h.add("alice", merchant: "Alice Shoes")
        let bobs = try h.add("bob", merchant: "Bob Tools")
        try waitUntil(timeout: 30, "carol's create to need attention") { try h.daemon.ctlJSON(["show", carols])["state"] == "needs_attention" }
        try waitUntil(timeout: 30, "alice's create to need attention") { try h.daemon.ctlJSON(["show", alices])["state"] == "needs_attention" }
        try h.waitUntilDrained()
        let carol = h.users.name("carol")
        #expect(try Self.lastError(h, carols) == "not sent: account '\(carol)' has no paying member; add \(carol):<member> to ihatemoney_payers, then retry")
        #expect(try Self.lastError(h, alices) == "400 the ihatemoney project has no member 'Dave' (ihatemoney_payers)")
        #expect(try h.bills(for: bobs).map(\.payer) == ["Bob"])
        #expect(try h.bills().count == 1, "neither carol's nor alice's was made")
        let posts = try #require(h.proxy).log.filter { $0.method == "POST" }
        #expect(posts.count == 1, "only bob's create went out: \(posts)")
        #expect(h.daemon.log.contains("ihatemoney_payers"), "the log says what to add")
        // The job is kept: carol's expense is still hers, waiting.
        #expect(try h.listed("carol") == [carols])
    }

    /// `ihatemoney_payed_for` naming someone the project lacks holds the
    /// creates with the name, but not the refresh, which needs only the
    /// payer: a bill paid by Alice still reaches alice's list.
    @Test func aMissingMemberPaidFor_holdsCreates_butNotTheRefresh() throws {
        let h = try IhatemoneyAccountHarness(daemonArguments: ["--max-attempts", "1", "--ihatemoney-payed-for", "Bob,Dave"])
        try h.startDaemon()
        let alices = try h.add("alice", merchant: "Alice Shoes")
        try waitUntil(timeout: 30, "alice's create to need attention") { try h.daemon.ctlJSON(["show", alices])["state"] == "needs_attention" }
        #expect(try Self.lastError(h, alices) == "400 the ihatemoney project has no member 'Dave' (ihatemoney_payed_for)")
        let byAlice = try Self.makeBill(h, payer: "Alice", what: "Groceries", amount: "7.50")
        let sync = try h.daemon.ctl(["sync", "--refresh", "--wait"])
        #expect(sync.status == 0, "\(sync.stderr)")
        try waitUntil(timeout: 30, "the refresh to bring Alice's bill") { try h.listed("alice").contains(byAlice) }
        #expect(try h.listed("alice") == [alices, byAlice])
        #expect(try h.bills().count == 1, "only the bill made in ihatemoney")
    }

    /// 10 creates each for alice and bob through a proxy that drops 30%
    /// of answers after ihatemoney committed: one bill each, right payer.
    @Test func lostAnswers_leaveOneBillPerExpense_withItsAccountsPayer() throws {
        let h = try IhatemoneyAccountHarness(odds: FaultProxy.Odds(dropAfterCommit: 0.3), daemonArguments: ["--request-timeout", "20s"])
        try h.startDaemon()
        var payerOf: [String: String] = [:]
        for n in 0..<10 {
            payerOf[try h.add("alice", merchant: "A\(n)", amount: "\(n + 1).00")] = "Alice"
            payerOf[try h.add("bob", merchant: "B\(n)", amount: "\(n + 1).50")] = "Bob"
        }
        try h.waitUntilDrained(timeout: 180)
        let bills = try h.bills()
        #expect(bills.count == 20, "\(bills.count) bills")
        for (id, payer) in payerOf {
            #expect(try h.bills(for: id).map(\.payer) == [payer], "\(id)")
        }
        #expect(try #require(h.proxy).log.count { $0.method == "POST" && $0.action == .droppedAfterCommit } >= 2, "answers to creates were lost")
        #expect(try h.listed("alice") == Set(payerOf.filter { $0.value == "Alice" }.keys))
        #expect(try h.listed("bob") == Set(payerOf.filter { $0.value == "Bob" }.keys))
    }

    /// kill -9 after ihatemoney committed bob's create and before the
    /// answer was recorded: after the restart, one bill, paid by Bob.
    @Test func killWithBobsCreateInFlight_leavesOneBill() throws {
        let h = try IhatemoneyAccountHarness(daemonArguments: IhatemoneyHarness.shortRequests, environment: ["EXPENSED_FAULT": "after-response:kill"])
        try h.startDaemon()
        // The drainer is woken before the add is answered: the daemon may
        // die at the fault point first, and the add's answer with it.
        let clientID = ClientID.make()
        let id = TransactionID.derive(from: clientID)
        _ = try? h.add("bob", merchant: "Bob Garage", amount: "99.00", clientID: clientID)
        let crashed = try #require(h.daemon.process)
        #expect(crashed.waitForExit(timeout: 60) != nil, "the daemon died at the fault point")
        #expect(try h.bills(for: id).count == 1, "ihatemoney committed before the crash")
        h.daemon.environment = [:]
        try h.startDaemon()
        try h.waitUntilDrained()
        #expect(try h.bills().count == 1)
        #expect(try h.bills(for: id).map(\.payer) == ["Bob"])
        #expect(h.daemon.log.contains("replayed"), "the resend was a lookup that found the bill")
        #expect(try h.listed("bob") == [id])
        #expect(try h.listed("alice").isEmpty)
    }

    /// Garbage in ihatemoney_payers stops the real daemon at start (78), the key named.
    @Test(arguments: [
        ("alice", "must be account:member pairs separated by commas"),
        ("alice:Alice, alice:Bob", "account 'alice' is given twice"),
        (".alice:Alice", "'.alice' is not an account name"),
        ("alice:", "must name a member, not be empty"),
    ])
    func payersGarbage_stopsTheDaemonAtStart(_ value: String, _ message: String) throws {
        let directory = TemporaryDirectory(prefix: "ihm-payers")
        SampleReceipt.write(Array("""
            backend = ihatemoney
            server = http://127.0.0.1:9/api/projects/household
            accounts_dir = \(directory.path)
            ihatemoney_payers = \(value)
            """.utf8), to: directory.at("expensed.conf"))
        let daemon = DaemonHarness(directory: directory)
        let result = try runCommand(BuiltProducts.path("expensed"), daemon.arguments, timeout: 20)
        #expect(result.status == 78, "\(result.stderr)")
        #expect(result.stderr.contains("expensed.conf:4: ihatemoney_payers: \(message)"), "\(result.stderr)")
    }
}
