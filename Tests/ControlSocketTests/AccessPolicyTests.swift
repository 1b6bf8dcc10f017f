@testable import ControlSocket
@testable import Posix
import Testing

/// Who may use the control socket (`SO_PEERCRED`): root, the daemon's
/// user, and members of the control or admin group, by their primary
/// group or a supplementary one; everyone else is refused with who is
/// allowed.
@Suite struct AccessPolicyTests {
    static let daemon: UInt32 = 500
    static let control: UInt32 = 990
    static let admin: UInt32 = 991

    static func peer(uid: UInt32, gid: UInt32 = 1000, groups: [UInt32] = []) -> PeerCredentials {
        PeerCredentials(pid: 42, uid: uid, gid: gid, groups: groups)
    }

    static let both = AccessPolicy(daemonUID: daemon, groupID: control, groupName: "expense", adminGroupID: admin, adminGroupName: "expense-admin")
    static let none = AccessPolicy(daemonUID: daemon, groupID: nil, groupName: nil)

    static let cases: [(AccessPolicy, PeerCredentials, Bool)] = [
        (both, peer(uid: 0), true),
        (both, peer(uid: daemon), true),
        (both, peer(uid: 1001, gid: control), true),
        (both, peer(uid: 1001, groups: [7, control]), true),
        (both, peer(uid: 1001, groups: [admin]), true),
        (both, peer(uid: 1001, gid: admin), true),
        (both, peer(uid: 1001, groups: [7, 8]), false),
        (both, peer(uid: 1001), false),
        (none, peer(uid: 0), true),
        (none, peer(uid: daemon), true),
        (none, peer(uid: 1001, gid: control, groups: [control, admin]), false),
        (none, peer(uid: 65534, gid: 65534), false),
    ]

    @Test(arguments: cases)
    func allows(_ policy: AccessPolicy, _ peer: PeerCredentials, _ allowed: Bool) {
        #expect(policy.allows(peer) == allowed)
    }

    @Test func refusal_namesWhoIsAllowed() {
        #expect(Self.both.refusal(Self.peer(uid: 1001)) == "uid 1001 may not use expensed (allowed: root and uid 500 and members of group 'expense' and members of group 'expense-admin')")
        #expect(Self.none.refusal(Self.peer(uid: 65534)) == "uid 65534 may not use expensed (allowed: root and uid 500)")
    }
}
