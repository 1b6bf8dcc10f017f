import Posix
import Testing

/// Route netlink messages as the kernel lays them out (`rtnetlink(7)`),
/// read by the kernel's own `NLMSG_*` macros; the real socket is proven
/// by NetworkRegainTests in a network namespace.
@Suite struct RouteMonitorTests {
    static func le16(_ v: Int) -> [UInt8] { [UInt8(v & 0xFF), UInt8(v >> 8 & 0xFF)] }
    static func le32(_ v: Int) -> [UInt8] { le16(v & 0xFFFF) + le16(v >> 16 & 0xFFFF) }

    /// One message: `nlmsghdr` then `body`, padded to 4 bytes.
    static func message(type: Int, _ body: [UInt8]) -> [UInt8] {
        let bytes = le32(16 + body.count) + le16(type) + le16(0) + le32(0) + le32(0) + body
        return bytes + [UInt8](repeating: 0, count: (4 - bytes.count % 4) % 4)
    }

    /// `ifinfomsg`: family, pad, type, index, flags, change.
    static func link(index: Int, flags: Int) -> [UInt8] { [0, 0] + le16(1) + le32(index) + le32(flags) + le32(0xFFFF_FFFF) }

    /// `rtmsg`: family, dst_len, src_len, tos, table, protocol, scope, type, flags.
    static func route(destinationLength: UInt8, table: UInt8 = 254, type: UInt8 = 1) -> [UInt8] {
        [2, destinationLength, 0, 0, table, 4, 0, type] + le32(0)
    }

    static let up = 0x1, running = 0x40
    static let newLink = 16, delLink = 17, newRoute = 24, delRoute = 25, newAddress = 20

    @Test func linksAndRoutes_areReadInOrder_andOtherMessagesPassedOver() {
        let bytes = Self.message(type: Self.newLink, Self.link(index: 3, flags: Self.up | Self.running))
            + Self.message(type: Self.newLink, Self.link(index: 4, flags: Self.up))  // up, no carrier
            + Self.message(type: Self.newAddress, [2, 24, 0, 0] + Self.le32(3))
            + Self.message(type: Self.newRoute, Self.route(destinationLength: 0))
            + Self.message(type: Self.newRoute, Self.route(destinationLength: 24))
            + Self.message(type: Self.newRoute, Self.route(destinationLength: 0, table: 255, type: 2))  // local table
            + Self.message(type: Self.delRoute, Self.route(destinationLength: 0))
            + Self.message(type: Self.delLink, Self.link(index: 3, flags: Self.up | Self.running))
        #expect(RouteMonitor.parse(bytes) == [.link(index: 3, running: true), .link(index: 4, running: false), .defaultRoute, .route, .route,
                                              .link(index: 3, running: false)])
    }

    @Test(arguments: [0, 1, 15, 16, 31])
    func aTruncatedMessage_isPassedOver(_ length: Int) {
        let whole = Self.message(type: Self.newLink, Self.link(index: 3, flags: Self.up | Self.running))
        #expect(RouteMonitor.parse(Array(whole.prefix(length))).isEmpty)
    }

    @Test func aLengthThatLies_readsNothingPastTheBuffer() {
        var bytes = Self.message(type: Self.newLink, Self.link(index: 3, flags: Self.up | Self.running))
        bytes.replaceSubrange(0..<4, with: Self.le32(4096))
        #expect(RouteMonitor.parse(bytes).isEmpty)
        bytes.replaceSubrange(0..<4, with: Self.le32(20))  // a header and 4 bytes: too short for an ifinfomsg
        #expect(RouteMonitor.parse(bytes + [UInt8](repeating: 0, count: 12)).isEmpty)
    }
}
