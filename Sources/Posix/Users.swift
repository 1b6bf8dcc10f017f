#if canImport(Glibc)
import Glibc
#endif

/// Users and groups, from the system databases (`getgrnam_r(3)`, `getpwnam_r(3)`).
public enum Users {
    /// The numeric id of a group name, or of a number given as text.
    public static func groupID(named name: String) -> UInt32? {
        if let number = UInt32(name) { return number }
        return lookUpGroup({ group, buffer, result in
            let size = buffer.count
            return getgrnam_r(name, &group, &buffer, size, &result)
        }, { $0.gr_gid })
    }

    /// One `getgr*_r(3)` call, its buffer grown while the entry does not
    /// fit (`ERANGE`: a group of many members), read by `read` while the
    /// buffer lives; `nil` for no such group or a failed lookup.
    private static func lookUpGroup<T>(_ call: (inout Glibc.group, inout [CChar], inout UnsafeMutablePointer<Glibc.group>?) -> Int32,
                                       _ read: (Glibc.group) -> T?) -> T? {
        var size = 16384
        while size <= 1 << 24 {
            var group = Glibc.group()
            var buffer = [CChar](repeating: 0, count: size)
            var result: UnsafeMutablePointer<Glibc.group>?
            let code = call(&group, &buffer, &result)
            if code == ERANGE {
                size *= 4
                continue
            }
            guard code == 0, result != nil else { return nil }
            return withExtendedLifetime(buffer) { read(group) }
        }
        return nil
    }

    /// A group's name and the users the group database lists as its
    /// members (not those for whom it is the primary group); `nil` when
    /// there is no such group or it could not be read (`getgrgid_r(3)`).
    public static func groupEntry(_ id: UInt32) -> (name: String, members: [String])? {
        lookUpGroup({ group, buffer, result in
            let size = buffer.count
            return getgrgid_r(id, &group, &buffer, size, &result)
        }, { group in
            guard let name = group.gr_name else { return nil }
            var members: [String] = []
            if var member = group.gr_mem {
                while let name = member.pointee {
                    members.append(String(cString: name))
                    member += 1
                }
            }
            return (String(cString: name), members)
        })
    }

    /// The groups this process has: its effective group and its
    /// supplementary groups (`getegid(2)`, `getgroups(2)`), as they were
    /// when its session began.
    public static var processGroups: Set<UInt32> {
        var groups = Set([getegid()])
        let count = getgroups(0, nil)
        guard count > 0 else { return groups }
        var list = [gid_t](repeating: 0, count: Int(count))
        let got = getgroups(count, &list)
        if got > 0 { groups.formUnion(list.prefix(Int(got))) }
        return groups
    }

    /// What the password database says of a uid.
    public enum Lookup: Equatable, Sendable {
        case name(String)
        /// It has no entry: a uid without a name.
        case none
        /// It could not be asked (a name service down, a buffer too small):
        /// the answer is unknown, which is not "no such user".
        case failed(Int32)
    }

    /// The login name of `uid` (`getpwuid_r(3)`).
    public static func lookup(user uid: UInt32) -> Lookup {
        var entry = passwd()
        var buffer = [CChar](repeating: 0, count: 16384)
        var result: UnsafeMutablePointer<passwd>?
        let code = getpwuid_r(uid, &entry, &buffer, buffer.count, &result)
        // 0 with no entry, or one of the codes getpwuid_r(3) gives for "not found".
        guard [0, ENOENT, ESRCH, EBADF, EPERM].contains(code) else { return .failed(code) }
        guard result != nil, let name = entry.pw_name else { return .none }
        return .name(String(cString: name))
    }

    /// This process's effective uid.
    public static var effectiveUserID: UInt32 { geteuid() }
}

/// The environment, read without Foundation.
public enum Environment {
    public static subscript(_ name: String) -> String? {
        guard let value = getenv(name) else { return nil }
        return String(cString: value)
    }
}
