@testable import ExpenseDaemon
import Posix
import Testing

/// Which route netlink messages may bring the server back: a link newly
/// running, a default route; not a link already known running, one going
/// down, or another route.
@Suite struct NetworkWatchTests {
    @Test func regain_isALinkNewlyRunningOrADefaultRoute() {
        var running: Set<Int32> = []
        let name = { (index: Int32) in "eth\(index)" }
        #expect(NetworkWatch.regain(in: [.link(index: 2, running: true)], running: &running, name: name) == "link eth2 is up")
        #expect(NetworkWatch.regain(in: [.link(index: 2, running: true)], running: &running, name: name) == nil, "known running")
        #expect(NetworkWatch.regain(in: [.route, .link(index: 3, running: false)], running: &running, name: name) == nil)
        #expect(NetworkWatch.regain(in: [.link(index: 2, running: false)], running: &running, name: name) == nil, "going down")
        #expect(NetworkWatch.regain(in: [.link(index: 2, running: true), .defaultRoute], running: &running, name: name) == "link eth2 is up",
                "the first reason of a burst")
        #expect(NetworkWatch.regain(in: [.route, .defaultRoute], running: &running, name: name) == "a default route appeared")
        #expect(running == [2])
    }

    @Test func linkName_isTheInterfacesOrItsIndex() {
        #expect(NetworkWatch.linkName(1) == "lo")
        #expect(NetworkWatch.linkName(Int32.max) == "#\(Int32.max)")
    }
}
