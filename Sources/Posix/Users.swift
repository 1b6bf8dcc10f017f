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

    /// The login name of `uid` (`getpwuid_r(3)`), or nil when the password
    /// database has none (a uid without a name has no account).
    public static func name(ofUser uid: UInt32) -> String? {
        var entry = passwd()
        var buffer = [CChar](repeating: 0, count: 16384)
        var result: UnsafeMutablePointer<passwd>?
        guard getpwuid_r(uid, &entry, &buffer, buffer.count, &result) == 0, result != nil, let name = entry.pw_name else { return nil }
        return String(cString: name)
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
