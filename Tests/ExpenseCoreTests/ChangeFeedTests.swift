import ExpenseCore
import Synchronization
import Testing

/// The feed the store hands its changes to, on its own: what a sink gets,
/// and that asking it costs the same however often it was asked before.
@Suite struct ChangeFeedTests {
    final class Sink: ChangeSink {
        let wanting = Atomic<Bool>(false)
        let received = Mutex<[ExpenseChange]>([])
        var wantsChanges: Bool { wanting.load(ordering: .relaxed) }
        func publish(changes: [ExpenseChange]) { received.withLock { $0 += changes } }
    }

    @Test func changesReachTheSink_stampedWhenNotTimed_andItSaysWhetherItWantsThem() {
        let feed = ChangeFeed()
        feed.deliver([ExpenseChange(account: "", transactionID: "t0", from: nil, to: "queued")], at: 5)
        #expect(!feed.isWanted, "nobody wants changes before a sink is connected")
        let sink = Sink()
        feed.connect(sink)
        #expect(!feed.isWanted, "nor while it wants none")
        sink.wanting.store(true, ordering: .relaxed)
        #expect(feed.isWanted)
        feed.deliver([ExpenseChange(account: "alice", transactionID: "t2", from: "queued", to: "sending"),
                      ExpenseChange(account: "alice", transactionID: "t3", from: nil, to: "queued", wallMilliseconds: 3)], at: 7)
        feed.deliver([], at: 9)
        let received = sink.received.withLock { $0 }
        #expect(received.map(\.transactionID) == ["t2", "t3"], "what came before the sink went nowhere")
        #expect(received.map(\.wallMilliseconds) == [7, 3], "stamped with now unless it carries its own time")
    }

    /// A closure kept in a `Mutex` and copied out on every call was wrapped
    /// in two more reabstraction thunks each time: after n adds a call ran
    /// through 2n of them, and an add got slower with every add before it
    /// until the stack ran out. A million calls must stay as cheap as the first.
    @Test(.timeLimit(.minutes(1))) func askingAMillionTimes_nestsNothing() {
        let feed = ChangeFeed()
        let sink = Sink()
        sink.wanting.store(true, ordering: .relaxed)
        feed.connect(sink)
        var wanted = 0
        for _ in 0..<1_000_000 where feed.isWanted { wanted += 1 }
        feed.deliver([ExpenseChange(account: "", transactionID: "last", from: nil, to: "queued")], at: 1)
        #expect(wanted == 1_000_000)
        #expect(sink.received.withLock { $0 }.map(\.transactionID) == ["last"])
    }
}
