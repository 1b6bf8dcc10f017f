import Foundation
import Posix

/// A small file system of a daemon's own for its state directory: a
/// size-limited tmpfs mounted on it inside a mount namespace made for the
/// daemon (`unshare --mount`), so nothing of the machine's is mounted and
/// the mount goes with the daemon. The test reaches it through the
/// daemon's root, `/proc/PID/root`, which resolves paths in its namespace.
public struct SmallFileSystem: Sendable {
    /// Where it is mounted, as the daemon sees it.
    public let mountPoint: String
    /// tmpfs's `size=` (`24m`).
    public let size: String

    /// Makes the mount point (the daemon's state directory).
    public init(mountPoint: String, size: String) throws {
        self.mountPoint = mountPoint
        self.size = size
        try FileSystem.makeDirectories(mountPoint, mode: 0o700)
    }

    /// A ``DaemonHarness/launcher``: a mount namespace, the tmpfs mounted
    /// there, then the daemon exec'd (its pid is the launcher's).
    public var launcher: [String] {
        ["/usr/bin/unshare", "--mount", "--propagation", "private", "/bin/sh", "-c",
         "mount -t tmpfs -o size=\(size),mode=0700 expensed-test \"$0\" && exec \"$@\"", mountPoint]
    }

    /// The mount point as the test reaches it, through the daemon's root.
    public func path(daemonPID: Int32) -> String { "/proc/\(daemonPID)/root\(mountPoint)" }

    /// Waits until `path` is the tmpfs (the daemon's namespace has it mounted).
    public static func waitUntilMounted(_ path: String, maximumBytes: Int64) throws {
        try waitUntil(timeout: 20, "the small file system at \(path)") {
            (try? FileSystem.space(of: path).totalBytes).map { $0 <= maximumBytes } ?? false
        }
    }

    /// Starts `daemon` with its state directory on a tmpfs of `megabytes`
    /// of its own; the caller stops it (the mount goes with it).
    /// - Returns: the state directory as the test reaches it.
    public static func start(_ daemon: DaemonHarness, megabytes: Int) throws -> String {
        let small = try SmallFileSystem(mountPoint: daemon.stateDirectory, size: "\(megabytes)m")
        daemon.launcher = small.launcher
        try daemon.start()
        do {
            let state = small.path(daemonPID: try daemon.daemonPID())
            try waitUntilMounted(state, maximumBytes: Int64(megabytes) << 20)
            return state
        } catch {
            daemon.stop()
            throw error
        }
    }

    /// Appends up to `bytes` to `file` (a foreign file: no daemon's name),
    /// then, if the file system ran out, fills what is left page by page.
    /// - Returns: true when the file system is full (`ENOSPC`).
    public static func write(_ bytes: Int, to file: FileDescriptor) throws -> Bool {
        var left = bytes
        while left > 0 {
            let count = min(left, 64 << 10)
            if try !append(count, to: file) {
                // A short write may have left room for less than a chunk: fill it a page at a time.
                while try append(4096, to: file) {}
                return true
            }
            left -= count
        }
        return false
    }

    /// Appends `count` bytes; false when the file system had no room for them all.
    static func append(_ count: Int, to file: FileDescriptor) throws -> Bool {
        let bytes = [UInt8](repeating: 0x5A, count: count)
        do {
            try file.writeAll(bytes)
            return true
        } catch {
            guard error.isNoRoom else { throw error }
            return false
        }
    }

    /// Fills the file system with `file` until nothing is left.
    public static func fill(with file: FileDescriptor) throws {
        while try !write(1 << 20, to: file) {}
    }
}
