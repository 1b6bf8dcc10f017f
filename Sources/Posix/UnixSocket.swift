#if canImport(Glibc)
import Glibc
#endif
internal import CShims

/// Who is on the other end of a Unix socket, from `SO_PEERCRED` and `SO_PEERGROUPS`.
public struct PeerCredentials: Sendable, Equatable {
    public let pid: Int32
    public let uid: UInt32
    public let gid: UInt32
    /// Supplementary groups (empty when the kernel cannot say).
    public let groups: [UInt32]
}

/// `AF_UNIX` stream sockets: listening, connecting, and passing descriptors.
public enum UnixSocket {
    /// Binds and listens on `path`, replacing a stale socket file there.
    /// The socket is non-blocking and gets `mode` (e.g. `0o660`), and
    /// belongs to `group` when one is given.
    public static func listen(path: String, mode: UInt32 = 0o660, group: UInt32? = nil, backlog: Int32 = 128) throws(SystemCallError) -> FileDescriptor {
        var address = try makeAddress(path)
        let fd = FileDescriptor(owning: try retrying("socket", path) {
            Glibc.socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0)
        })
        // A socket file left by a daemon that died is removed; anything else
        // at the path (a regular file, a directory) is an error from bind.
        if let st = try? FileSystem.status(path, followLinks: false), st.kind == .socket {
            try FileSystem.remove(path)
        }
        try typed { try withUnsafePointer(to: &address) { pointer in
            try pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { sa in
                try retrying("bind", path) { Glibc.bind(fd.rawValue, sa, socklen_t(MemoryLayout<sockaddr_un>.size)) }
            }
        } }
        if let group { try FileSystem.setGroup(path, group) }
        try FileSystem.setMode(path, mode)
        try retrying("listen", path) { Glibc.listen(fd.rawValue, backlog) }
        return fd
    }

    /// The longest path a socket address holds, in bytes (`sun_path` less its NUL).
    public static let maximumPathBytes = MemoryLayout.size(ofValue: sockaddr_un().sun_path) - 1

    /// Connects to the socket at `path` (blocking).
    public static func connect(path: String) throws(SystemCallError) -> FileDescriptor {
        var address = try makeAddress(path)
        let fd = FileDescriptor(owning: try retrying("socket", path) {
            Glibc.socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        })
        try typed { try withUnsafePointer(to: &address) { pointer in
            try pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { sa in
                try retrying("connect", path) { Glibc.connect(fd.rawValue, sa, socklen_t(MemoryLayout<sockaddr_un>.size)) }
            }
        } }
        return fd
    }

    /// Accepts one connection (non-blocking, close-on-exec); `nil` when none is waiting.
    public static func accept(_ listener: FileDescriptor) throws(SystemCallError) -> FileDescriptor? {
        while true {
            let fd = cshims_accept(listener.rawValue)
            if fd >= 0 { return FileDescriptor(owning: fd) }
            let code = errno
            switch code {
            case EINTR: continue
            case EAGAIN, EWOULDBLOCK: return nil
            // The connection died before we took it: nothing to do, see accept(2).
            case ECONNABORTED, EPROTO: continue
            default: throw SystemCallError(call: "accept4", errno: code)
            }
        }
    }

    /// The peer's credentials, read with `SO_PEERCRED` and `SO_PEERGROUPS`.
    public static func peerCredentials(_ socket: FileDescriptor) throws(SystemCallError) -> PeerCredentials {
        var pid: pid_t = 0, uid: uid_t = 0, gid: gid_t = 0
        try retrying("getsockopt(SO_PEERCRED)") { cshims_peer_credentials(socket.rawValue, &pid, &uid, &gid) }
        var groups = [gid_t](repeating: 0, count: 64)
        var count = cshims_peer_groups(socket.rawValue, &groups, Int32(groups.count))
        if count > Int32(groups.count) {
            groups = [gid_t](repeating: 0, count: Int(count))
            count = cshims_peer_groups(socket.rawValue, &groups, Int32(groups.count))
        }
        return PeerCredentials(pid: pid, uid: uid, gid: gid, groups: count > 0 ? Array(groups.prefix(Int(count))) : [])
    }

    /// Sends `bytes`, with `descriptor` attached to the first byte (`SCM_RIGHTS`)
    /// when given; the rest goes with plain writes. Blocking sockets only.
    public static func send(_ socket: FileDescriptor, _ bytes: [UInt8], passing descriptor: FileDescriptor? = nil) throws(SystemCallError) {
        var offset = 0
        var pass = descriptor?.rawValue ?? -1
        while offset < bytes.count {
            let n = try typed { try bytes.withUnsafeBytes { raw in
                try retrying("sendmsg") { cshims_send_with_fd(socket.rawValue, raw.baseAddress! + offset, raw.count - offset, pass) }
            } }
            offset += n
            pass = -1
        }
    }

    /// Sends what one `sendmsg(2)` takes of `bytes`, with `descriptor`
    /// attached to the first byte (`SCM_RIGHTS`) when given; for
    /// non-blocking sockets. A peer that went away is `EPIPE`, never a
    /// `SIGPIPE` (`MSG_NOSIGNAL`): safe in any process, whatever it does
    /// with that signal.
    /// - Returns: the bytes sent; at least one when it returns, so the
    ///   descriptor went.
    /// - Throws: `EAGAIN` (``SystemCallError/wouldBlock``) when nothing could be sent.
    public static func sendSome(_ socket: FileDescriptor, _ bytes: [UInt8], passing descriptor: FileDescriptor? = nil) throws(SystemCallError) -> Int {
        try typed { try bytes.withUnsafeBytes { raw in
            try retrying("sendmsg") { cshims_send_with_fd(socket.rawValue, raw.baseAddress!, raw.count, descriptor?.rawValue ?? -1) }
        } }
    }

    /// Receives up to `buffer.count` bytes and any descriptors that came with them.
    /// - Returns: bytes read (0 at end of stream) and the received descriptors.
    public static func receive(_ socket: FileDescriptor, into buffer: UnsafeMutableRawBufferPointer) throws(SystemCallError) -> (count: Int, descriptors: [FileDescriptor]) {
        var fds = [Int32](repeating: -1, count: 16)
        var nfds: Int32 = 0
        var truncated: Int32 = 0
        let n = try retrying("recvmsg") {
            cshims_recv_with_fds(socket.rawValue, buffer.baseAddress, buffer.count, &fds, Int32(fds.count), &nfds, &truncated)
        }
        return (n, fds.prefix(Int(nfds)).map { FileDescriptor(owning: $0) })
    }

    /// Receives into the start of `buffer`; see ``receive(_:into:)-(_,UnsafeMutableRawBufferPointer)``.
    public static func receive(_ socket: FileDescriptor, into buffer: inout [UInt8]) throws(SystemCallError) -> (count: Int, descriptors: [FileDescriptor]) {
        try typed { try buffer.withUnsafeMutableBytes { raw in try receive(socket, into: raw) } }
    }

    /// Wraps `shutdown(2)` for writing: the peer sees end of stream.
    public static func shutdownWrite(_ socket: FileDescriptor) {
        _ = Glibc.shutdown(socket.rawValue, Int32(SHUT_WR))
    }

    private static func makeAddress(_ path: String) throws(SystemCallError) -> sockaddr_un {
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        let capacity = MemoryLayout.size(ofValue: address.sun_path)
        guard !bytes.isEmpty, bytes.count < capacity else {
            throw SystemCallError(call: "socket", errno: ENAMETOOLONG, subject: path)
        }
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            raw.copyBytes(from: bytes)
            raw[bytes.count] = 0
        }
        return address
    }
}
