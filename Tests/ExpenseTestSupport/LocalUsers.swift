import Foundation
import Synchronization

/// Local users and groups made by a test with `useradd`/`groupadd`, with
/// names of their own (a pid and a counter: concurrent test runs never
/// share one), removed by ``remove()`` (call it in a `defer`, so a failed
/// test removes them too) and, failing that, when this object goes away.
/// Commands run as them through `setpriv --reuid --regid --init-groups`.
public final class LocalUsers: @unchecked Sendable {
    /// Role ("alice") to the user's name on this machine ("xalice4242n3").
    public private(set) var names: [String: String] = [:]
    public private(set) var groups: [String: String] = [:]
    private let tag: String
    private var removed = false
    private static let made = Atomic<Int>(0)

    public init() {
        let n = Self.made.add(1, ordering: .relaxed).newValue
        tag = "\(getpid())n\(n)"
    }

    /// Makes a group for `role`, named for this run.
    @discardableResult
    public func addGroup(_ role: String) throws -> String {
        let name = "x\(role.prefix(8))\(tag)"
        let result = try runCommand("/usr/sbin/groupadd", [name])
        guard result.status == 0 else { throw TestFailure("groupadd \(name): \(result.stderr)") }
        groups[role] = name
        return name
    }

    /// Makes a user for `role` (no home, no login shell), member of the
    /// groups of `groupRoles` (made with ``addGroup(_:)``).
    @discardableResult
    public func addUser(_ role: String, groups groupRoles: [String] = []) throws -> String {
        let name = "x\(role.prefix(8))\(tag)"
        var arguments = ["--no-create-home", "--shell", "/usr/sbin/nologin", "--user-group"]
        let memberOf = groupRoles.compactMap { groups[$0] }
        if !memberOf.isEmpty { arguments += ["--groups", memberOf.joined(separator: ",")] }
        let result = try runCommand("/usr/sbin/useradd", arguments + [name])
        guard result.status == 0 else { throw TestFailure("useradd \(name): \(result.stderr)") }
        names[role] = name
        return name
    }

    public func name(_ role: String) -> String { names[role] ?? role }

    /// The uid of `role`'s user.
    public func uid(_ role: String) -> UInt32 { getpwnam(name(role))?.pointee.pw_uid ?? UInt32.max }

    /// Runs `executable` as `role`'s user, with its groups.
    public func run(as role: String, _ executable: String, _ arguments: [String], environment: [String: String] = [:],
                    timeout: Double = 60) throws -> CommandResult {
        let user = name(role)
        return try runCommand("/usr/bin/setpriv", ["--reuid=\(user)", "--regid=\(user)", "--init-groups", "--", executable] + arguments,
                              environment: environment, timeout: timeout)
    }

    /// Removes every user and group made (their files elsewhere are the test's).
    public func remove() {
        guard !removed else { return }
        removed = true
        for name in names.values { _ = try? runCommand("/usr/sbin/userdel", [name]) }
        for name in groups.values { _ = try? runCommand("/usr/sbin/groupdel", [name]) }
    }

    deinit { remove() }
}
