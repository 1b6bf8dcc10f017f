import ExpenseCore
import ExpenseTestSupport
import Foundation
import Synchronization
import Testing

/// Exactly once into ihatemoney, which honours no idempotency key: lost
/// answers, resets, 503s and crashes, counted in ihatemoney's own database.
/// Serialized: each test drives the real ihatemoney (Python) through a fault proxy from a daemon; one at a time bounds their load while the other suites run.
@Suite(.serialized) struct IhatemoneyFaultTests {
    /// 200 expenses through a proxy that drops 20% of answers after
    /// ihatemoney committed, resets 10%, and answers 503 to 5%.
    @Test func lostAnswersResetsAnd503s_leaveExactlyOneBillPerExpense() throws {
        let h = try IhatemoneyHarness(odds: FaultProxy.Odds(dropAfterCommit: 0.2, resetAfterCommit: 0.1, unavailable: 0.05),
                                      daemonArguments: ["--request-timeout", "20s"])
        try h.daemon.start()
        let client = try RawClient(path: h.daemon.socketPath)
        var ids: [String] = []
        for n in 0..<200 {
            try client.send(#"{"id":\#(n),"op":"add","expense":{"merchant":"Shop \#(n)","amount":"\#(n + 1).25","currency":"EUR","date":"2026-11-29"}}"# + "\n")
            guard let id = try client.readJSONLine()["result"]?["transaction_id"]?.stringValue else { throw TestFailure("add \(n) failed") }
            ids.append(id)
        }
        try h.waitUntilDrained(timeout: 300)
        let bills = try h.bills()
        let byMarker = Dictionary(grouping: bills) { String($0.externalLink.dropFirst("https://expensed.invalid/t/".count).prefix(25)) }
        #expect(bills.count == 200, "bills: \(bills.count); duplicated: \(byMarker.filter { $0.value.count > 1 }.keys.sorted().prefix(5))")
        #expect(Set(byMarker.keys) == Set(ids))
        for (n, id) in ids.enumerated() {
            #expect(byMarker[id]?.first?.amount == Double(n + 1) + 0.25)
        }
        let proxy = try #require(h.proxy)
        // The faults really happened to creates.
        let posts = proxy.log.filter { $0.method == "POST" }
        #expect(posts.count { $0.action == .droppedAfterCommit } >= 20)
        #expect(posts.count { $0.action == .resetAfterCommit } >= 10)
        #expect(posts.count { $0.action == .unavailable } >= 3)
        #expect(try h.daemon.list().allSatisfy { $0["state"] == "synced" })
    }

    /// The daemon dies (kill -9 at the fault point) after ihatemoney
    /// committed a create and before its answer was recorded: after the
    /// restart the lookup adopts the bill instead of making another.
    @Test func killWithACreateInFlight_leavesOneBill() throws {
        let h = try IhatemoneyHarness(daemonArguments: IhatemoneyHarness.shortRequests, environment: ["EXPENSED_FAULT": "after-response:kill"])
        try h.daemon.start()
        // The drainer is woken before the add is answered: the daemon may
        // die at the fault point first, and the add's answer with it.
        let clientID = ClientID.make()
        let id = TransactionID.derive(from: clientID)
        _ = try? h.add(merchant: "Garage", amount: "99.00", clientID: clientID)
        let crashed = try #require(h.daemon.process)
        #expect(crashed.waitForExit(timeout: 60) != nil, "the daemon died at the fault point")
        #expect(try h.bills(for: id).count == 1, "ihatemoney committed before the crash")
        h.daemon.environment = [:]
        try h.daemon.start()
        try h.waitUntilDrained()
        #expect(try h.bills().count == 1)
        #expect(try h.bills(for: id).count == 1)
        #expect(h.daemon.log.contains("replayed"), "the resend was a lookup that found the bill")
        #expect(h.daemon.log.contains("1 create(s) interrupted while sending wait 12s before their markers are looked up"), "\(h.daemon.log)")
    }

    /// A clean stop while a create is in flight: the stop cuts the daemon's
    /// transfer off, but the request goes on at ihatemoney (here the proxy
    /// holds it until the next daemon has started). The next start looks
    /// the marker up only once that request can no longer be committing:
    /// one bill, adopted as a replay. (Looked up at once, the lookup would
    /// find nothing and send the create again: two bills.)
    @Test func aStopWithACreateInFlight_leavesOneBill() throws {
        let h = try IhatemoneyHarness(odds: FaultProxy.Odds.none, daemonArguments: IhatemoneyHarness.shortRequests)
        let proxy = try #require(h.proxy)
        try h.daemon.start()
        proxy.holdWrites()
        let id = try h.add(merchant: "Garage", amount: "99.00")
        try waitUntil(timeout: 60, "the create to be in flight") { proxy.heldWrites == 1 }
        h.daemon.stop()
        try h.daemon.start()
        let job = try #require(try h.daemon.ctlJSON(["show", id])["jobs"]?.arrayValue?.first)
        #expect(job["last_error"]?.stringValue?.contains("its marker is looked up once") == true, "\(job)")
        #expect(job["next_attempt_at"] != .null)
        proxy.releaseWrites()
        try h.waitUntilDrained()
        #expect(try h.bills().count == 1)
        #expect(try h.bills(for: id).count == 1)
        #expect(h.daemon.log.contains("replayed"), "the resend was a lookup that found the bill")
    }

    /// kill -9 from outside at moments chosen by the proxy's log: whenever
    /// a create has reached ihatemoney, with more in flight.
    @Test func killsWhileCreatesAreInFlight_leaveOneBillEach() throws {
        // Each kill leaves creates in flight at ihatemoney (the proxy forwards
        // them whatever became of the daemon): after the restart their
        // lookups wait until those can no longer be committing.
        let h = try IhatemoneyHarness(odds: FaultProxy.Odds(dropAfterCommit: 0.1), daemonArguments: IhatemoneyHarness.shortRequests)
        try h.daemon.start()
        var ids: [String] = []
        for round in 0..<4 {
            let client = try RawClient(path: h.daemon.socketPath)
            // Counted before the round's adds: the daemon sends from the first
            // one on, and all 15 may have reached ihatemoney by the last answer.
            let posted = try #require(h.proxy).log.count { $0.method == "POST" }
            for n in 0..<15 {
                try client.send(#"{"id":\#(n),"op":"add","expense":{"merchant":"R\#(round) \#(n)","amount":"1.00","currency":"EUR","date":"2026-11-29"}}"# + "\n")
                guard let id = try client.readJSONLine()["result"]?["transaction_id"]?.stringValue else { throw TestFailure("add failed") }
                ids.append(id)
            }
            try waitUntil(timeout: 60, "a create of this round to reach ihatemoney") {
                try #require(h.proxy).log.count { $0.method == "POST" } > posted
            }
            h.daemon.crash()
            try h.daemon.start()
        }
        try h.waitUntilDrained(timeout: 120)
        let bills = try h.bills()
        #expect(bills.count == ids.count)
        #expect(Set(bills.map { String($0.externalLink.dropFirst("https://expensed.invalid/t/".count).prefix(25)) }) == Set(ids))
    }
}
