import Foundation

/// A datagram socket standing where systemd's notification socket would
/// be: set `NOTIFY_SOCKET` to ``path`` and read what the daemon sends.
public final class NotifyListener: @unchecked Sendable {
    public let path: String
    private let fd: Int32

    public init(path: String) throws {
        self.path = path
        fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue), 0)
        let rc = try withUnixAddress(path) { bind(fd, $0, $1) }
        guard rc == 0 else { throw TestFailure("bind \(path): \(String(cString: strerror(errno)))") }
        var tv = timeval(tv_sec: 0, tv_usec: 100_000)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
    }

    deinit { close(fd) }

    /// Every datagram received so far and in the next `timeout` seconds,
    /// until `until` holds for the collected list.
    public func collect(timeout: Double, until: ([String]) -> Bool = { _ in false }) -> [String] {
        var messages: [String] = []
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            var buffer = [UInt8](repeating: 0, count: 4096)
            let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if n > 0 {
                messages.append(String(decoding: buffer[0..<n], as: UTF8.self))
                if until(messages) { break }
            }
        }
        return messages
    }
}

/// Calls `body` with a `sockaddr_un` for `path` and its length: for
/// `bind(2)` and `connect(2)` on Unix sockets in tests. An abstract name
/// (`abstract: true`, `path` without its leading NUL) is as long as it is.
/// - Throws: for a name `sun_path` cannot hold (cut short, it would name
///   another socket).
func withUnixAddress<R>(_ path: String, abstract: Bool = false, _ body: (UnsafePointer<sockaddr>, socklen_t) -> R) throws -> R {
    var address = sockaddr_un()
    address.sun_family = sa_family_t(AF_UNIX)
    let name = abstract ? [0] + Array(path.utf8) : Array(path.utf8) + [0]
    let room = MemoryLayout.size(ofValue: address.sun_path)
    guard name.count <= room else { throw TestFailure("a Unix socket's name holds at most \(room) bytes: \(path)") }
    withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: name) }
    let length = abstract ? MemoryLayout<sockaddr_un>.offset(of: \.sun_path)! + name.count : MemoryLayout<sockaddr_un>.size
    return withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { body($0, socklen_t(length)) }
    }
}
