import ExpenseTestSupport
import Foundation
import Posix
import Systemd
import Testing

/// The sd-bus wrapper against a real `dbus-daemon` of the test's own, with
/// the fake NetworkManager and logind on it (``FakeSystemBus``): signals
/// matched by a well-known sender, a match rule on an argument, an
/// asynchronous property read and its errors, and a bus that goes away.
@Suite struct BusTests {
    static let networkManager = "org.freedesktop.NetworkManager"
    static let nmPath = "/org/freedesktop/NetworkManager"
    static let properties = "org.freedesktop.DBus.Properties"

    /// Processes the bus until `condition` holds; fails after `timeout`
    /// (a thread signals the stop notifier then, so a wait cannot hang).
    static func pump(_ bus: Bus, timeout: Double = 20, _ what: String, until condition: () -> Bool) throws {
        let stop = try EventNotifier()
        let deadline = Date().addingTimeInterval(timeout * TestPatience.factor)
        DispatchQueue.global().asyncAfter(deadline: .now() + timeout * TestPatience.factor) { stop.signal() }
        while true {
            while try bus.process() {}
            if condition() { return }
            guard Date() < deadline, try !bus.wait(stoppingOn: stop) else { throw TestFailure("timed out waiting for \(what)") }
        }
    }

    /// A read that failed: the bus's error name, or what could not be read.
    struct ReadFailure: Error, Equatable {
        let reason: String
        init(_ reason: String) { self.reason = reason }
    }

    /// Reads NetworkManager's `Metered` as the daemon does: a variant holding a `u`.
    static func readMetered(_ bus: Bus, into result: @escaping (Result<UInt32, ReadFailure>) -> Void) throws {
        try bus.callMethod(destination: networkManager, path: nmPath, interface: properties, member: "Get",
                           arguments: [networkManager, "Metered"]) { reply in
            if let error = reply.errorName {
                result(.failure(ReadFailure(error)))
                return
            }
            do {
                #expect(try reply.peek()?.type == "v" && reply.peek()?.contents == "u")
                #expect(try reply.enterContainer("v", contents: "u"))
                let value = try reply.readUInt32()
                try reply.exitContainer()
                #expect(try reply.peek() == nil, "nothing after the variant")
                result(.success(value))
            } catch {
                result(.failure(ReadFailure("\(error)")))
            }
        }
    }

    @Test func aPropertyRead_signalsOfAWellKnownSender_andAnArgumentMatch() throws {
        let fake = try FakeSystemBus(networkManager: .guessYes)
        let bus = try Bus.open(address: fake.address, description: "bus-test")
        #expect(bus.isOpen)

        var read: Result<UInt32, ReadFailure>?
        try Self.readMetered(bus) { read = $0 }
        try Self.pump(bus, "Metered's value") { read != nil }
        #expect(try read?.get() == FakeSystemBus.Metered.guessYes.rawValue)

        // PropertiesChanged(s, a{sv}, as), with another property beside Metered.
        var changed: [String: UInt32] = [:]
        try bus.matchSignal(sender: Self.networkManager, path: Self.nmPath, interface: Self.properties, member: "PropertiesChanged") { message in
            do {
                #expect(try message.readString() == Self.networkManager)
                #expect(try message.enterContainer("a", contents: "{sv}"))
                while try message.enterContainer("e", contents: "sv") {
                    let name = try message.readString()
                    #expect(try message.enterContainer("v", contents: "u"))
                    changed[name] = try message.readUInt32()
                    try message.exitContainer()
                    try message.exitContainer()
                }
                try message.exitContainer()
                try message.skip("as")
            } catch {
                Issue.record("PropertiesChanged: \(error)")
            }
        }
        try fake.setMetered(.no)
        try Self.pump(bus, "PropertiesChanged") { changed["Metered"] != nil }
        #expect(changed == ["Metered": FakeSystemBus.Metered.no.rawValue, "Connectivity": 4])

        // logind's signal, matched by its well-known name.
        var sleeps: [Bool] = []
        try bus.matchSignal(sender: "org.freedesktop.login1", path: "/org/freedesktop/login1", interface: "org.freedesktop.login1.Manager",
                            member: "PrepareForSleep") { message in
            do { sleeps.append(try message.readBool()) } catch { Issue.record("PrepareForSleep: \(error)") }
        }
        try fake.prepareForSleep(true)
        try fake.prepareForSleep(false)
        try Self.pump(bus, "two PrepareForSleep signals") { sleeps.count == 2 }
        #expect(sleeps == [true, false])

        // A match rule on the first argument: NetworkManager's name only.
        var owners: [(old: String, new: String)] = []
        try bus.addMatch("type='signal',sender='org.freedesktop.DBus',member='NameOwnerChanged',arg0='\(Self.networkManager)'") { message in
            do {
                #expect(try message.readString() == Self.networkManager)
                owners.append((try message.readString(), try message.readString()))
            } catch {
                Issue.record("NameOwnerChanged: \(error)")
            }
        }
        try fake.stopNetworkManager()
        try Self.pump(bus, "NetworkManager to leave") { owners.count == 1 }
        #expect(owners.first.map { !$0.old.isEmpty && $0.new.isEmpty } == true, "\(owners)")

        // Its name has no owner now: the read fails with the bus's error
        // (NameHasNoOwner: the call asks for no auto-start).
        read = nil
        try Self.readMetered(bus) { read = $0 }
        try Self.pump(bus, "the read to fail") { read != nil }
        #expect(throws: ReadFailure("org.freedesktop.DBus.Error.NameHasNoOwner")) { try read?.get() }

        try fake.startNetworkManager()
        try Self.pump(bus, "NetworkManager to come back") { owners.count == 2 }
        #expect(owners.last.map { $0.old.isEmpty && !$0.new.isEmpty } == true, "\(owners)")
        read = nil
        try Self.readMetered(bus) { read = $0 }
        try Self.pump(bus, "Metered's value again") { read != nil }
        #expect(try read?.get() == FakeSystemBus.Metered.no.rawValue)
    }

    @Test func aBusThatGoesAway_failsProcessingOrCloses_andAnAbsentOne_cannotBeOpened() throws {
        let fake = try FakeSystemBus(networkManager: nil)
        let bus = try Bus.open(address: fake.address, description: "bus-test")
        var read: Result<UInt32, ReadFailure>?
        try Self.readMetered(bus) { read = $0 }
        try Self.pump(bus, "the read") { read != nil }
        #expect(throws: ReadFailure("org.freedesktop.DBus.Error.NameHasNoOwner"), "no NetworkManager on this bus") { try read?.get() }

        // Gone: processing fails (the connection reset), or the bus closes.
        fake.stopBus()
        do {
            try Self.pump(bus, "the bus to be gone") { !bus.isOpen }
        } catch let error as SystemCallError {
            #expect(error.call == "sd_bus_process", "\(error)")
        }
        #expect(!bus.isOpen)

        #expect(throws: SystemCallError.self) { try Bus.open(address: "unix:path=\(fake.directory.at("nothing-here"))", description: "bus-test") }
    }
}
