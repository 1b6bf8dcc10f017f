import Foundation
import Posix

/// A benchmark's command line, read strictly: `--help` (or `-h`) prints
/// the usage and exits 0 before anything runs; an unknown flag, a flag
/// without its value, or a value that is not a number where one is
/// wanted prints the usage and exits 64.
public struct BenchArguments: Sendable {
    public let program: String
    public let usage: String
    private var values: [String: String] = [:]
    private var switches: Set<String> = []

    /// - Parameters:
    ///   - usage: the usage text, printed as it is.
    ///   - options: flags that take a value (`--bin`).
    ///   - switches: flags that stand alone (`--quick`).
    public init(_ program: String, usage: String, options: [String], switches: [String] = [],
                arguments: [String] = Array(CommandLine.arguments.dropFirst())) {
        self.program = program
        self.usage = usage
        var rest = arguments[...]
        while let argument = rest.popFirst() {
            if argument == "--help" || argument == "-h" {
                print(usage)
                exit(0)
            } else if switches.contains(argument) {
                self.switches.insert(argument)
            } else if options.contains(argument) {
                guard let value = rest.popFirst(), !value.hasPrefix("--") else { refuse("\(argument) needs a value") }
                values[argument] = value
            } else {
                refuse("unknown argument '\(argument)'")
            }
        }
    }

    /// Prints why and the usage to standard error; exits 64.
    public func refuse(_ why: String) -> Never {
        FileHandle.standardError.write(Data("\(program): \(why)\n\(usage)\n".utf8))
        exit(64)
    }

    public func has(_ flag: String) -> Bool { switches.contains(flag) }
    public func value(_ flag: String) -> String? { values[flag] }

    /// The value of `flag` as a whole number in `range`, or `defaultValue`.
    public func int(_ flag: String, default defaultValue: Int, in range: ClosedRange<Int> = 1...Int(Int32.max)) -> Int {
        guard let text = values[flag] else { return defaultValue }
        guard let number = Int(text), range.contains(number) else { refuse("\(flag) must be a whole number from \(range.lowerBound) to \(range.upperBound)") }
        return number
    }

    /// The value of `flag` as a number in `range`, or `defaultValue`.
    public func double(_ flag: String, default defaultValue: Double?, in range: ClosedRange<Double>) -> Double? {
        guard let text = values[flag] else { return defaultValue }
        guard let number = Double(text), range.contains(number) else { refuse("\(flag) must be a number from \(range.lowerBound) to \(range.upperBound)") }
        return number
    }

    /// `--bin DIR` (`.build/release` without it), exported as
    /// `EXPENSED_BIN_DIR` for the programs the benchmark starts.
    public func binaryDirectory() -> String {
        let bin = values["--bin"] ?? ".build/release"
        setenv("EXPENSED_BIN_DIR", bin, 1)
        return bin
    }
}

/// What the benchmarks of bench/ that start the daemon share: their
/// measures.
public enum BenchRun {

    /// The value below which a fraction `p` of `values` lies (nearest rank).
    public static func percentile(_ values: [Double], _ p: Double) -> Double {
        let sorted = values.sorted()
        return sorted[min(sorted.count - 1, Int(Double(sorted.count) * p))]
    }

    /// Monotonic seconds.
    public static func now() -> Double { Double(Clock.monotonicNanoseconds) / 1e9 }
}
