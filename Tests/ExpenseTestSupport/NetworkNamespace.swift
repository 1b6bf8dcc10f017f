import Foundation

/// A network namespace of the test's own (`ip netns add`), removed when
/// the value goes: its loopback starts down, as the kernel makes it.
public final class NetworkNamespace: @unchecked Sendable {
    public let name: String

    public init() throws {
        name = "expensed-test-\(UUID().uuidString.prefix(8).lowercased())"
        try Self.ip(["netns", "add", name])
    }

    deinit { _ = try? runCommand("/usr/sbin/ip", ["netns", "delete", name]) }

    /// The launcher that runs a command inside it (`ip netns exec` execs it: its PID is the command's).
    public var launcher: [String] { ["/usr/sbin/ip", "netns", "exec", name] }

    /// Runs `ip ARGUMENTS` inside it (`ip -n NAME`).
    public func ip(_ arguments: [String]) throws {
        try Self.ip(["-n", name] + arguments)
    }

    static func ip(_ arguments: [String]) throws {
        let result = try runCommand("/usr/sbin/ip", arguments, timeout: 30)
        guard result.status == 0 else { throw TestFailure("ip \(arguments.joined(separator: " ")) exited \(result.status): \(result.stderr)") }
    }
}
