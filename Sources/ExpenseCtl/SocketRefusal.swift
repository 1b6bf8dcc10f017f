import Posix
#if canImport(Glibc)
import Glibc
#endif

/// Why the kernel refused a connection to the control socket
/// (`EACCES`), told from what the socket's owner, group and mode say of
/// the caller: connecting needs write permission on the socket file and
/// search permission on each directory above it.
public struct SocketRefusal: Sendable, Equatable {
    /// The socket file's owner, group and permission bits.
    public struct Socket: Sendable, Equatable {
        public var owner: UInt32
        public var group: UInt32
        public var mode: UInt32
        public init(owner: UInt32, group: UInt32, mode: UInt32) {
            self.owner = owner
            self.group = group
            self.mode = mode
        }
    }

    /// The socket file as `stat` saw it; `nil` when it could not be seen,
    /// with `statErrno` saying why.
    public var socket: Socket?
    public var statErrno: Int32 = 0
    public var userID: UInt32
    public var userName: String?
    /// The groups the caller's session has now.
    public var sessionGroups: Set<UInt32>
    /// The name of the socket's group and whether the group database
    /// lists the caller in it.
    public var groupName: String?
    public var listedInGroup: Bool
    public var ownerName: String?

    public init(socket: Socket?, statErrno: Int32 = 0, userID: UInt32, userName: String?, sessionGroups: Set<UInt32>, groupName: String?,
                listedInGroup: Bool, ownerName: String?) {
        self.socket = socket
        self.statErrno = statErrno
        self.userID = userID
        self.userName = userName
        self.sessionGroups = sessionGroups
        self.groupName = groupName
        self.listedInGroup = listedInGroup
        self.ownerName = ownerName
    }

    /// What the system says of the caller and the socket at `path`.
    public static func observe(_ path: String) -> SocketRefusal {
        var socket: Socket?
        var statErrno: Int32 = 0
        do {
            let status = try FileSystem.status(path)
            socket = Socket(owner: status.owner, group: status.group, mode: status.mode)
        } catch {
            statErrno = error.errno
        }
        let me = Users.effectiveUserID
        var userName: String?
        if case .name(let name) = Users.lookup(user: me) { userName = name }
        let group = socket.flatMap { Users.groupEntry($0.group) }
        var ownerName: String?
        if let socket, case .name(let name) = Users.lookup(user: socket.owner) { ownerName = name }
        return SocketRefusal(socket: socket, statErrno: statErrno, userID: me, userName: userName, sessionGroups: Users.processGroups,
                             groupName: group?.name, listedInGroup: userName.map { group?.members.contains($0) ?? false } ?? false,
                             ownerName: ownerName)
    }

    /// One sentence on why, and what to do.
    public var explanation: String {
        guard let socket else {
            switch statErrno {
            case EACCES: return "a directory above the socket is closed to you (connecting needs search permission on each one)"
            case ENOENT: return "the socket is gone (the daemon may be restarting); try again"
            default: return "the socket cannot be looked at (\(String(cString: strerror(statErrno))))"
            }
        }
        let digits = String(socket.mode & 0o7777, radix: 8)
        let mode = String(repeating: "0", count: max(0, 4 - digits.count)) + digits
        let owner = ownerName ?? String(socket.owner)
        let group = groupName ?? String(socket.group)
        let you = userName.map { "you (\($0))" } ?? "you (uid \(userID))"
        let what = "the socket is owned by \(owner):\(group), mode \(mode)"
        if socket.owner == userID {
            if socket.mode & 0o200 == 0 { return "\(what), which denies even its owner" }
        } else if sessionGroups.contains(socket.group) {
            if socket.mode & 0o020 == 0 {
                return "\(what): \(you) are in group '\(group)', but the mode keeps its group out; "
                    + "expensed.socket's SocketMode= (0660) or a chmod of the socket decides that"
            }
        } else if socket.mode & 0o002 == 0 {
            if socket.group == 0 {
                return "\(what): the daemon has no control group; ask its administrator to set control_group "
                    + "in expensed.conf and to add you to that group"
            }
            if listedInGroup {
                return "\(what): \(you) were added to group '\(group)' after this session began; log in again (or run 'newgrp \(group)')"
            }
            let name = userName ?? "USER"
            return "\(what), and \(you) are not in group '\(group)': ask to be added to the daemon's control group "
                + "('usermod -aG \(group) \(name)'), then log in again"
        }
        return "\(what), which lets you in: something else refused the connection (a security module such as AppArmor "
            + "or SELinux), or the socket was replaced meanwhile; try again"
    }
}
