import ExpenseCtl
import Testing

/// What `expensectl` says when the kernel refuses its connection to the
/// control socket, decided from the socket's owner, group and mode and
/// the caller's groups: one case per reason.
@Suite struct SocketRefusalTests {
    static let expense: UInt32 = 990
    static let alice: UInt32 = 1001

    static func refusal(owner: UInt32 = 0, group: UInt32 = expense, mode: UInt32 = 0o660, groups: Set<UInt32> = [1001],
                        listed: Bool = false, visible: Bool = true) -> SocketRefusal {
        SocketRefusal(socket: visible ? .init(owner: owner, group: group, mode: mode) : nil, userID: alice, userName: "alice",
                      sessionGroups: groups, groupName: "expense", listedInGroup: listed, ownerName: owner == 0 ? "root" : "alice")
    }

    static let cases: [(SocketRefusal, String)] = [
        // Not in the group: ask to be added, with the command.
        (refusal(), "the socket is owned by root:expense, mode 0660, and you (alice) are not in group 'expense': ask to be added to the daemon's control group ('usermod -aG expense alice'), then log in again"),
        // Listed in the group database, not in this session's groups.
        (refusal(listed: true), "the socket is owned by root:expense, mode 0660: you (alice) were added to group 'expense' after this session began; log in again (or run 'newgrp expense')"),
        // In the group, kept out by the mode.
        (refusal(mode: 0o600, groups: [1001, expense]), "the socket is owned by root:expense, mode 0600: you (alice) are in group 'expense', but the mode keeps its group out; the daemon's control_group (or expensed.socket's SocketGroup= and SocketMode=0660) decides that"),
        // The owner, denied by the mode.
        (refusal(owner: alice, mode: 0o060), "the socket is owned by alice:expense, mode 060, which denies even its owner"),
        // Let in by the mode: a directory above is what refuses.
        (refusal(groups: [1001, expense]), "the socket is owned by root:expense, mode 0660, which lets you in: a directory above it is closed to you (connecting needs search permission on each one)"),
        (refusal(mode: 0o666), "the socket is owned by root:expense, mode 0666, which lets you in: a directory above it is closed to you (connecting needs search permission on each one)"),
        // Not even seen.
        (refusal(visible: false), "a directory above the socket is closed to you (connecting needs search permission on each one)"),
    ]

    @Test(arguments: cases)
    func explanation(_ refusal: SocketRefusal, _ expected: String) {
        #expect(refusal.explanation == expected)
    }
}
