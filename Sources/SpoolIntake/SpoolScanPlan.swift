import ExpenseCore

/// How often the spool is listed besides what inotify reports
/// (`spool_scan_interval`, docs/spool.md, "Spools on network file systems").
public enum SpoolScanInterval: Sendable, Equatable {
    /// Every ``SpoolScanPlan/automaticMilliseconds`` on a file system whose
    /// writes inotify may not see, never on others.
    case automatic
    /// Never: inotify, the start-up scan and the scan after an overflow only.
    case never
    /// Every this many milliseconds, whatever the file system.
    case every(milliseconds: Int64)
}

/// A file system, told by the magic number `statfs(2)` gives as `f_type`.
struct SpoolFileSystem: Equatable, Sendable {
    let magic: UInt32
    /// Its usual name (`nfs`, `ext4`), when the magic number is a known one.
    let name: String?
    /// True when files on it can change without this kernel's knowledge
    /// (another NFS or SMB client, a FUSE daemon's own backing store, the
    /// other node of a cluster file system): inotify, which sees only what
    /// goes through this machine's VFS, does not report those changes.
    let isShared: Bool

    /// Magic numbers from `statfs(2)` and `<linux/magic.h>`.
    static let shared: [UInt32: String] = [
        0x6969: "nfs",
        0x517B: "smb",
        0xFF53_4D42: "cifs",
        0xFE53_4D42: "smb2",
        0x6573_5546: "fuse", // sshfs, rclone, s3fs, bindfs, virtiofs, GlusterFS's client
        0x0102_1997: "9p",
        0x00C3_6400: "ceph",
        0x5346_414F: "afs",
        0x6B41_4653: "afs",
        0x7375_7245: "coda",
        0x564C: "ncp",
        0x7461_636F: "ocfs2",
        0x0116_1970: "gfs2",
        0x0BD0_0BD0: "lustre",
        0x4750_4653: "gpfs",
        0x786F_4256: "vboxsf",
    ]

    /// Local file systems, only to name them in the log.
    static let local: [UInt32: String] = [
        0xEF53: "ext4",
        0x5846_5342: "xfs",
        0x9123_683E: "btrfs",
        0x0102_1994: "tmpfs",
        0x794C_7630: "overlayfs",
        0x2FC1_2FC1: "zfs",
        0xF2F5_2010: "f2fs",
        0xCA45_1A4E: "bcachefs",
        0x4D44: "vfat",
        0x2011_BAB0: "exfat",
        0x5346_544E: "ntfs",
        0x5265_4973: "reiserfs",
        0x3153_464A: "jfs",
        0x8584_58F6: "ramfs",
    ]

    /// What `magic` is. An unknown magic number is taken as a local file
    /// system: every network file system Linux has is in ``shared``.
    static func classify(_ magic: UInt32) -> SpoolFileSystem {
        if let name = shared[magic] { return SpoolFileSystem(magic: magic, name: name, isShared: true) }
        return SpoolFileSystem(magic: magic, name: local[magic], isShared: false)
    }

    /// `nfs (file system type 0x6969)`, or `a file system of type 0x1234`.
    var description: String {
        let hex = "0x" + String(magic, radix: 16)
        if let name { return "\(name) (file system type \(hex))" }
        return "a file system of type \(hex)"
    }
}

/// Whether, and how often, the spool is scanned besides inotify, and the
/// start-up log line that says so and why. A pure decision.
struct SpoolScanPlan: Equatable, Sendable {
    /// How often `spool_scan_interval = auto` scans a spool on a shared file system.
    static let automaticMilliseconds: Int64 = 10_000

    /// Milliseconds between scans; nil: none.
    let intervalMilliseconds: Int64?
    let message: String
    /// True when the choice may miss files (a shared file system, no scan),
    /// or the file system could not be told.
    let isWarning: Bool

    /// - Parameters:
    ///   - fileSystem: the spool's, or why `fstatfs` failed.
    static func make(_ setting: SpoolScanInterval, path: String, fileSystem: Result<SpoolFileSystem, SystemCallErrorText>) -> SpoolScanPlan {
        let unseen = "where inotify does not see writes made by other machines"
        switch (setting, fileSystem) {
        case (.automatic, .failure(let error)):
            return SpoolScanPlan(intervalMilliseconds: automaticMilliseconds,
                                 message: "Failed to tell the file system of spool directory '\(path)': \(error.text); scanning it every \(describe(automaticMilliseconds)) as well, as on a network file system (spool_scan_interval = auto)",
                                 isWarning: true)
        case (.automatic, .success(let fs)) where fs.isShared:
            return SpoolScanPlan(intervalMilliseconds: automaticMilliseconds,
                                 message: "Spool directory '\(path)' is on \(fs.description), \(unseen): scanning it every \(describe(automaticMilliseconds)) as well (spool_scan_interval = auto)",
                                 isWarning: false)
        case (.automatic, .success(let fs)):
            return SpoolScanPlan(intervalMilliseconds: nil,
                                 message: "Spool directory '\(path)' is on \(fs.description): watched with inotify, no periodic scan (spool_scan_interval = auto)",
                                 isWarning: false)
        case (.every(let milliseconds), _):
            return SpoolScanPlan(intervalMilliseconds: milliseconds,
                                 message: "Spool directory '\(path)' is on \(onWhat(fileSystem)): scanning it every \(describe(milliseconds)) as well (spool_scan_interval = \(describe(milliseconds)))",
                                 isWarning: false)
        case (.never, .success(let fs)) where fs.isShared:
            return SpoolScanPlan(intervalMilliseconds: nil,
                                 message: "Spool directory '\(path)' is on \(fs.description), \(unseen), and spool_scan_interval is off: files they write are taken only at the next start",
                                 isWarning: true)
        case (.never, _):
            return SpoolScanPlan(intervalMilliseconds: nil,
                                 message: "Spool directory '\(path)' is on \(onWhat(fileSystem)): watched with inotify, no periodic scan (spool_scan_interval = off)",
                                 isWarning: false)
        }
    }

    private static func onWhat(_ fileSystem: Result<SpoolFileSystem, SystemCallErrorText>) -> String {
        switch fileSystem {
        case .success(let fs): fs.description
        case .failure(let error): "a file system that could not be told (\(error.text))"
        }
    }

    private static func describe(_ milliseconds: Int64) -> String {
        DurationText.describe(milliseconds: milliseconds)
    }
}

/// Why a call failed, as text: what ``SpoolScanPlan`` says of an `fstatfs`
/// that failed, without holding the error itself.
struct SystemCallErrorText: Error, Equatable, Sendable {
    let text: String
}
