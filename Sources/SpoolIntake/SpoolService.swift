import DaemonSupport
import ExpenseCore
import OutboxStore
import Posix

/// The spool service: a directory where writers drop receipts and
/// sidecars (docs/spool.md), each taken exactly once as an expense, or
/// moved to `rejected/` with a reason. Nothing in the spool is deleted
/// unless it has become a job.
///
/// ``open(_:settings:store:logger:events:)`` does the
/// blocking part before `READY=1`: checks the directory, starts watching
/// it, and finishes intakes that a crash interrupted. ``run()`` then takes
/// what the watcher hands out, several files at a time.
public final class SpoolService: Sendable {
    let directory: SpoolDirectory
    let watcher: SpoolWatcher
    let intake: SpoolIntake
    let logger: Logger

    /// Intakes in progress at once: enough to keep the disk and the group
    /// commit busy, few enough that open descriptors stay bounded.
    static let parallelIntakes = 16

    private init(directory: SpoolDirectory, watcher: SpoolWatcher, intake: SpoolIntake, logger: Logger) {
        self.directory = directory
        self.watcher = watcher
        self.intake = intake
        self.logger = logger
    }

    /// Opens and checks the spool directory, watches it, and finishes the
    /// intakes a crash interrupted. Blocking; call before `READY=1`.
    /// - Throws: ``StartupFailure``: exit status 78 (configuration)
    ///   for a spool that is unsafe or not a directory, 73 (cannot create)
    ///   when it cannot be created or opened, 71 when inotify fails (naming
    ///   the sysctl to raise when a per-user inotify limit was reached).
    public static func open(_ path: String, settings: SpoolSettings, store: Store, logger: Logger, events: SpoolEvents) throws -> SpoolService {
        let directory = try SpoolSetup.openDirectory(path, logger: logger)
        // Watch before anything is read, so a file dropped from now on is
        // either seen by the first scan or reported by inotify.
        let inotify: Inotify
        do {
            inotify = try Inotify()
            try inotify.addWatch(path, [.closeWrite, .movedTo, .create, .onlyDirectory, .deleteSelf, .moveSelf])
        } catch {
            throw SpoolSetup.watchFailure(error, path: path)
        }
        let scan = SpoolScanPlan.make(settings.scanInterval, path: path, fileSystem: directory.fileSystem())
        if scan.isWarning { logger.warning(scan.message) } else { logger.info(scan.message) }
        let intake = SpoolIntake(directory: directory, store: store, logger: logger, maxBytes: settings.maxBytes,
                                 settleMilliseconds: settings.settleMilliseconds, sidecarWindowMilliseconds: settings.sidecarWindowMilliseconds,
                                 onQueued: events.queued, onChange: events.changed, accountOfOwner: events.accountOfOwner,
                                 onWaitingCount: events.waitingForRoom)
        try SpoolSetup.finishInterruptedIntakes(directory: directory, store: store, intake: intake, logger: logger)
        let watcher: SpoolWatcher
        do {
            // Watched before the watcher's first act, counting it, so that
            // no change after the count is missed.
            let rejectedWatch = try inotify.addWatch("\(path)/\(SpoolDirectory.rejectedName.displayName)",
                                                     [.movedTo, .movedFrom, .create, .delete, .onlyDirectory, .dontFollow])
            watcher = try SpoolWatcher(directory: directory, inotify: inotify, rejectedWatch: rejectedWatch,
                                       settleMilliseconds: settings.settleMilliseconds, scanIntervalMilliseconds: scan.intervalMilliseconds,
                                       logger: logger, onRejectedCount: events.rejectedCount)
        } catch {
            throw SpoolSetup.watchFailure(error, path: path)
        }
        watcher.start()
        return SpoolService(directory: directory, watcher: watcher, intake: intake, logger: logger)
    }

    /// Takes files until the watcher stops, at most ``parallelIntakes`` at
    /// once; returns when the intakes in progress have finished.
    public func run() async {
        await withTaskGroup(of: Void.self) { group in
            var running = 0
            for await work in watcher.work {
                if running >= Self.parallelIntakes {
                    await group.next()
                    running -= 1
                }
                switch work {
                case .copyEarly(let name):
                    // Begun here, in order, so that the receipt's take,
                    // which comes later, finds it and waits for it.
                    guard let ticket = intake.earlyCopies.begin(name) else { continue }
                    group.addTask { [self] in await intake.copyEarly(name, ticket: ticket) }
                case .take(let take):
                    group.addTask { [self] in
                        let outcome = await intake.take(take)
                        intake.noteRoom(take, outcome)
                        watcher.finished(take, retryAfter: outcome.retryAfter)
                    }
                }
                running += 1
            }
        }
    }

    /// The outbox may have room again (a drain sent jobs, an expense was
    /// discarded): the files waiting for room are tried again soon, at most
    /// once a second however often this is said.
    public func roomFreed() {
        let names = intake.namesWaitingForRoom
        if !names.isEmpty { watcher.hurry(names) }
    }

    /// Stops taking new files; intakes in progress finish (``run()`` returns then).
    public func stop() {
        watcher.stop()
    }

    /// The spool directory's path, as configured.
    public var path: String { directory.path }

    /// Answers `answer` from the watcher's thread: the watchdog's proof
    /// that it still turns.
    public func probe(_ answer: @escaping @Sendable () -> Void) {
        watcher.probe(answer)
    }
}
