import ExpenseCore
import ExpenseTestSupport
import Testing

/// The network comes back: the drain hears it from the kernel (route
/// netlink) and sends at once, instead of at its timer. The daemon and the
/// server run in a network namespace of the test's own, whose link goes
/// down and up; the drain timer is a day, so only the link's event can
/// send the expense within the test's wait.
@Suite struct NetworkRegainTests {
    @Test func aLinkComingBackUp_sendsTheQueue_withoutWaitingForTheTimer() throws {
        let namespace = try NetworkNamespace()
        try namespace.ip(["link", "set", "lo", "up"])
        let sync = try SyncHarness(daemonArguments: ["--drain-interval", "1d", "--refresh-interval", "7d"], startServer: false)
        sync.serverLauncher = namespace.launcher
        sync.daemon.launcher = namespace.launcher
        try sync.startServer()
        try sync.daemon.start()
        defer { sync.daemon.stop() }
        try waitUntil(timeout: 60, "the server to be contacted") {
            try sync.daemon.request(["op": "status"])["result"]?["server"] == "ok"
        }

        try namespace.ip(["link", "set", "lo", "down"])
        let id = try #require(try sync.daemon.ctlJSON(["add", "--merchant", "Train", "--amount", "12.50", "--currency", "EUR"])["transaction_id"]?.stringValue)
        try waitUntil(timeout: 60, "the create to fail for the transport") {
            try sync.daemon.ctlJSON(["show", id])["jobs"]?.arrayValue?.contains { $0["last_error_class"] == "transport" } == true
        }
        #expect(try sync.serverRecords().isEmpty)

        try namespace.ip(["link", "set", "lo", "up"])
        try sync.waitUntilDrained(timeout: 60)
        #expect(try sync.serverRecords().map(\.transactionID) == [id])
        #expect(sync.daemon.log.contains("Network change (link lo is up); sending now"), "\(sync.daemon.log)")
    }
}
