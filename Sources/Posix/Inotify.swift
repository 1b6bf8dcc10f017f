#if canImport(Glibc)
import Glibc
#endif

/// An inotify instance (`inotify(7)`): close-on-exec and non-blocking, to
/// be waited on with ``Poll`` beside other descriptors.
public final class Inotify: Sendable {
    public let descriptor: FileDescriptor

    /// Event kinds, spelled as in `inotify(7)`.
    public struct Mask: OptionSet, Sendable, Hashable {
        public let rawValue: UInt32
        public init(rawValue: UInt32) { self.rawValue = rawValue }
        // The constants import as Int32; the kernel's field is a u32.
        public static let closeWrite = Mask(rawValue: UInt32(bitPattern: IN_CLOSE_WRITE))
        public static let movedTo = Mask(rawValue: UInt32(bitPattern: IN_MOVED_TO))
        public static let create = Mask(rawValue: UInt32(bitPattern: IN_CREATE))
        public static let delete = Mask(rawValue: UInt32(bitPattern: IN_DELETE))
        public static let movedFrom = Mask(rawValue: UInt32(bitPattern: IN_MOVED_FROM))
        public static let open = Mask(rawValue: UInt32(bitPattern: IN_OPEN))
        public static let access = Mask(rawValue: UInt32(bitPattern: IN_ACCESS))
        public static let deleteSelf = Mask(rawValue: UInt32(bitPattern: IN_DELETE_SELF))
        public static let moveSelf = Mask(rawValue: UInt32(bitPattern: IN_MOVE_SELF))
        /// Only when the watched path is a directory (`add_watch` fails with `ENOTDIR`).
        public static let onlyDirectory = Mask(rawValue: UInt32(bitPattern: IN_ONLYDIR))
        /// Do not follow the path if it is a symbolic link.
        public static let dontFollow = Mask(rawValue: UInt32(bitPattern: IN_DONT_FOLLOW))
        /// Set on every event about a subdirectory.
        public static let isDirectory = Mask(rawValue: UInt32(bitPattern: IN_ISDIR))
        /// The kernel's queue was full: events were lost (`max_queued_events`).
        public static let queueOverflow = Mask(rawValue: UInt32(bitPattern: IN_Q_OVERFLOW))
        /// The watch is gone (its directory was removed, or its file system unmounted).
        public static let ignored = Mask(rawValue: UInt32(bitPattern: IN_IGNORED))
        public static let unmount = Mask(rawValue: UInt32(bitPattern: IN_UNMOUNT))
    }

    /// One event as the kernel reported it.
    public struct Event: Sendable, Equatable {
        /// The watch descriptor it is about (-1 for a queue overflow).
        public let watch: Int32
        public let mask: Mask
        public let cookie: UInt32
        /// The name inside the watched directory; nil for events about the directory itself.
        public let name: FileName?
    }

    /// Wraps `inotify_init1(2)` with `IN_CLOEXEC | IN_NONBLOCK` (which
    /// equal `O_CLOEXEC` and `O_NONBLOCK`).
    public init() throws(SystemCallError) {
        descriptor = FileDescriptor(owning: try retrying("inotify_init1") { Glibc.inotify_init1(O_CLOEXEC | O_NONBLOCK) })
    }

    /// Watches `path` for `mask`. Wraps `inotify_add_watch(2)`.
    /// - Returns: the watch descriptor that events carry.
    @discardableResult
    public func addWatch(_ path: String, _ mask: Mask) throws(SystemCallError) -> Int32 {
        try retrying("inotify_add_watch", path) { Glibc.inotify_add_watch(descriptor.rawValue, path, mask.rawValue) }
    }

    /// Every event queued now, in order; empty when there is none (the
    /// descriptor is non-blocking). Wraps `read(2)`.
    public func readEvents() throws(SystemCallError) -> [Event] {
        // Large enough for many events and for one with the longest name
        // (NAME_MAX + 1 after the 16-byte header), so no read fails with EINVAL.
        var events: [Event] = []
        var buffer = [UInt8](repeating: 0, count: 64 * 1024)
        while true {
            let result: Result<Int, SystemCallError> = buffer.withUnsafeMutableBytes { raw in
                do throws(SystemCallError) {
                    return .success(try descriptor.read(into: raw))
                } catch {
                    return .failure(error)
                }
            }
            switch result {
            case .success(let n):
                if n == 0 { return events }
                events += buffer.withUnsafeBytes { Self.parse(UnsafeRawBufferPointer(rebasing: $0[0..<n])) }
            case .failure(let error):
                if error.wouldBlock { return events }
                throw error
            }
        }
    }

    /// Parses the variable-length records `read(2)` returns: `wd` (i32),
    /// `mask`, `cookie`, `len` (u32 each), then `len` bytes of name padded
    /// with NULs, starting at offset 16.
    static func parse(_ bytes: UnsafeRawBufferPointer) -> [Event] {
        var events: [Event] = []
        var offset = 0
        while offset + 16 <= bytes.count {
            let watch = bytes.loadUnaligned(fromByteOffset: offset, as: Int32.self)
            let mask = bytes.loadUnaligned(fromByteOffset: offset + 4, as: UInt32.self)
            let cookie = bytes.loadUnaligned(fromByteOffset: offset + 8, as: UInt32.self)
            let length = Int(bytes.loadUnaligned(fromByteOffset: offset + 12, as: UInt32.self))
            let nameStart = offset + 16
            guard nameStart + length <= bytes.count else { break }
            let nameBytes = Array(bytes[nameStart..<(nameStart + length)].prefix(while: { $0 != 0 }))
            events.append(Event(watch: watch, mask: Mask(rawValue: mask), cookie: cookie,
                                name: nameBytes.isEmpty ? nil : FileName(bytes: nameBytes)))
            offset = nameStart + length
        }
        return events
    }
}
