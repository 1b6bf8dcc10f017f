import ExpenseCore
@testable import SpoolIntake
import Posix
import Testing

/// Which file systems the spool is also scanned on, and what start-up says
/// of it: pure decisions, as tables.
@Suite struct SpoolScanPlanTests {
    @Test(arguments: [
        (UInt32(0x6969), "nfs", true), (0xFF53_4D42, "cifs", true), (0xFE53_4D42, "smb2", true), (0x517B, "smb", true),
        (0x6573_5546, "fuse", true), (0x0102_1997, "9p", true), (0x00C3_6400, "ceph", true), (0x7461_636F, "ocfs2", true),
        (0xEF53, "ext4", false), (0x5846_5342, "xfs", false), (0x9123_683E, "btrfs", false), (0x0102_1994, "tmpfs", false),
        (0x794C_7630, "overlayfs", false),
    ])
    func classify_namesTheFileSystemAndWhetherOtherMachinesWriteToIt(_ magic: UInt32, _ name: String, _ isShared: Bool) {
        #expect(SpoolFileSystem.classify(magic) == SpoolFileSystem(magic: magic, name: name, isShared: isShared))
    }

    @Test func classify_anUnknownMagicNumber_isLocalAndShownInHex() {
        let unknown = SpoolFileSystem.classify(0x1234_ABCD)
        #expect(!unknown.isShared && unknown.name == nil)
        #expect(unknown.description == "a file system of type 0x1234abcd")
        #expect(SpoolFileSystem.classify(0x6969).description == "nfs (file system type 0x6969)")
    }

    static let nfs = Result<SpoolFileSystem, SystemCallErrorText>.success(.classify(0x6969))
    static let ext4 = Result<SpoolFileSystem, SystemCallErrorText>.success(.classify(0xEF53))
    static let failed = Result<SpoolFileSystem, SystemCallErrorText>.failure(SystemCallErrorText(text: "fstatfs: Input/output error"))

    @Test(arguments: [
        (SpoolScanInterval.automatic, nfs, Int64?(10_000), false,
         "Spool directory '/s' is on nfs (file system type 0x6969), where inotify does not see writes made by other machines: scanning it every 10s as well (spool_scan_interval = auto)"),
        (.automatic, ext4, nil, false,
         "Spool directory '/s' is on ext4 (file system type 0xef53): watched with inotify, no periodic scan (spool_scan_interval = auto)"),
        (.automatic, failed, 10_000, true,
         "Failed to tell the file system of spool directory '/s': fstatfs: Input/output error; scanning it every 10s as well, as on a network file system (spool_scan_interval = auto)"),
        (.every(milliseconds: 1500), ext4, 1500, false,
         "Spool directory '/s' is on ext4 (file system type 0xef53): scanning it every 1500ms as well (spool_scan_interval = 1500ms)"),
        (.every(milliseconds: 60_000), nfs, 60_000, false,
         "Spool directory '/s' is on nfs (file system type 0x6969): scanning it every 1m as well (spool_scan_interval = 1m)"),
        (.never, nfs, nil, true,
         "Spool directory '/s' is on nfs (file system type 0x6969), where inotify does not see writes made by other machines, and spool_scan_interval is off: files they write are taken only at the next start"),
        (.never, ext4, nil, false,
         "Spool directory '/s' is on ext4 (file system type 0xef53): watched with inotify, no periodic scan (spool_scan_interval = off)"),
    ])
    func plan_choosesTheIntervalAndSaysWhy(_ setting: SpoolScanInterval, _ fileSystem: Result<SpoolFileSystem, SystemCallErrorText>,
                                            _ interval: Int64?, _ isWarning: Bool, _ message: String) {
        let plan = SpoolScanPlan.make(setting, path: "/s", fileSystem: fileSystem)
        #expect(plan == SpoolScanPlan(intervalMilliseconds: interval, message: message, isWarning: isWarning))
    }

    /// A file a periodic scan found alone waits longer for its partner (until
    /// the next scan has looked), but a pair it found is taken at once.
    @Test func schedule_aLoneFileFoundByAPeriodicScan_waitsItsLongerSettle_andAPairGoesAtOnce() {
        func name(_ text: String) -> FileName { FileName(text)! }
        var schedule = SpoolSchedule(settleMilliseconds: 500)
        #expect(schedule.arrived(name("a.json"), now: 0, settle: 10_500).isEmpty)
        #expect(schedule.takeDue(now: 10_499).isEmpty, "its partner may come with the next scan")
        #expect(schedule.arrived(name("a.jpg"), now: 10_000, settle: 10_500) == [.expense(receipt: name("a.jpg"), sidecar: name("a.json"))])
        #expect(schedule.arrived(name("b.jpg"), now: 20_000, settle: 10_500).isEmpty)
        #expect(schedule.takeDue(now: 30_500) == [.expense(receipt: name("b.jpg"), sidecar: nil)])
    }

    /// A periodic scan adds only names the schedule does not hold: one
    /// waiting, being taken, or arrived while being taken is known.
    @Test func schedule_knowsWaitingBusyAndDeferredNames_only() {
        func name(_ text: String) -> FileName { FileName(text)! }
        var schedule = SpoolSchedule(settleMilliseconds: 500)
        #expect(!schedule.isKnown(name("a.jpg")))
        _ = schedule.arrived(name("a.jpg"), now: 0)
        #expect(schedule.isKnown(name("a.jpg")), "waiting for its sidecar")
        let takes = schedule.takeDue(now: 500)
        #expect(takes == [.expense(receipt: name("a.jpg"), sidecar: nil)])
        #expect(schedule.isKnown(name("a.jpg")), "being taken")
        _ = schedule.arrived(name("a.jpg"), now: 600)
        _ = schedule.finished(takes[0], now: 700, retryAfter: 5000)
        #expect(schedule.isKnown(name("a.jpg")), "to be tried again")
        _ = schedule.arrived(name("x.gif"), now: 800, delay: 1000)
        #expect(schedule.isKnown(name("x.gif")), "another kind, waiting to be tried again")
        let later = schedule.takeDue(now: 10_000)
        for take in later { _ = schedule.finished(take, now: 10_000) }
        #expect(!schedule.isKnown(name("a.jpg")) && !schedule.isKnown(name("x.gif")), "done with")
        #expect(schedule.isIdle)
    }
}
