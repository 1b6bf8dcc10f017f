import DaemonSupport
import ExpenseCore
import Posix
import Synchronization

/// Watches the spool directory on a thread of its own (inotify reads and
/// `poll` block) and hands out what to take, when, through ``takes``.
///
/// A file is noticed when it is closed after writing (`IN_CLOSE_WRITE`) or
/// renamed in (`IN_MOVED_TO`); something that is not a regular file, or a
/// hard link, when it is created (`IN_CREATE`). The whole directory is scanned at start and
/// after the kernel's event queue overflowed, so nothing dropped while the
/// daemon was down, or during an overflow, is missed; a file a scan finds
/// still being written waits until it has been left alone for the settle time.
/// With a scan interval (a spool on a network file system, where inotify
/// does not see other machines' writes), it is also scanned that often, for
/// names it does not know yet, by the same rules.
///
/// It also keeps count of the files in `rejected/` (``RejectedCount``) from
/// that directory's own events, so that `status` says what is there now,
/// after a restart too, and without listing it.
final class SpoolWatcher: Sendable {
    let directory: SpoolDirectory
    let inotify: Inotify
    let settleMilliseconds: Int64
    /// How often to scan besides inotify; nil: only at start and after an overflow.
    let scanIntervalMilliseconds: Int64?
    let logger: Logger
    /// The watch on `rejected/`, and what to tell when its count changes.
    let rejectedWatch: Int32
    let onRejectedCount: @Sendable (Int) -> Void
    /// What to do, in order; finished when the watcher stops.
    let work: AsyncStream<Work>
    private let continuation: AsyncStream<Work>.Continuation
    private let wakeup: EventNotifier
    private let inbox = Mutex(Inbox())

    enum Work: Sendable, Equatable {
        /// Take these files now.
        case take(SpoolSchedule.Take)
        /// This receipt waits for its sidecar: copy it meanwhile.
        case copyEarly(FileName)
    }

    private struct Inbox {
        var finished: [(take: SpoolSchedule.Take, retryAfter: Int64?)] = []
        var pings: [@Sendable () -> Void] = []
        var stopping = false
        /// Files waiting for room to try again soon (``hurry(_:)``).
        var hurry: Set<FileName> = []
    }

    /// - Parameters:
    ///   - inotify: watching the spool already, so that nothing dropped
    ///     between this and the first scan is missed, and `rejected/`
    ///     (`rejectedWatch`), which ``start()`` counts.
    ///   - onRejectedCount: called with the number of files in `rejected/`:
    ///     from the thread that calls ``start()`` at start, then from the
    ///     watcher thread whenever it changes.
    ///   - scanIntervalMilliseconds: how often to scan besides inotify; nil: never.
    init(directory: SpoolDirectory, inotify: Inotify, rejectedWatch: Int32, settleMilliseconds: Int64, scanIntervalMilliseconds: Int64? = nil,
         logger: Logger, onRejectedCount: @escaping @Sendable (Int) -> Void) throws(SystemCallError) {
        self.directory = directory
        self.inotify = inotify
        self.rejectedWatch = rejectedWatch
        self.onRejectedCount = onRejectedCount
        self.settleMilliseconds = settleMilliseconds
        self.scanIntervalMilliseconds = scanIntervalMilliseconds
        self.logger = logger
        wakeup = try EventNotifier()
        (work, continuation) = AsyncStream.makeStream(of: Work.self)
    }

    /// Counts `rejected/` (reported before this returns, so that the
    /// daemon's first `status` shows it), then starts the thread; its
    /// first act is a full scan.
    func start() {
        var counted = SpoolWatchLoop(watcher: self)
        counted.countRejected()
        Threads.spawn(name: "spool") { [self, counted] in
            var loop = counted
            loop.run()
            continuation.finish()
        }
    }

    /// `take` is done; its names may be taken again. Safe from any thread.
    /// - Parameter retryAfter: try its files again after this many milliseconds.
    func finished(_ take: SpoolSchedule.Take, retryAfter: Int64? = nil) {
        inbox.withLock { $0.finished.append((take, retryAfter)) }
        wakeup.signal()
    }

    /// The outbox may have room: `names`, waiting for it, are taken again
    /// soon, at most once a second (a drain frees room a little at a time,
    /// and each try of a file that still does not fit costs a look at it).
    /// Safe from any thread.
    func hurry(_ names: Set<FileName>) {
        inbox.withLock { $0.hurry.formUnion(names) }
        wakeup.signal()
    }

    /// Stops handing out takes; files still waiting stay in the spool for
    /// the next start.
    func stop() {
        inbox.withLock { $0.stopping = true }
        wakeup.signal()
    }

    /// Calls `answer` from the watcher thread once it has gone round its
    /// loop: proof that it is alive (the watchdog asks this). Once stopping,
    /// answers at once: a watcher told to stop is not wedged.
    func probe(_ answer: @escaping @Sendable () -> Void) {
        let stopping = inbox.withLock { inbox -> Bool in
            if !inbox.stopping { inbox.pings.append(answer) }
            return inbox.stopping
        }
        if stopping { answer() } else { wakeup.signal() }
    }

    fileprivate func emit(_ new: [SpoolSchedule.Take]) {
        for take in new { continuation.yield(.take(take)) }
    }

    fileprivate func copyEarly(_ name: FileName) {
        continuation.yield(.copyEarly(name))
    }

    fileprivate func collectInbox() -> (finished: [(take: SpoolSchedule.Take, retryAfter: Int64?)], hurry: Set<FileName>, stopping: Bool) {
        wakeup.drain()
        let (finished, pings, hurry, stopping) = inbox.withLock { inbox in
            defer {
                inbox.finished = []
                inbox.pings = []
                inbox.hurry = []
            }
            return (inbox.finished, inbox.pings, inbox.hurry, inbox.stopping)
        }
        for ping in pings {
            FaultPoints.hit("spool-probe")
            ping()
        }
        return (finished, hurry, stopping)
    }

    fileprivate var wakeupDescriptor: FileDescriptor { wakeup.descriptor }
}

/// The watcher thread's state: touched by that thread only.
private struct SpoolWatchLoop {
    let watcher: SpoolWatcher
    var schedule: SpoolSchedule
    /// Files a scan found that were modified within the settle time, so
    /// may still be written in place: taken once left alone that long.
    var unsettled: [FileName: Unsettled] = [:]
    var isWatching = true
    var rejected = RejectedCount()
    /// When the next periodic scan is due (monotonic ms); nil: none.
    var nextScan: Int64?
    /// The last periodic scan failed (and said so).
    var periodicScanFailed = false
    /// When files waiting for room were last brought forward to (monotonic ms).
    var lastHurry: Int64 = .min / 2

    /// The shortest time between two tries of the files waiting for room.
    static let hurryGapMilliseconds: Int64 = 1000

    struct Unsettled {
        var size: Int64
        var modified: Int64
        var checkAt: Int64
        /// Found by a periodic scan: waits for its partner until the next one.
        var isPeriodic = false
    }

    init(watcher: SpoolWatcher) {
        self.watcher = watcher
        schedule = SpoolSchedule(settleMilliseconds: watcher.settleMilliseconds)
    }

    static var now: Int64 { Int64(Clock.monotonicNanoseconds / 1_000_000) }

    mutating func run() {
        if scan() {
            watcher.logger.debug("Scanned spool directory '\(watcher.directory.path)' at start")
        }
        nextScan = watcher.scanIntervalMilliseconds.map { Self.now + $0 }
        while true {
            let now = Self.now
            let due = [schedule.nextDue, unsettled.values.map(\.checkAt).min(), isWatching ? nextScan : nil].compactMap { $0 }.min()
            let timeout = due.map { Int32(clamping: max(0, $0 - now)) } ?? -1
            var sources: [(FileDescriptor, Poll.Events)] = [(watcher.wakeupDescriptor, .readable)]
            if isWatching { sources.append((watcher.inotify.descriptor, .readable)) }
            let ready: [Poll.Events]
            do {
                ready = try Poll.wait(sources, timeoutMilliseconds: timeout)
            } catch {
                watcher.logger.error("Failed to wait for spool events: \(error.reason); no longer watching '\(watcher.directory.path)'")
                return
            }
            let (finished, hurry, stopping) = watcher.collectInbox()
            if stopping { return }
            for item in finished {
                watcher.emit(schedule.finished(item.take, now: Self.now, retryAfter: item.retryAfter))
            }
            if !hurry.isEmpty {
                // A try already set for later takes these too; else now, or a gap after the last.
                let now = Self.now
                lastHurry = lastHurry > now ? lastHurry : max(now, lastHurry + Self.hurryGapMilliseconds)
                schedule.hurry(hurry, due: lastHurry)
            }
            if isWatching && ready.count > 1 && !ready[1].isEmpty { readEvents() }
            if isWatching, let interval = watcher.scanIntervalMilliseconds, let next = nextScan, Self.now >= next {
                scan(onlyNew: true)
                nextScan = Self.now + interval
            }
            checkUnsettled()
            watcher.emit(schedule.takeDue(now: Self.now))
        }
    }

    mutating func readEvents() {
        let events: [Inotify.Event]
        do {
            events = try watcher.inotify.readEvents()
        } catch {
            watcher.logger.error("Failed to read spool events: \(error.reason); no longer watching '\(watcher.directory.path)'")
            isWatching = false
            return
        }
        var overflowed = false
        for event in events {
            if event.mask.contains(.queueOverflow) {
                overflowed = true
            } else if event.watch == watcher.rejectedWatch {
                rejected.apply(event)
            } else if let name = event.name {
                if event.mask.contains(.create) {
                    created(name)
                } else {
                    arrived(name)
                }
            } else if !event.mask.intersection([.ignored, .deleteSelf, .moveSelf, .unmount]).isEmpty, isWatching {
                watcher.logger.error("Spool directory '\(watcher.directory.path)' was removed, moved or unmounted; no longer watching it")
                isWatching = false
            }
        }
        if overflowed {
            watcher.logger.warning("Spool events were lost (inotify queue overflow); scanning '\(watcher.directory.path)' again")
            countRejected()
            scan()
        }
        if let count = rejected.takeChange() { watcher.onRejectedCount(count) }
    }

    /// Counts `rejected/` afresh: at start, and when events were lost.
    mutating func countRejected() {
        do {
            rejected.reset(to: try watcher.directory.rejectedCount())
        } catch {
            watcher.logger.warning("Failed to count the files in '\(watcher.directory.path)/rejected': \(error.reason), ignoring")
        }
        if let count = rejected.takeChange() { watcher.onRejectedCount(count) }
    }

    /// - Parameter periodic: found by a periodic scan, with no event: a
    ///   receipt or sidecar alone then waits for its partner until the next
    ///   scan has looked (its partner may be written just after this scan,
    ///   and then no event tells of it either).
    mutating func arrived(_ name: FileName, periodic: Bool = false) {
        guard !SpoolDirectory.isIgnored(name) else { return }
        unsettled[name] = nil
        let settle = periodic ? watcher.scanIntervalMilliseconds.map { $0 + watcher.settleMilliseconds } : nil
        let takes = schedule.arrived(name, now: Self.now, settle: settle)
        if let receipt = schedule.receiptHolding(name) {
            watcher.logger.info("Spool file '\(name.displayName)' waits until its receipt '\(receipt.displayName)', being taken, is queued")
        }
        // A receipt left waiting for its sidecar is copied meanwhile.
        if takes.isEmpty && watcher.settleMilliseconds > 0 && schedule.isWaiting(name)
            && SpoolSchedule.role(of: name) == .receipt {
            watcher.copyEarly(name)
        }
        watcher.emit(takes)
    }

    /// A new name: a regular file being written is taken once closed
    /// (`IN_CLOSE_WRITE`), but what can never be closed after writing (a
    /// symbolic link, FIFO, socket, device, directory, or a hard link to a
    /// file) arrives now, to be rejected.
    mutating func created(_ name: FileName) {
        guard !SpoolDirectory.isIgnored(name), let status = try? watcher.directory.status(of: name) else { return }
        if status.kind != .regular || status.linkCount > 1 { arrived(name) }
    }

    /// Every name in the spool arrives, but regular files modified within
    /// the settle time wait to be left alone first.
    /// - Parameter onlyNew: a periodic scan: names that wait, are being
    ///   taken, or are being watched for writes already are left as they
    ///   are (arriving again would make them wait anew).
    /// - Returns: whether the spool could be listed.
    @discardableResult
    mutating func scan(onlyNew: Bool = false) -> Bool {
        let names: [FileName]
        do {
            names = try watcher.directory.names()
        } catch {
            // A network file system that is away fails every periodic
            // scan alike: said once, until a scan works again.
            if !(onlyNew && periodicScanFailed) {
                watcher.logger.error("Failed to scan spool directory '\(watcher.directory.path)': \(error.reason)\(onlyNew ? "; trying again every \(DurationText.describe(milliseconds: watcher.scanIntervalMilliseconds ?? 0))" : "")")
            }
            periodicScanFailed = periodicScanFailed || onlyNew
            return false
        }
        if onlyNew && periodicScanFailed {
            watcher.logger.notice("Scanned spool directory '\(watcher.directory.path)' again")
            periodicScanFailed = false
        }
        for name in names {
            if onlyNew {
                guard unsettled[name] == nil, !schedule.isKnown(name) else { continue }
                watcher.logger.debug("Spool scan found '\(name.displayName)', which no event reported")
            }
            let status = try? watcher.directory.status(of: name)
            if let status, status.kind == .regular, isRecent(status) {
                unsettled[name] = Unsettled(size: status.size, modified: status.modifiedNanoseconds,
                                            checkAt: Self.now + watcher.settleMilliseconds, isPeriodic: onlyNew)
            } else {
                arrived(name, periodic: onlyNew)
            }
        }
        return true
    }

    func isRecent(_ status: FileStatus) -> Bool {
        Clock.wallMilliseconds - status.modifiedNanoseconds / 1_000_000 < watcher.settleMilliseconds
    }

    /// Unsettled files unchanged for the settle time (or last modified
    /// longer ago than that) arrive; changed ones wait again.
    mutating func checkUnsettled() {
        let now = Self.now
        for (name, entry) in unsettled where entry.checkAt <= now {
            guard let status = try? watcher.directory.status(of: name) else {
                unsettled[name] = nil
                continue
            }
            let unchanged = status.size == entry.size && status.modifiedNanoseconds == entry.modified
            if unchanged || !isRecent(status) {
                arrived(name, periodic: entry.isPeriodic)
            } else {
                unsettled[name] = Unsettled(size: status.size, modified: status.modifiedNanoseconds,
                                            checkAt: now + watcher.settleMilliseconds, isPeriodic: entry.isPeriodic)
            }
        }
    }
}

/// The number of files in `rejected/`, kept from its inotify events: a
/// file moved in (by the daemon) or created there counts, one removed or
/// moved out no longer does; reason files never count (no rejected file's
/// name ends in `.reason`: ``SpoolDirectory/reject(_:original:reason:timestamp:)``).
/// A pure state machine, fed by the watcher thread.
struct RejectedCount {
    private(set) var count = 0
    private var reported: Int?

    mutating func reset(to count: Int) {
        self.count = count
    }

    mutating func apply(_ event: Inotify.Event) {
        guard let name = event.name, !SpoolDirectory.isReasonName(name) else { return }
        if !event.mask.intersection([.movedTo, .create]).isEmpty {
            count += 1
        } else if !event.mask.intersection([.movedFrom, .delete]).isEmpty {
            count = max(0, count - 1)
        }
    }

    /// The count, when it differs from the one last taken.
    mutating func takeChange() -> Int? {
        guard reported != count else { return nil }
        reported = count
        return count
    }
}
