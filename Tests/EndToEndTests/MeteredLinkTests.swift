import ExpenseCore
import ExpenseTestSupport
import Foundation
import SQLite
import Testing

/// A daemon and an expense-server on loopback, the daemon's system bus a
/// private `dbus-daemon` of the test's own with a fake NetworkManager and
/// logind on it (``FakeSystemBus``; never the machine's bus).
final class BusHarness {
    let bus: FakeSystemBus
    let sync: SyncHarness
    var daemon: DaemonHarness { sync.daemon }

    /// - Parameters:
    ///   - networkManager: what NetworkManager says at the start; nil: none on the bus.
    ///   - mode: `--metered`, or nil for the default.
    init(networkManager: FakeSystemBus.Metered?, mode: String?, daemonArguments: [String] = [], startServer: Bool = true) throws {
        bus = try FakeSystemBus(networkManager: networkManager)
        sync = try SyncHarness(daemonArguments: (mode.map { ["--metered", $0] } ?? []) + daemonArguments,
                               environment: bus.environment.merging(["EXPENSED_DEBUG": "1"]) { $1 }, startServer: startServer)
        try sync.daemon.start()
        if let networkManager {
            try waitForNetwork(Self.name(networkManager))
        } else {
            try waitForLog("NetworkManager is not on the system bus")
        }
    }

    deinit { sync.daemon.stop() }

    static func name(_ value: FakeSystemBus.Metered) -> String {
        ["unknown", "yes", "no", "guess-yes", "guess-no"][Int(value.rawValue)]
    }

    func status() throws -> JSONValue {
        guard let result = try daemon.request(["op": "status"])["result"] else { throw TestFailure("status failed") }
        return result
    }

    /// Waits until the daemon says NetworkManager says `name` (nil: no NetworkManager).
    func waitForNetwork(_ name: String?) throws {
        try waitUntil(timeout: 30, "network_metered to be \(name ?? "null")") { try status()["network_metered"] == .string(name) }
    }

    func waitForLog(_ text: String) throws {
        try waitUntil(timeout: 30, "'\(text)' in the daemon's log") { daemon.log.contains(text) }
    }

    /// Adds an expense with a JPEG receipt of its own bytes.
    func addWithReceipt(_ merchant: String, seed: UInt8) throws -> String {
        let path = daemon.directory.at("\(merchant).jpg")
        SampleReceipt.write(SampleReceipt.jpeg(seed: seed), to: path)
        let added = try daemon.ctlJSON(["add", "--merchant", merchant, "--amount", "20.00", "--currency", "EUR", "--date", "2026-11-29", "--receipt", path])
        guard let id = added["transaction_id"]?.stringValue else { throw TestFailure("add answered \(added)") }
        return id
    }

    /// The expense on the server, if it is there.
    func onServer(_ id: String) throws -> SyncHarness.ServerRecord? {
        try sync.serverRecords().first { $0.transactionID == id }
    }

    /// Whether the expense's receipt is on the server, whole (the bytes in
    /// its file are those whose digest it recorded).
    func uploaded(_ id: String) throws -> Bool {
        guard let record = try onServer(id), let digest = record.receiptDigest else { return false }
        return digest == record.recordedDigest
    }

    /// Waits until the expense's upload may be sent as far as the outbox
    /// goes (its copy decided), so that only a hold keeps it.
    func waitUntilUploadReady(_ id: String) throws {
        try waitUntil(timeout: 60, "the upload of \(id) to have its copy") {
            let db = try Connection(path: "\(daemon.stateDirectory)/expensed.db", readOnly: true)
            return try db.scalarInt("""
                SELECT count(*) FROM jobs JOIN receipt_copies AS c ON c.job_uuid = jobs.uuid WHERE jobs.transaction_id = ? AND jobs.kind = 'receipt'
                """, [.text(id)]) == 1
        }
    }

    /// Two passes that began after this call have ended: each `sync`
    /// asks for one, and passes run one after another, so the second to
    /// end began after the first ended (which was after this call).
    func waitForFreshPasses() throws {
        let before = daemon.passesEnded
        for count in 1...2 {
            _ = try daemon.request(["op": "sync"])
            try daemon.waitForPasses(after: before, count: count)
        }
    }

    /// The jobs of an expense as `show` lists them.
    func jobs(_ id: String) throws -> [JSONValue] {
        try daemon.ctlJSON(["show", id])["jobs"]?.arrayValue ?? []
    }
}

/// NetworkManager's `Metered` holds what `metered` says, end to end: the
/// daemon reads it at start and follows `PropertiesChanged` and
/// NetworkManager coming and going; held jobs are no failures and go when
/// the link is not metered, or once with `sync --now`. The decision itself
/// is `MeteredHoldTests`' table.
@Suite struct MeteredLinkTests {
    @Test func meteredYes_pauseReceipts_holdsTheUpload_whileTheCreateAndAnEditGo_andNoSendsIt() throws {
        let h = try BusHarness(networkManager: .yes, mode: "pause-receipts")
        let id = try h.addWithReceipt("Taxi", seed: 1)
        try waitUntil(timeout: 60, "the create on the server") { try h.onServer(id) != nil }
        try h.waitUntilUploadReady(id)
        try h.waitForFreshPasses()
        #expect(try h.onServer(id)?.receiptDigest == nil, "the upload is held")

        let status = try h.status()
        #expect(status["held"] == 1 && status["queued"] == 1, "\(status)")
        #expect(status["network_metered"] == "yes" && status["metered_mode"] == "pause-receipts")
        #expect(status["metered_hold"] == "receipt uploads paused (metered = pause-receipts)")
        #expect(status["line"]?.stringValue?.contains("; 1 held (metered link)") == true, "\(status)")
        let upload = try #require(try h.jobs(id).first { $0["kind"] == "receipt" })
        #expect(upload["attempts"] == 0 && upload["transient_attempts"] == 0 && upload["last_error"] == .null, "held, not failed: \(upload)")
        let text = try h.daemon.ctl(["status"])
        #expect(text.stdout.contains("Network:          metered (NetworkManager: yes); receipt uploads paused (metered = pause-receipts), 1 held; 'expensectl sync --now' sends them once"),
                "\(text.stdout)")
        #expect(h.daemon.log.contains("The link is metered (NetworkManager: yes): receipt uploads paused (metered = pause-receipts) until it is not"))

        // A small change still goes.
        _ = try h.daemon.ctlJSON(["edit", id, "--merchant", "Airport Taxi"])
        try waitUntil(timeout: 60, "the edit on the server") { try h.onServer(id)?.merchant == "Airport Taxi" }
        #expect(try h.onServer(id)?.receiptDigest == nil)

        // `sync --wait` waits for what can go, and says what is held.
        let waited = try h.daemon.ctl(["sync", "--wait", "--timeout", "60"])
        #expect(waited.status == 0 && waited.stdout.contains("Done; 1 held while the link is metered ('expensectl sync --now' sends them once)."),
                "\(waited.stdout) \(waited.stderr)")

        try h.bus.setMetered(.no)
        try h.sync.waitUntilDrained(timeout: 60)
        #expect(try h.uploaded(id))
        #expect(try h.status()["held"] == 0)
        #expect(h.daemon.log.contains("The link is not metered (NetworkManager: no); what it held goes now"))
    }

    @Test func guessYes_countsAsMetered_andSyncNow_sendsWhatIsHeldOnce() throws {
        let h = try BusHarness(networkManager: .guessYes, mode: nil)
        let first = try h.addWithReceipt("Hotel", seed: 2)
        try waitUntil(timeout: 60, "the create on the server") { try h.onServer(first) != nil }
        try h.waitUntilUploadReady(first)
        try h.waitForFreshPasses()
        #expect(try h.onServer(first)?.receiptDigest == nil, "guess-yes is metered")
        #expect(try h.status()["held"] == 1)

        let now = try h.daemon.ctl(["sync", "--now", "--wait", "--timeout", "60"])
        #expect(now.status == 0 && now.stdout.contains("Done; everything is synced."), "\(now.stdout) \(now.stderr)")
        #expect(try h.uploaded(first))
        #expect(h.daemon.log.contains("Sending what the metered link holds, once, on request ('expensectl sync --now')"))

        // The hold applies again after that pass.
        let second = try h.addWithReceipt("Dinner", seed: 3)
        try waitUntil(timeout: 60, "the second create on the server") { try h.onServer(second) != nil }
        try h.waitUntilUploadReady(second)
        try h.waitForFreshPasses()
        #expect(try h.onServer(second)?.receiptDigest == nil, "held again")
        #expect(try h.status()["held"] == 1 && h.status()["metered_hold"] == "receipt uploads paused (metered = pause-receipts)")
    }

    @Test func pause_holdsEverything_untilTheLinkIsNotMetered() throws {
        let h = try BusHarness(networkManager: .yes, mode: "pause")
        let id = try h.addWithReceipt("Parking", seed: 4)
        try h.waitUntilUploadReady(id)
        try h.waitForFreshPasses()
        #expect(try h.sync.serverRecords().isEmpty, "nothing is sent")
        let status = try h.status()
        #expect(status["held"] == 2 && status["metered_hold"] == "all sending paused (metered = pause)", "\(status)")
        #expect(status["server"] == "unknown", "not even the refresh went")
        #expect(try h.jobs(id).allSatisfy { $0["attempts"] == 0 && $0["transient_attempts"] == 0 && $0["last_error"] == .null })

        // Read again when NetworkManager says the property changed without its value: unknown is not metered.
        try h.bus.invalidateMetered(.unknown)
        try h.sync.waitUntilDrained(timeout: 60)
        #expect(try h.uploaded(id))
        #expect(try h.status()["network_metered"] == "unknown")
    }

    @Test func ignore_sendsEverything_onAMeteredLink() throws {
        let h = try BusHarness(networkManager: .yes, mode: "ignore")
        let id = try h.addWithReceipt("Train", seed: 5)
        try h.sync.waitUntilDrained(timeout: 60)
        #expect(try h.uploaded(id))
        let status = try h.status()
        #expect(status["network_metered"] == "yes" && status["metered_hold"] == .null && status["held"] == 0, "\(status)")
        #expect(h.daemon.log.contains("The link is metered (NetworkManager: yes); metered = ignore: nothing waits"))
    }

    @Test func withoutNetworkManager_nothingIsHeld_untilOneComesAndSaysMetered_andNothingOnceItLeaves() throws {
        let h = try BusHarness(networkManager: nil, mode: "pause")
        let first = try h.addWithReceipt("Museum", seed: 6)
        try h.sync.waitUntilDrained(timeout: 60)
        #expect(try h.uploaded(first), "no NetworkManager: nothing changes")
        #expect(try h.status()["network_metered"] == .null)
        let text = try h.daemon.ctl(["status"])
        #expect(text.stdout.contains("Network:          no NetworkManager on the system bus: nothing is held (metered = pause)"), "\(text.stdout)")

        // NetworkManager appears (NameOwnerChanged), saying metered.
        try h.bus.control("SetMetered", "u", ["1"])
        try h.bus.startNetworkManager()
        try h.waitForNetwork("yes")
        let second = try h.addWithReceipt("Gallery", seed: 7)
        try h.waitUntilUploadReady(second)
        try h.waitForFreshPasses()
        #expect(try h.onServer(second) == nil, "pause: held")

        // It leaves: nobody says metered, so nothing is held.
        try h.bus.stopNetworkManager()
        try h.sync.waitUntilDrained(timeout: 60)
        #expect(try h.uploaded(second))
        #expect(h.daemon.log.contains("NetworkManager left the system bus; the link counts as not metered"))
    }

    @Test func aLostSystemBus_holdsNothing_andTheDaemonConnectsAgain() throws {
        let h = try BusHarness(networkManager: .yes, mode: "pause")
        let id = try h.addWithReceipt("Ferry", seed: 8)
        try h.waitUntilUploadReady(id)
        try h.waitForFreshPasses()
        #expect(try h.onServer(id) == nil)

        h.bus.stopBus()
        try h.sync.waitUntilDrained(timeout: 60)
        #expect(try h.uploaded(id), "no bus: nothing is held")
        #expect(h.daemon.log.contains("Lost the system bus"))

        try h.bus.restart(networkManager: .yes)
        try h.waitForLog("Connected to the system bus '\(h.bus.address)' again")
        try h.waitForNetwork("yes")
        let later = try h.addWithReceipt("Bridge", seed: 9)
        try h.waitUntilUploadReady(later)
        try h.waitForFreshPasses()
        #expect(try h.onServer(later) == nil, "held again once the bus is back")
    }
}

/// A resume from sleep (logind's `PrepareForSleep(false)`, heard on the
/// system bus) sends what waits for the network at once, as a link coming
/// up does: the drain timer is a day, and the job failed for the transport.
@Suite struct SleepResumeTests {
    @Test func aResumeFromSleep_sendsAJobThatFailedForTheTransport_withoutWaitingForTheTimer() throws {
        let h = try BusHarness(networkManager: .no, mode: nil, daemonArguments: ["--drain-interval", "1d", "--refresh-interval", "7d"],
                               startServer: false)
        let id = try #require(try h.daemon.ctlJSON(["add", "--merchant", "Night Bus", "--amount", "4.50", "--currency", "EUR"])["transaction_id"]?.stringValue)
        try waitUntil(timeout: 60, "the create to fail for the transport") {
            try h.jobs(id).contains { $0["last_error_class"] == "transport" }
        }
        try h.sync.startServer()
        try h.bus.prepareForSleep(true)
        try h.bus.prepareForSleep(false)
        try h.sync.waitUntilDrained(timeout: 60)
        #expect(try h.sync.serverRecords().map(\.transactionID) == [id])
        #expect(h.daemon.log.contains("Network change (resumed from sleep); sending now"), "\(h.daemon.log)")
    }
}
