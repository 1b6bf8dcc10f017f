import Posix

/// Who may use the control socket: root, the daemon's own user, and
/// members of the configured control group and admin group (checked with
/// `SO_PEERCRED`).
public struct AccessPolicy: Sendable {
    public let daemonUID: UInt32
    public let groupID: UInt32?
    public let groupName: String?
    public let adminGroupID: UInt32?
    public let adminGroupName: String?

    public init(daemonUID: UInt32, groupID: UInt32?, groupName: String?, adminGroupID: UInt32? = nil, adminGroupName: String? = nil) {
        self.daemonUID = daemonUID
        self.groupID = groupID
        self.groupName = groupName
        self.adminGroupID = adminGroupID
        self.adminGroupName = adminGroupName
    }

    public func allows(_ peer: PeerCredentials) -> Bool {
        if peer.uid == 0 || peer.uid == daemonUID { return true }
        return [groupID, adminGroupID].compactMap { $0 }.contains { peer.gid == $0 || peer.groups.contains($0) }
    }

    func refusal(_ peer: PeerCredentials) -> String {
        var allowed = "root and uid \(daemonUID)"
        if let groupName { allowed += " and members of group '\(groupName)'" }
        if let adminGroupName { allowed += " and members of group '\(adminGroupName)'" }
        return "uid \(peer.uid) may not use expensed (allowed: \(allowed))"
    }
}
