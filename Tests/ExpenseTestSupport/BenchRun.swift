import Foundation
import Posix

/// What the benchmarks of bench/ that start the daemon share: their
/// command line (`--quick`, `--bin DIR`) and their measures.
public enum BenchRun {
    /// `--quick`: fewer rounds, to see that the benchmark runs.
    public static let isQuick = CommandLine.arguments.contains("--quick")

    /// `--bin DIR` (`.build/release` without it), exported as
    /// `EXPENSED_BIN_DIR` for the programs the benchmark starts.
    public static func binaryDirectory() -> String {
        let arguments = CommandLine.arguments
        let bin = arguments.firstIndex(of: "--bin").flatMap { $0 + 1 < arguments.count ? arguments[$0 + 1] : nil } ?? ".build/release"
        setenv("EXPENSED_BIN_DIR", bin, 1)
        return bin
    }

    /// The value below which a fraction `p` of `values` lies (nearest rank).
    public static func percentile(_ values: [Double], _ p: Double) -> Double {
        let sorted = values.sorted()
        return sorted[min(sorted.count - 1, Int(Double(sorted.count) * p))]
    }

    /// Monotonic seconds.
    public static func now() -> Double { Double(Clock.monotonicNanoseconds) / 1e9 }
}
