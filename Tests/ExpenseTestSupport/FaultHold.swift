import Foundation

/// A fault point armed to `hold` (docs/testing.md, "Fault points"): the
/// daemon's thread stops there until the test lets it go, so a window the
/// test acts in lasts as long as the test needs, not a guess at how fast
/// the machine is.
public struct FaultHold: Sendable {
    /// The point, as the daemon names it in its log.
    public let point: String
    /// Which hit holds (1: the first).
    public let hit: Int
    let fifo: String

    /// Arms `daemon`, not started yet: makes the release FIFO in its
    /// folder and sets the fault in its environment.
    public init(_ point: String, hit: Int = 1, on daemon: DaemonHarness) throws {
        (self.point, self.hit) = (point, hit)
        fifo = daemon.directory.at("fault-release-\(point).fifo")
        guard mkfifo(fifo, 0o600) == 0 else { throw TestFailure("mkfifo \(fifo): errno \(errno)") }
        daemon.environment.merge(["EXPENSED_FAULT": "\(point):hold@\(hit)", "EXPENSED_FAULT_RELEASE": fifo]) { $1 }
    }

    /// Waits until `daemon` says it holds there.
    public func waitUntilHeld(_ daemon: DaemonHarness, timeout: Double = 30) throws {
        try waitUntil(timeout: timeout, "fault point \(point) to hold") { daemon.log.contains("fault point \(point): holding until released") }
    }

    /// Lets the held thread go on. It must be holding (``waitUntilHeld(_:timeout:)``):
    /// opening the FIFO waits for its reader.
    public func release(_ daemon: DaemonHarness) throws {
        try waitUntilHeld(daemon)
        let file = open(fifo, O_WRONLY | O_CLOEXEC)
        guard file >= 0 else { throw TestFailure("open \(fifo): errno \(errno)") }
        defer { close(file) }
        guard write(file, "x", 1) == 1 else { throw TestFailure("write \(fifo): errno \(errno)") }
    }
}
