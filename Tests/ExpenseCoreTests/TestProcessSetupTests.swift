import ExpenseTestSupport
import Foundation
import Testing

/// The test process ignores SIGPIPE from its start, whichever test runs
/// first: a write to a peer that went away fails that write, not the run.
@Suite struct TestProcessSetupTests {
    @Test func sigpipe_isIgnoredBeforeAnyTest() throws {
        #expect(TestProcessSetup.isSigpipeIgnored)
        let status = try String(contentsOfFile: "/proc/self/status", encoding: .utf8)
        let ignored = try #require(status.split(separator: "\n").first { $0.hasPrefix("SigIgn:") }?.split(separator: "\t").last)
        let mask = try #require(UInt64(ignored, radix: 16))
        #expect(mask & (1 << (UInt64(SIGPIPE) - 1)) != 0, "SigIgn \(ignored)")
    }
}
