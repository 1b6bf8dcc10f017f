import ControlSocket
import DaemonSupport
import OutboxStore
import Posix
import Synchronization
import Systemd

/// Sends `WATCHDOG=1` only while the daemon's loops are alive: each tick
/// it probes the store's queue, the control socket's thread, the spool
/// watcher's thread and the drainer, and pings systemd only when all
/// answered within the tick.
/// A wedged loop therefore stops the pings, and systemd restarts the daemon.
final class Watchdog: Sendable {
    let intervalMilliseconds: Int64
    let store: Store
    let server: ControlServer
    let logger: Logger
    /// Whether the drainer is making progress (true when idle).
    let drainerIsAlive: @Sendable () -> Bool
    /// Called on every tick: watchdog ticks are a drain trigger.
    let onTick: @Sendable () -> Void
    /// Probes of other loops (the spool watcher's thread), asked like the
    /// store's and the socket's: each calls its argument once alive.
    let probes: [@Sendable (@escaping @Sendable () -> Void) -> Void]

    /// - Parameter watchdogMicroseconds: `WATCHDOG_USEC`; pings go out at half of it.
    init(watchdogMicroseconds: UInt64, store: Store, server: ControlServer, logger: Logger,
         drainerIsAlive: @escaping @Sendable () -> Bool, onTick: @escaping @Sendable () -> Void,
         probes: [@Sendable (@escaping @Sendable () -> Void) -> Void] = []) {
        intervalMilliseconds = max(Int64(watchdogMicroseconds / 2000), 50)
        self.store = store
        self.server = server
        self.logger = logger
        self.drainerIsAlive = drainerIsAlive
        self.onTick = onTick
        self.probes = probes
    }

    /// Each tick checks the answers to the previous tick's probes, pings
    /// systemd when all came, then probes again: one wake-up per tick.
    func run() async {
        var wasHealthy = true
        // The first tick has nothing to check yet: the daemon just started.
        ServiceManager.watchdog()
        while !Task.isCancelled {
            // A fresh tally each tick: an answer that comes a tick late
            // counts for nothing.
            let answers = Tally()
            store.probe { answers.add() }
            server.probe { answers.add() }
            for probe in probes { probe { answers.add() } }
            onTick()
            do {
                try await Task.sleep(for: .milliseconds(intervalMilliseconds))
            } catch {
                return
            }
            let healthy = answers.count == 2 + probes.count && drainerIsAlive()
            if healthy {
                ServiceManager.watchdog()
                if !wasHealthy { logger.notice("All loops answer again; watchdog pings resumed") }
            } else if wasHealthy {
                logger.error("A loop did not answer within \(intervalMilliseconds) ms; withholding watchdog pings")
            }
            wasHealthy = healthy
        }
    }

    /// Answers to one tick's probes.
    private final class Tally: Sendable {
        private let answers = Atomic<Int>(0)
        func add() { answers.add(1, ordering: .relaxed) }
        var count: Int { answers.load(ordering: .relaxed) }
    }
}
