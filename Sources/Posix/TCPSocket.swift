#if canImport(Glibc)
import Glibc
#endif

/// An IPv4 or IPv6 address and port, as `--listen` spells them:
/// `127.0.0.1:8080`, `[::1]:8080`, `0.0.0.0:0`, `localhost:8080`.
public struct SocketAddress: Sendable, Equatable, CustomStringConvertible {
    public enum Family: Sendable, Equatable { case ipv4, ipv6 }

    public let family: Family
    /// The address in its numeric text form, without brackets.
    public let host: String
    public let port: UInt16

    public init(family: Family, host: String, port: UInt16) {
        self.family = family
        self.host = host
        self.port = port
    }

    /// Parses `HOST:PORT`; `nil` when either part is not a numeric address
    /// or a port (host names other than `localhost` are not resolved).
    public init?(parsing text: String) {
        let host: Substring
        let portText: Substring
        if text.hasPrefix("[") {
            guard let close = text.firstIndex(of: "]") else { return nil }
            host = text[text.index(after: text.startIndex)..<close]
            let rest = text[text.index(after: close)...]
            guard rest.hasPrefix(":") else { return nil }
            portText = rest.dropFirst()
        } else {
            guard let colon = text.lastIndex(of: ":") else { return nil }
            host = text[..<colon]
            portText = text[text.index(after: colon)...]
        }
        guard !portText.isEmpty, portText.count <= 5, portText.allSatisfy({ $0.isASCII && $0.isNumber }),
              let port = UInt16(portText) else { return nil }
        let name = host == "localhost" ? "127.0.0.1" : String(host)
        var v4 = in_addr()
        var v6 = in6_addr()
        if inet_pton(AF_INET, name, &v4) == 1 {
            self.init(family: .ipv4, host: name, port: port)
        } else if inet_pton(AF_INET6, name, &v6) == 1 {
            self.init(family: .ipv6, host: name, port: port)
        } else {
            return nil
        }
    }

    /// `127.0.0.1:8080` or `[::1]:8080`.
    public var description: String {
        family == .ipv6 ? "[\(host)]:\(port)" : "\(host):\(port)"
    }
}

/// TCP listening sockets.
public enum TCPSocket {
    /// Binds and listens on `address` (`SO_REUSEADDR`, close-on-exec).
    /// Port 0 picks a free port: ask ``localAddress(_:)`` which one.
    /// Wraps `socket(2)`, `bind(2)` and `listen(2)`.
    public static func listen(_ address: SocketAddress, backlog: Int32 = 511) throws(SystemCallError) -> FileDescriptor {
        let domain = address.family == .ipv6 ? AF_INET6 : AF_INET
        let fd = FileDescriptor(owning: try retrying("socket", address.description) {
            Glibc.socket(domain, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        })
        var one: Int32 = 1
        try retrying("setsockopt", address.description) {
            setsockopt(fd.rawValue, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
        }
        switch address.family {
        case .ipv4:
            var sin = sockaddr_in()
            sin.sin_family = sa_family_t(AF_INET)
            sin.sin_port = address.port.bigEndian
            _ = inet_pton(AF_INET, address.host, &sin.sin_addr)
            try bind(fd, &sin, address)
        case .ipv6:
            var sin6 = sockaddr_in6()
            sin6.sin6_family = sa_family_t(AF_INET6)
            sin6.sin6_port = address.port.bigEndian
            _ = inet_pton(AF_INET6, address.host, &sin6.sin6_addr)
            // An IPv6 socket serves IPv6 only; `[::]` does not silently take IPv4 too.
            try retrying("setsockopt", address.description) {
                setsockopt(fd.rawValue, Int32(IPPROTO_IPV6), IPV6_V6ONLY, &one, socklen_t(MemoryLayout<Int32>.size))
            }
            try bind(fd, &sin6, address)
        }
        try retrying("listen", address.description) { Glibc.listen(fd.rawValue, backlog) }
        return fd
    }

    /// The address a socket is bound to. Wraps `getsockname(2)`.
    public static func localAddress(_ socket: FileDescriptor) throws(SystemCallError) -> SocketAddress {
        var storage = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        try typed {
            try withUnsafeMutablePointer(to: &storage) { pointer in
                try pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { sa in
                    try retrying("getsockname") { getsockname(socket.rawValue, sa, &length) }
                }
            }
        }
        var text = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN) + 1)
        switch Int32(storage.ss_family) {
        case AF_INET:
            let sin = withUnsafeBytes(of: storage) { $0.load(as: sockaddr_in.self) }
            var addr = sin.sin_addr
            inet_ntop(AF_INET, &addr, &text, socklen_t(text.count))
            return SocketAddress(family: .ipv4, host: Self.string(text), port: UInt16(bigEndian: sin.sin_port))
        case AF_INET6:
            let sin6 = withUnsafeBytes(of: storage) { $0.load(as: sockaddr_in6.self) }
            var addr = sin6.sin6_addr
            inet_ntop(AF_INET6, &addr, &text, socklen_t(text.count))
            return SocketAddress(family: .ipv6, host: Self.string(text), port: UInt16(bigEndian: sin6.sin6_port))
        default:
            throw SystemCallError(call: "getsockname", errno: EAFNOSUPPORT)
        }
    }

    /// True when `socket` is a listening TCP socket (what socket activation must pass).
    public static func isListeningStream(_ socket: FileDescriptor) -> Bool {
        var type: Int32 = 0
        var accepting: Int32 = 0
        var length = socklen_t(MemoryLayout<Int32>.size)
        guard getsockopt(socket.rawValue, SOL_SOCKET, SO_TYPE, &type, &length) == 0 else { return false }
        length = socklen_t(MemoryLayout<Int32>.size)
        guard getsockopt(socket.rawValue, SOL_SOCKET, SO_ACCEPTCONN, &accepting, &length) == 0 else { return false }
        return type == Int32(SOCK_STREAM.rawValue) && accepting == 1
    }

    private static func string(_ text: [CChar]) -> String {
        String(decoding: text.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    private static func bind<A>(_ fd: FileDescriptor, _ address: inout A, _ name: SocketAddress) throws(SystemCallError) {
        let size = socklen_t(MemoryLayout<A>.size)
        try typed {
            try withUnsafePointer(to: &address) { pointer in
                try pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { sa in
                    try retrying("bind", name.description) { Glibc.bind(fd.rawValue, sa, size) }
                }
            }
        }
    }
}
