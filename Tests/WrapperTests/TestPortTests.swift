import ExpenseTestSupport
import Foundation
import Testing

/// The ports tests start servers on later: two test processes run side by
/// side (scripts/test), and neither may hand out a port the other holds.
@Suite struct TestPortTests {
    @Test func aPortHandedOut_isHeldAgainstAnotherProcess_untilThisOneExits() throws {
        let port = try ServerProcess.unusedPort()
        let bindName = """
            import socket, sys
            s = socket.socket(socket.AF_UNIX)
            try:
                s.bind(b"\\0" + sys.argv[1].encode())
            except OSError as e:
                print("taken" if e.errno == 98 else f"error {e.errno}")
            else:
                print("free")
            """
        let held = try runCommand("/usr/bin/python3", ["-c", bindName, ServerProcess.reservationName(port)], timeout: 30)
        #expect(held.stdout == "taken\n", "\(held.stdout) \(held.stderr)")
        // A name no process holds binds: the check can tell the two apart.
        let other = try runCommand("/usr/bin/python3", ["-c", bindName, "expensed-test-port-none-\(getpid())"], timeout: 30)
        #expect(other.stdout == "free\n", "\(other.stdout) \(other.stderr)")
    }
}
