import ExpenseCtl
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// What `expensectl` says when the kernel refuses its connection to the
/// control socket, decided from the socket's owner, group and mode and
/// the caller's groups: one case per reason.
@Suite struct SocketRefusalTests {
    static let expense: UInt32 = 990
    static let alice: UInt32 = 1001

    static func refusal(owner: UInt32 = 0, group: UInt32 = expense, mode: UInt32 = 0o660, groups: Set<UInt32> = [1001],
                        listed: Bool = false, statErrno: Int32? = nil) -> SocketRefusal {
        SocketRefusal(socket: statErrno == nil ? .init(owner: owner, group: group, mode: mode) : nil, statErrno: statErrno ?? 0,
                      userID: alice, userName: "alice", sessionGroups: groups, groupName: group == 0 ? "root" : "expense",
                      listedInGroup: listed, ownerName: owner == 0 ? "root" : "alice")
    }

    static let cases: [(SocketRefusal, String)] = [
        // Not in the group: ask to be added, with the command.
        (refusal(), "the socket is owned by root:expense, mode 0660, and you (alice) are not in group 'expense': ask to be added to the daemon's control group ('usermod -aG expense alice'), then log in again"),
        // Listed in the group database, not in this session's groups.
        (refusal(listed: true), "the socket is owned by root:expense, mode 0660: you (alice) were added to group 'expense' after this session began; log in again (or run 'newgrp expense')"),
        // The socket's group is root's: no control group to join.
        (refusal(group: 0), "the socket is owned by root:root, mode 0660: the daemon has no control group; ask its administrator to set control_group in expensed.conf and to add you to that group"),
        // In the group, kept out by the mode.
        (refusal(mode: 0o600, groups: [1001, expense]), "the socket is owned by root:expense, mode 0600: you (alice) are in group 'expense', but the mode keeps its group out; expensed.socket's SocketMode= (0660) or a chmod of the socket decides that"),
        // The owner, denied by the mode.
        (refusal(owner: alice, mode: 0o060), "the socket is owned by alice:expense, mode 0060, which denies even its owner"),
        // Let in by the mode: something other than the permissions refused.
        (refusal(groups: [1001, expense]), "the socket is owned by root:expense, mode 0660, which lets you in: something else refused the connection (a security module such as AppArmor or SELinux), or the socket was replaced meanwhile; try again"),
        (refusal(mode: 0o666), "the socket is owned by root:expense, mode 0666, which lets you in: something else refused the connection (a security module such as AppArmor or SELinux), or the socket was replaced meanwhile; try again"),
        // Not even seen: a directory closed, or the socket gone.
        (refusal(statErrno: EACCES), "a directory above the socket is closed to you (connecting needs search permission on each one)"),
        (refusal(statErrno: ENOENT), "the socket is gone (the daemon may be restarting); try again"),
    ]

    @Test(arguments: cases)
    func explanation(_ refusal: SocketRefusal, _ expected: String) {
        #expect(refusal.explanation == expected)
    }
}
