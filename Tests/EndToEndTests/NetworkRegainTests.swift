import ExpenseCore
import ExpenseTestSupport
import Foundation
import SQLite
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
        // A request on the connection kept alive over the downed link ends at its timeout.
        let sync = try SyncHarness(daemonArguments: ["--drain-interval", "1d", "--refresh-interval", "7d", "--request-timeout", "3s"], startServer: false)
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

    /// The daemon in one namespace, the server in another, a veth pair
    /// between them: the daemon's end goes down, an add fails for the
    /// transport and the server is unreachable, to be tried again at the
    /// drain's timer (a day); the end comes back up, and the link's event
    /// sends it.
    @Test func theServerBeyondAVethPair_isReachedAgain_whenTheLinkComesBack_notAtTheTimer() throws {
        let pair = try VethPair()
        // A request over the dead link ends at its timeout (5 s here; else
        // the low-speed limit's 30 s on a connection kept alive).
        let daemon = try pair.start(daemonArguments: ["--backoff-base", "1h", "--backoff-cap", "1d", "--request-timeout", "5s"])
        defer { daemon.stop() }

        try pair.daemonSide.ip(["link", "set", VethPair.daemonLink, "down"])
        let id = try #require(try daemon.ctlJSON(["add", "--merchant", "Ferry", "--amount", "7.20", "--currency", "EUR"])["transaction_id"]?.stringValue)
        try waitUntil(timeout: 120, "the create to fail for the transport (the request over the dead link ends at its timeout)") {
            try daemon.ctlJSON(["show", id])["jobs"]?.arrayValue?.contains { $0["last_error_class"] == "transport" } == true
        }
        #expect(try daemon.request(["op": "status"])["result"]?["server"] == "unreachable")
        #expect(try pair.serverTransactionIDs().isEmpty)

        try pair.daemonSide.ip(["link", "set", VethPair.daemonLink, "up"])
        try waitUntil(timeout: 60, "the expense to reach the server across the pair") { try pair.serverTransactionIDs() == [id] }
        #expect(daemon.log.contains("Network change (link \(VethPair.daemonLink) is up); sending now"),
                "\(daemon.log)")
    }

    /// Two hundred default routes made in one burst wake the drain a
    /// handful of times at most (one per quiet moment of the burst), not
    /// once per message. A link made after the burst (a veth pair whose
    /// second end comes up first) marks its end: every message of the
    /// burst was read before that link's.
    @Test func aFloodOfRouteMessages_wakesTheDrainOnce_notOncePerMessage() throws {
        let pair = try VethPair()
        let daemon = try pair.start()
        defer { daemon.stop() }
        let before = daemon.log.components(separatedBy: "Network change (").count

        let batch = pair.directory.at("routes.batch")
        let lines = (1...200).map { "route add default via \(VethPair.serverAddress) dev \(VethPair.daemonLink) metric \($0)" }
        try (lines.joined(separator: "\n") + "\n").write(toFile: batch, atomically: true, encoding: .utf8)
        try pair.daemonSide.ip(["-batch", batch])
        try waitUntil(timeout: 60, "the burst's wake") { daemon.log.contains("Network change (a default route appeared)") }
        try pair.daemonSide.ip(["link", "add", "mark0", "type", "veth", "peer", "name", "mark1"])
        try pair.daemonSide.ip(["link", "set", "mark1", "up"])
        try pair.daemonSide.ip(["link", "set", "mark0", "up"])
        try waitUntil(timeout: 60, "the marker link's wake") { daemon.log.contains("Network change (link mark0 is up)") }

        let log = daemon.log
        let routeWakes = log.components(separatedBy: "Network change (a default route appeared)").count - 1
        #expect(routeWakes >= 1 && routeWakes <= 5, "200 default routes woke the drain \(routeWakes) times:\n\(log)")
        #expect(log.components(separatedBy: "Network change (").count - before == routeWakes + 1, "only the burst and the marker woke it")
    }
}

/// Two network namespaces of the test's own joined by a veth pair: the
/// daemon on one side, `expense-server` on the other, listening on its
/// end's address.
private final class VethPair {
    static let daemonLink = "veth-daemon"
    static let serverLink = "veth-server"
    static let daemonAddress = "10.231.0.1"
    static let serverAddress = "10.231.0.2"

    let daemonSide: NetworkNamespace
    let serverSide: NetworkNamespace
    let directory = TemporaryDirectory(prefix: "veth")
    private(set) var server: ServerProcess?

    init() throws {
        daemonSide = try NetworkNamespace()
        serverSide = try NetworkNamespace()
        for side in [daemonSide, serverSide] { try side.ip(["link", "set", "lo", "up"]) }
        try daemonSide.ip(["link", "add", Self.daemonLink, "type", "veth", "peer", "name", Self.serverLink, "netns", serverSide.name])
        try daemonSide.ip(["addr", "add", "\(Self.daemonAddress)/30", "dev", Self.daemonLink])
        try serverSide.ip(["addr", "add", "\(Self.serverAddress)/30", "dev", Self.serverLink])
        try daemonSide.ip(["link", "set", Self.daemonLink, "up"])
        try serverSide.ip(["link", "set", Self.serverLink, "up"])
    }

    /// Starts the server on its side and the daemon on its own, sending to
    /// it with the drain's timer at a day, and waits until the server was
    /// reached once.
    func start(daemonArguments: [String] = []) throws -> DaemonHarness {
        let data = directory.at("server")
        let token = try ServerProcess.addUser("alice", dataDirectory: data)
        let server = try ServerProcess(dataDirectory: data, outputDirectory: directory.path, token: token,
                                       launcher: serverSide.launcher, host: Self.serverAddress)
        self.server = server
        let tokenFile = directory.at("token")
        try (token + "\n").write(toFile: tokenFile, atomically: true, encoding: .utf8)
        let daemon = DaemonHarness(arguments: ["--server", "http://\(Self.serverAddress):\(server.port)", "--token-file", tokenFile,
                                               "--drain-interval", "1d", "--refresh-interval", "7d", "--connect-timeout", "2s"] + daemonArguments)
        daemon.launcher = daemonSide.launcher
        try daemon.start()
        try waitUntil(timeout: 60, "the server to be contacted") {
            try daemon.request(["op": "status"])["result"]?["server"] == "ok"
        }
        return daemon
    }

    /// The transaction ids of the server's expenses, from its database.
    func serverTransactionIDs() throws -> [String] {
        let db = try Connection(path: directory.at("server/expense-server.db"), readOnly: true)
        return try db.query("SELECT transaction_id FROM expenses ORDER BY id") { $0.string(0) }
    }
}
