import Foundation
import Posix

/// A FUSE mount of a directory (`bindfs`, from Debian, needing `/dev/fuse`):
/// files written into ``backing`` show at ``mountPoint``, but inotify on
/// the mount reports nothing of them, since they never went through it —
/// what a spool on NFS or SMB sees of another machine's writes. Writes
/// through the mount are reported as on any file system.
public final class FuseMirror: @unchecked Sendable {
    public let backing: String
    public let mountPoint: String
    private let service: LaunchedService

    /// `statfs(2)`'s magic number for FUSE.
    public static let magic: UInt32 = 0x6573_5546

    /// Mounts `backing` at `mountPoint` (both made) and waits until the
    /// mount is there. bindfs runs in the foreground, so it is stopped by pid.
    public init(backing: String, mountPoint: String, outputDirectory: String) throws {
        try FileSystem.makeDirectories(backing, mode: 0o755)
        try FileSystem.makeDirectories(mountPoint, mode: 0o755)
        self.backing = backing
        self.mountPoint = mountPoint
        guard FileManager.default.fileExists(atPath: "/dev/fuse") else {
            throw TestFailure("/dev/fuse is missing: this machine cannot mount FUSE file systems")
        }
        service = try LaunchedService("/usr/bin/bindfs", ["-f", "--no-allow-other", backing, mountPoint],
                                      outputDirectory: outputDirectory, name: "bindfs")
        try waitUntil(timeout: 20, "bindfs to mount \(mountPoint)") {
            guard service.isRunning else { throw TestFailure("bindfs exited: \(service.child.standardError)") }
            return isMounted
        }
    }

    /// True when `/proc/self/mountinfo` lists a FUSE mount at ``mountPoint``.
    public var isMounted: Bool {
        guard let text = try? String(contentsOfFile: "/proc/self/mountinfo", encoding: .utf8) else { return false }
        return text.split(separator: "\n").contains { line in
            let fields = line.split(separator: " ")
            guard fields.count > 4, fields[4] == mountPoint, let dash = fields.firstIndex(of: "-"), dash + 1 < fields.count else { return false }
            return fields[dash + 1].hasPrefix("fuse")
        }
    }

    /// Unmounts (`fusermount -u`) and waits for bindfs to exit.
    public func unmount() {
        if isMounted { _ = try? runCommand("/usr/bin/fusermount", ["-u", mountPoint], timeout: 20) }
        if service.child.waitForExit(timeout: 20) == nil { service.stop() }
        if isMounted { _ = try? runCommand("/usr/bin/fusermount", ["-u", "-z", mountPoint], timeout: 20) }
    }

    deinit { unmount() }
}
