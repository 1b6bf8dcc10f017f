import ExpenseCore
import ExpenseTestSupport
import Foundation
import Posix
import Testing

/// A spool on a file system where inotify does not see every write (a FUSE
/// mount here; NFS and SMB behave alike for other machines' writes), and
/// the inotify limits reached at start: real daemons, real mounts, real
/// per-user limits (lowered in a user namespace of the test's own, never
/// the machine's).
/// Serialized: each test mounts a FUSE file system with a bindfs process; one at a time bounds them.
@Suite(.serialized) struct SpoolNetworkTests {
    static let fields = ExpenseFields(merchant: "Share Café", amount: "4.20", currency: "EUR", date: "2026-03-04")

    /// A daemon whose spool is `mnt/`, a FUSE mirror of `back/`, where a
    /// write stands for another machine's: inotify on the mount never hears of it.
    static func mirroredSpool(_ arguments: [String]) throws -> (DaemonHarness, FuseMirror) {
        let daemon = DaemonHarness(arguments: ["--spool-settle", "100ms"], environment: ["EXPENSED_DEBUG": "1"])
        let mirror = try FuseMirror(backing: daemon.directory.at("back"), mountPoint: daemon.directory.at("mnt"),
                                    outputDirectory: daemon.directory.path)
        daemon.arguments += ["--spool-dir", mirror.mountPoint] + arguments
        return (daemon, mirror)
    }

    /// Waits for `daemon`'s start-up scan of the spool: a file written
    /// behind the mount's back before that scan lists the folder is taken
    /// by it, and no later scan then finds it.
    static func waitForTheStartUpScan(_ daemon: DaemonHarness, _ mirror: FuseMirror) throws {
        try waitUntil(timeout: 30, "the start-up scan of the spool") {
            daemon.log.contains("Scanned spool directory '\(mirror.mountPoint)' at start")
        }
    }

    /// Written beside, then renamed in: the staging folder is a dot-named
    /// one in `directory`, so that the rename stays on its file system.
    static func drop(_ bytes: [UInt8], _ name: String, into directory: String) throws {
        try SpoolDrop.byRename(bytes, as: FileName(name)!, in: directory, staging: "\(directory)/.staging")
    }

    static func names(in directory: String) throws -> [String] {
        try FileManager.default.contentsOfDirectory(atPath: directory).filter { $0 != "rejected" && !$0.hasPrefix(".") }.sorted()
    }

    @Test func fuseSpool_automatic_isScannedEvery10s_andFilesNoEventReportedAreTaken_aPairAsOne() throws {
        let (daemon, mirror) = try Self.mirroredSpool([])
        defer { mirror.unmount() }
        try daemon.start()
        defer { daemon.stop() }
        try Self.waitForTheStartUpScan(daemon, mirror)
        #expect(daemon.log.contains("Spool directory '\(mirror.mountPoint)' is on fuse (file system type 0x65735546), where inotify does not see writes made by other machines: scanning it every 10s as well (spool_scan_interval = auto)"), "\(daemon.log)")

        // Behind the mount's back: a pair, the sidecar first, and a receipt alone.
        try Self.drop(SpoolDrop.sidecar(Self.fields), "pair.json", into: mirror.backing)
        try Self.drop(SpoolDrop.receipt(.jpeg, tag: 1), "pair.jpg", into: mirror.backing)
        try Self.drop(SpoolDrop.receipt(.pdf, tag: 2), "alone.pdf", into: mirror.backing)
        try Self.drop(Array("not a receipt".utf8), "junk.png", into: mirror.backing)
        // Through the mount: reported by inotify as on any file system.
        try Self.drop(SpoolDrop.sidecar(ExpenseFields(merchant: "Local", amount: "1.00", currency: "EUR", date: "2026-03-05")),
                      "local.json", into: mirror.mountPoint)
        try waitUntil(timeout: 60, "the five files to become three expenses and a rejection") {
            try daemon.list().count == 3 && Self.names(in: mirror.backing).isEmpty
        }
        let list = try daemon.ctlJSON(["list"])
        let pair = try #require(list.arrayValue?.first { $0["source"]?["name"] == "pair.jpg" }, "\(list.serialized())")
        #expect(pair["source"]?["sidecar"] == "pair.json" && pair["merchant"] == "Share Café", "one expense of the pair: \(list.serialized())")
        #expect(list.arrayValue?.contains { $0["source"]?["name"] == "alone.pdf" && $0["source"]?["sidecar"] == .null } == true)
        for name in ["pair.json", "pair.jpg", "alone.pdf", "junk.png"] {
            #expect(daemon.log.contains("Spool scan found '\(name)', which no event reported"), "\(name): \(daemon.log)")
        }
        #expect(!daemon.log.contains("Spool scan found 'local.json'"), "inotify reported the write through the mount")
        // Moved into rejected/ on a file system without RENAME_NOREPLACE, as
        // the taken files were renamed to their private names to be removed.
        #expect(try Self.names(in: "\(mirror.backing)/rejected") == ["junk.png", "junk.png.reason"])
    }

    /// The control: with the scan off, what inotify did not report waits
    /// for the next start, while a later write through the mount is taken.
    @Test func fuseSpool_scanOff_saysWhatIsMissed_andAFileNoEventReportedWaitsForTheNextStart() throws {
        let (daemon, mirror) = try Self.mirroredSpool(["--spool-scan-interval", "off"])
        defer { mirror.unmount() }
        try daemon.start()
        defer { daemon.stop() }
        try Self.waitForTheStartUpScan(daemon, mirror)
        #expect(daemon.log.contains("Spool directory '\(mirror.mountPoint)' is on fuse (file system type 0x65735546), where inotify does not see writes made by other machines, and spool_scan_interval is off: files they write are taken only at the next start"), "\(daemon.log)")
        try Self.drop(SpoolDrop.sidecar(Self.fields), "behind.json", into: mirror.backing)
        try Self.drop(SpoolDrop.sidecar(Self.fields), "through.json", into: mirror.mountPoint)
        try waitUntil(timeout: 30, "the file written through the mount to be taken") {
            try daemon.list().count == 1 && Self.names(in: mirror.backing) == ["behind.json"]
        }
        // A stop lets intakes in progress finish: had inotify reported the
        // earlier file (due first), it would be gone by now.
        #expect(daemon.stop() == 0)
        #expect(try Self.names(in: mirror.backing) == ["behind.json"])
        #expect(!daemon.log.contains("Spool scan found"))
        try daemon.start()
        try waitUntil(timeout: 30, "the start-up scan to take the file") {
            try daemon.list().count == 2 && Self.names(in: mirror.backing).isEmpty
        }
    }

    @Test func fuseSpool_explicitInterval_isUsedAndSaid() throws {
        let (daemon, mirror) = try Self.mirroredSpool(["--spool-scan-interval", "300ms"])
        defer { mirror.unmount() }
        try daemon.start()
        defer { daemon.stop() }
        try Self.waitForTheStartUpScan(daemon, mirror)
        #expect(daemon.log.contains("is on fuse (file system type 0x65735546): scanning it every 300ms as well (spool_scan_interval = 300ms)"), "\(daemon.log)")
        try Self.drop(SpoolDrop.receipt(.png, tag: 3), "scan.png", into: mirror.backing)
        try waitUntil(timeout: 30, "the receipt to be taken") { try daemon.list().count == 1 && Self.names(in: mirror.backing).isEmpty }
        #expect(daemon.log.contains("Spool scan found 'scan.png', which no event reported"))
    }

    @Test func localSpool_automatic_isNotScanned_andSaysWhy() throws {
        let daemon = DaemonHarness(spool: true)
        try daemon.start()
        defer { daemon.stop() }
        #expect(daemon.log.contains("Spool directory '\(daemon.spoolDirectory)' is on "), "\(daemon.log)")
        #expect(daemon.log.contains("watched with inotify, no periodic scan (spool_scan_interval = auto)"), "\(daemon.log)")
    }

    /// The per-user inotify limits, lowered in a user namespace of the
    /// test's own (`user.max_inotify_*` are per namespace): 0 instances, 0
    /// watches (the spool's), 1 watch (then `rejected/`'s fails).
    @Test(arguments: [
        ("max_inotify_instances", 0, "inotify_init1: Too many open files: the user expensed runs as has all the inotify instances the sysctl fs.inotify.max_user_instances allows; raise it, for example with 'sysctl -w fs.inotify.max_user_instances=1024', and keep it in a file in /etc/sysctl.d/"),
        ("max_inotify_watches", 0, "spool': No space left on device: the user expensed runs as has all the inotify watches the sysctl fs.inotify.max_user_watches allows; raise it, for example with 'sysctl -w fs.inotify.max_user_watches=524288'"),
        ("max_inotify_watches", 1, "spool/rejected': No space left on device: the user expensed runs as has all the inotify watches the sysctl fs.inotify.max_user_watches allows"),
    ])
    func inotifyLimitReached_isAStartupErrorNamingTheSysctl_exit71(_ limit: String, _ value: Int, _ expected: String) throws {
        let daemon = DaemonHarness(spool: true)
        let script = "echo \(value) > /proc/sys/user/\(limit) && exec \"$0\" \"$@\""
        let result = try runCommand("/usr/bin/unshare", ["--user", "--map-root-user", "sh", "-c", script, BuiltProducts.path("expensed")] + daemon.arguments,
                                    timeout: 30)
        #expect(result.status == 71, "\(result.stderr)")
        #expect(result.stderr.contains("Failed to watch spool directory '\(daemon.spoolDirectory)': "), "\(result.stderr)")
        #expect(result.stderr.contains(expected), "\(result.stderr)")
    }

    @Test(arguments: ["sometimes", "-5s", "50ms", "2d", "OFF", "never", ""])
    func garbageScanInterval_isAUsageErrorNamingWhatIsAllowed(_ value: String) throws {
        let daemon = DaemonHarness(spool: true)
        let flag = try runCommand(BuiltProducts.path("expensed"), daemon.arguments + ["--spool-scan-interval=\(value)"], timeout: 20)
        #expect(flag.status == 64, "\(flag.stderr)")
        #expect(flag.stderr.contains("expensed: --spool-scan-interval: must be auto, off (or 0), or a duration from 100ms to 1d, like 10s or 1m"), "\(flag.stderr)")
        let config = daemon.directory.at("expensed.conf")
        _ = FileManager.default.createFile(atPath: config, contents: Data("spool_scan_interval = \(value)\n".utf8))
        let file = try runCommand(BuiltProducts.path("expensed"), daemon.arguments, timeout: 20)
        #expect(file.status == 78, "\(file.stderr)")
        #expect(file.stderr.contains("expensed.conf:1: spool_scan_interval: must be auto, off (or 0), or a duration from 100ms to 1d, like 10s or 1m"), "\(file.stderr)")
        #expect(!FileManager.default.fileExists(atPath: daemon.stateDirectory), "nothing created on a bad value")
    }
}
