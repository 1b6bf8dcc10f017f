import DaemonSupport
import Posix
import SyncEngine
import Systemd

/// Hears logind and NetworkManager on the system bus (docs/sync.md, "When
/// the network comes back" and "Metered links"): a resume from sleep
/// (`PrepareForSleep(false)`) wakes the drain as a link coming up does, and
/// NetworkManager's `Metered` says what a metered link holds; without
/// NetworkManager, nothing is. On its own thread, with its own connection
/// (sd-bus): when the bus goes away it says so, counts the link as not
/// metered, and connects again after a backoff. Nothing is sent from it.
final class BusWatch: Sendable {
    private let stopping: EventNotifier
    private let logger: Logger
    private let events: Events

    /// What the watch tells the daemon.
    struct Events: Sendable {
        /// The machine resumed from sleep.
        let resumed: @Sendable () -> Void
        /// NetworkManager's `Metered`, or nil when no NetworkManager says
        /// (none on the bus, or no bus); called when it changes.
        let metered: @Sendable (NetworkMetered?) -> Void
    }

    /// The longest wait before connecting again; the first is a second.
    static let reconnectCapMilliseconds: Int32 = 60_000
    /// How long a call to the bus (a match, NetworkManager's property) may take.
    static let callTimeoutMicroseconds: UInt64 = 5_000_000

    init(logger: Logger, events: Events) throws(SystemCallError) {
        stopping = try EventNotifier()
        self.logger = logger
        self.events = events
    }

    func start() {
        Threads.spawn(name: "bus") { [self] in loop() }
    }

    func stop() { stopping.signal() }

    private func loop() {
        var delay: Int32 = 1000
        // What was told last: the first connection tells the link's state
        // even when it is "nobody says".
        var told: NetworkMetered?? = .none
        var failing = false
        while true {
            let session: BusSession
            do {
                session = try BusSession(logger: logger, events: events, told: told)
                if failing { logger.notice("Connected to the system bus '\(Bus.systemAddress)' again") }
                failing = false
                delay = 1000
            } catch {
                if !failing {
                    logger.warning("Failed to connect to the system bus '\(Bus.systemAddress)': \(error.reason); resume from sleep and metered links are not heard until it answers (nothing is held), trying again")
                    failing = true
                }
                tell(nil, &told)
                if waitForStop(milliseconds: delay) { return }
                delay = min(delay * 2, Self.reconnectCapMilliseconds)
                continue
            }
            let ended = session.run(stoppingOn: stopping)
            told = session.told
            guard let error = ended else { return }
            logger.warning("Lost the system bus (\(error)); resume from sleep and metered links are not heard until it is back (nothing is held), connecting again")
            failing = true
            tell(nil, &told)
            if waitForStop(milliseconds: delay) { return }
            delay = min(delay * 2, Self.reconnectCapMilliseconds)
        }
    }

    /// Tells `value` unless it was the last told.
    private func tell(_ value: NetworkMetered?, _ told: inout NetworkMetered??) {
        if case .some(let last) = told, last == value { return }
        told = .some(value)
        events.metered(value)
    }

    /// Waits for a stop, at most `milliseconds` (a backoff).
    /// - Returns: true when stopped.
    private func waitForStop(milliseconds: Int32) -> Bool {
        let ready = (try? Poll.wait([(stopping.descriptor, .readable)], timeoutMilliseconds: milliseconds)) ?? []
        return !(ready.first ?? []).isEmpty
    }
}

/// One connection to the system bus and what it heard; used by the watch's
/// thread alone (sd-bus is not thread-safe).
private final class BusSession {
    static let networkManager = "org.freedesktop.NetworkManager"
    static let networkManagerPath = "/org/freedesktop/NetworkManager"
    static let properties = "org.freedesktop.DBus.Properties"

    let bus: Bus
    let logger: Logger
    let events: BusWatch.Events
    /// What was told last (none: nothing yet).
    private(set) var told: NetworkMetered??
    /// NetworkManager was found not running (said once per connection).
    private var saidAbsent = false

    init(logger: Logger, events: BusWatch.Events, told: NetworkMetered??) throws(SystemCallError) {
        self.logger = logger
        self.events = events
        self.told = told
        bus = try Bus.system(description: "expensed")
        bus.setMethodCallTimeout(microseconds: BusWatch.callTimeoutMicroseconds)
        // Every match before the first read of Metered: no change between is missed.
        try bus.matchSignal(sender: "org.freedesktop.login1", path: "/org/freedesktop/login1", interface: "org.freedesktop.login1.Manager",
                            member: "PrepareForSleep") { [unowned self] in preparingForSleep($0) }
        try bus.addMatch("type='signal',sender='org.freedesktop.DBus',path='/org/freedesktop/DBus',interface='org.freedesktop.DBus',member='NameOwnerChanged',arg0='\(Self.networkManager)'") {
            [unowned self] in ownerChanged($0)
        }
        try bus.matchSignal(sender: Self.networkManager, path: Self.networkManagerPath, interface: Self.properties, member: "PropertiesChanged") {
            [unowned self] in propertiesChanged($0)
        }
        try readMetered()
    }

    /// Serves until stopped (nil) or the bus fails (why).
    func run(stoppingOn stopping: EventNotifier) -> String? {
        do {
            while true {
                while try bus.process() {}
                guard bus.isOpen else { return "the bus closed the connection" }
                if try bus.wait(stoppingOn: stopping) { return nil }
            }
        } catch {
            return error.reason
        }
    }

    private func tell(_ value: NetworkMetered?) {
        if case .some(let last) = told, last == value { return }
        told = .some(value)
        events.metered(value)
    }

    /// `PrepareForSleep(b)`: true before sleeping, false after resuming.
    private func preparingForSleep(_ message: BusMessage) {
        guard let sleeping = try? message.readBool() else { return }
        if sleeping {
            // No inhibitor: the outbox is durable, and a pass cut short by
            // sleep is resumed (its claimed jobs go back to the queue).
            logger.debug("Going to sleep; sending resumes after")
        } else {
            events.resumed()
        }
    }

    /// `NameOwnerChanged(s name, s old, s new)` for NetworkManager's name.
    private func ownerChanged(_ message: BusMessage) {
        guard (try? message.readString()) == Self.networkManager, (try? message.readString()) != nil,
              let owner = try? message.readString() else { return }
        if owner.isEmpty {
            logger.notice("NetworkManager left the system bus; the link counts as not metered")
            tell(nil)
        } else {
            logger.info("NetworkManager is on the system bus; reading whether the link is metered")
            saidAbsent = false
            do {
                try readMetered()
            } catch {
                logger.warning("Failed to ask NetworkManager whether the link is metered: \(error.reason); it counts as not metered, ignoring")
            }
        }
    }

    /// `PropertiesChanged(s interface, a{sv} changed, as invalidated)`.
    private func propertiesChanged(_ message: BusMessage) {
        do {
            guard try message.readString() == Self.networkManager else { return }
            guard try message.enterContainer("a", contents: "{sv}") else { return }
            while try message.enterContainer("e", contents: "sv") {
                if try message.readString() == "Metered", let value = try Self.readUInt32Variant(message) {
                    tell(NetworkMetered(networkManagerValue: value))
                } else {
                    try message.skip("v")
                }
                try message.exitContainer()
            }
            try message.exitContainer()
            // A property invalidated is read again.
            guard try message.enterContainer("a", contents: "s") else { return }
            var invalidated = false
            while try message.peek() != nil {
                if try message.readString() == "Metered" { invalidated = true }
            }
            try message.exitContainer()
            if invalidated { try readMetered() }
        } catch {
            logger.warning("Failed to read NetworkManager's PropertiesChanged: \(error.reason), ignoring")
        }
    }

    /// A variant holding a `u`, read; nil (and the variant left unread) for another type.
    private static func readUInt32Variant(_ message: BusMessage) throws(SystemCallError) -> UInt32? {
        guard let next = try message.peek(), next.type == "v", next.contents == "u" else { return nil }
        _ = try message.enterContainer("v", contents: "u")
        let value = try message.readUInt32()
        try message.exitContainer()
        return value
    }

    /// Asks NetworkManager for `Metered`; the answer is told when it comes.
    private func readMetered() throws(SystemCallError) {
        try bus.callMethod(destination: Self.networkManager, path: Self.networkManagerPath, interface: Self.properties, member: "Get",
                           arguments: [Self.networkManager, "Metered"], timeoutMicroseconds: BusWatch.callTimeoutMicroseconds) { [unowned self] reply in
            // A connection ending answers its calls with errors of its own: the loss is told once, by the loop.
            guard bus.isOpen else { return }
            if let error = reply.errorName {
                if error == "org.freedesktop.DBus.Error.ServiceUnknown" || error == "org.freedesktop.DBus.Error.NameHasNoOwner" {
                    if !saidAbsent { logger.info("NetworkManager is not on the system bus; no link counts as metered") }
                    saidAbsent = true
                } else {
                    logger.warning("Failed to read NetworkManager's Metered: \(error): \(reply.errorMessage ?? "no message"); the link counts as not metered, ignoring")
                }
                tell(nil)
                return
            }
            guard let value = try? Self.readUInt32Variant(reply) else {
                logger.warning("NetworkManager's Metered is not a 'u'; the link counts as not metered, ignoring")
                tell(nil)
                return
            }
            tell(NetworkMetered(networkManagerValue: value))
        }
    }
}
