import Posix

/// Who may use the control socket: root, the daemon's own user, and
/// members of one configured group (checked with `SO_PEERCRED`).
public struct AccessPolicy: Sendable {
    public let daemonUID: UInt32
    public let groupID: UInt32?
    public let groupName: String?

    public init(daemonUID: UInt32, groupID: UInt32?, groupName: String?) {
        self.daemonUID = daemonUID
        self.groupID = groupID
        self.groupName = groupName
    }

    public func allows(_ peer: PeerCredentials) -> Bool {
        if peer.uid == 0 || peer.uid == daemonUID { return true }
        guard let groupID else { return false }
        return peer.gid == groupID || peer.groups.contains(groupID)
    }

    func refusal(_ peer: PeerCredentials) -> String {
        var allowed = "root and uid \(daemonUID)"
        if let groupName { allowed += " and members of group '\(groupName)'" }
        return "uid \(peer.uid) may not use expensed (allowed: \(allowed))"
    }
}
