import Foundation

/// A private D-Bus bus of the test's own (Debian's `dbus-daemon`, its socket
/// in a temporary folder) with a fake NetworkManager and logind on it
/// (Tests/Fakes/fake-system-bus.py, on Debian's python3-dbus and
/// python3-gi): the daemon is pointed at it with `DBUS_SYSTEM_BUS_ADDRESS`
/// (``environment``), never at the machine's own bus. The test steers the
/// fakes with `busctl` calls (``setMetered(_:)``, ``prepareForSleep(_:)``…),
/// each answered once done. Both processes are stopped by pid.
public final class FakeSystemBus: @unchecked Sendable {
    public let directory = TemporaryDirectory(prefix: "bus")
    /// `unix:path=…/bus`.
    public let address: String
    private var daemon: ChildProcess?
    private var fakes: ChildProcess?

    /// NetworkManager's `NMMetered` values.
    public enum Metered: UInt32, Sendable, CaseIterable {
        case unknown = 0, yes = 1, no = 2, guessYes = 3, guessNo = 4
    }

    /// Starts the bus and, on it, logind and (with `metered`) NetworkManager
    /// saying so; `nil`: no NetworkManager.
    public init(networkManager metered: Metered?) throws {
        address = "unix:path=\(directory.at("bus"))"
        try start(networkManager: metered)
    }

    /// Starts the bus and the fakes again at the same address, after ``stop()``.
    public func restart(networkManager metered: Metered?) throws {
        stop()
        try? FileManager.default.removeItem(atPath: directory.at("bus"))
        try start(networkManager: metered)
    }

    private func start(networkManager metered: Metered?) throws {
        try startBus()
        var arguments = [Self.script, address]
        arguments += metered.map { ["--metered", String($0.rawValue)] } ?? ["--no-network-manager"]
        let fakes = try ChildProcess("/usr/bin/python3", arguments, environment: ["PYTHONDONTWRITEBYTECODE": "1", "PYTHONUNBUFFERED": "1"],
                                     outputDirectory: directory.path, name: "fake-system-bus")
        self.fakes = fakes
        try waitUntil(timeout: 30, "the fake NetworkManager and logind to be on the bus") {
            guard fakes.isRunning else { throw TestFailure("fake-system-bus.py exited: \(fakes.standardError)") }
            return fakes.standardOutput.contains("ready")
        }
    }

    deinit { stop() }

    /// What `expensed` is started with to use this bus as its system bus.
    public var environment: [String: String] { ["DBUS_SYSTEM_BUS_ADDRESS": address] }

    static var script: String { "\(BuiltProducts.packageRoot)/Tests/Fakes/fake-system-bus.py" }

    /// `dbus-daemon` with a configuration of the test's own: its socket in
    /// the test's folder, anyone may own any name and send anything.
    private func startBus() throws {
        let config = directory.at("bus.conf")
        let text = """
            <!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-BUS Bus Configuration 1.0//EN"
             "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
            <busconfig>
              <type>session</type>
              <listen>\(address)</listen>
              <auth>EXTERNAL</auth>
              <policy context="default">
                <allow user="*"/>
                <allow send_destination="*" eavesdrop="true"/>
                <allow eavesdrop="true"/>
                <allow own="*"/>
              </policy>
            </busconfig>
            """
        guard FileManager.default.createFile(atPath: config, contents: Data(text.utf8)) else { throw TestFailure("cannot write \(config)") }
        let daemon = try ChildProcess("/usr/bin/dbus-daemon", ["--config-file=\(config)", "--nofork", "--nopidfile", "--print-address=1"],
                                      outputDirectory: directory.path, name: "dbus-daemon")
        self.daemon = daemon
        // It prints its address once it listens.
        try waitUntil(timeout: 30, "dbus-daemon to listen") {
            guard daemon.isRunning else { throw TestFailure("dbus-daemon exited: \(daemon.standardError)") }
            return daemon.standardOutput.contains("unix:path=")
        }
    }

    /// Stops the fakes and the bus (the daemon then loses its bus).
    public func stop() {
        fakes?.stop()
        fakes = nil
        daemon?.stop()
        daemon = nil
    }

    /// Stops the bus alone: connected clients lose it (the fakes then exit).
    public func stopBus() {
        daemon?.stop()
        daemon = nil
    }

    /// Calls a method of the fakes' control object and returns `busctl`'s
    /// answer (`u 3`), once the fakes have done it.
    @discardableResult
    public func control(_ method: String, _ signature: String? = nil, _ arguments: [String] = []) throws -> String {
        var command = ["--address=\(address)", "call", "org.expensed.FakeSystemBus", "/org/expensed/FakeSystemBus", "org.expensed.FakeSystemBus", method]
        if let signature { command += [signature] + arguments }
        let result = try runCommand("/usr/bin/busctl", command, timeout: 30)
        guard result.status == 0 else { throw TestFailure("busctl \(method): \(result.stderr)") }
        return result.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// NetworkManager's `Metered` changes; `PropertiesChanged` says so.
    public func setMetered(_ value: Metered) throws { try control("SetMetered", "u", [String(value.rawValue)]) }

    /// NetworkManager's `Metered` changes; `PropertiesChanged` names it invalidated (read it again).
    public func invalidateMetered(_ value: Metered) throws { try control("InvalidateMetered", "u", [String(value.rawValue)]) }

    /// logind's `PrepareForSleep`: true before a sleep, false after the resume.
    public func prepareForSleep(_ sleeping: Bool) throws { try control("PrepareForSleep", "b", [sleeping ? "true" : "false"]) }

    /// NetworkManager leaves the bus (its name is given up) or comes back.
    public func stopNetworkManager() throws { try control("StopNetworkManager") }
    public func startNetworkManager() throws { try control("StartNetworkManager") }

    /// How many times `Metered` was read.
    public func meteredReads() throws -> Int {
        let answer = try control("MeteredReads")
        guard let count = Int(answer.split(separator: " ").last ?? "") else { throw TestFailure("MeteredReads answered '\(answer)'") }
        return count
    }
}
