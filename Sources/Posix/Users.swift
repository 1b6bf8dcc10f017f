#if canImport(Glibc)
import Glibc
#endif

/// Users and groups, from the system databases (`getgrnam_r(3)`, `getpwnam_r(3)`).
public enum Users {
    /// The numeric id of a group name, or of a number given as text.
    public static func groupID(named name: String) -> UInt32? {
        if let number = UInt32(name) { return number }
        var group = group()
        var buffer = [CChar](repeating: 0, count: 16384)
        var result: UnsafeMutablePointer<group>?
        guard getgrnam_r(name, &group, &buffer, buffer.count, &result) == 0, result != nil else { return nil }
        return group.gr_gid
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
