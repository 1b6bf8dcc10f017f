import ExpenseTestSupport
import Testing

/// Every benchmark reads its command line before it measures anything:
/// `--help` prints the usage and exits 0, and a flag it does not know, a
/// flag without its value or a number that is not one exits 64 with the
/// usage, each without starting a daemon or a server.
@Suite struct BenchCommandLineTests {
    static let benchmarks = ["bench-daemon", "bench-list", "bench-receipt", "bench-spool", "bench-sync", "bench-backends", "bench-server"]

    @Test(arguments: benchmarks)
    func help_printsTheUsageAndRunsNothing(_ benchmark: String) throws {
        for flag in ["--help", "-h"] {
            let result = try runCommand(BuiltProducts.benchmark(benchmark), [flag], timeout: 30)
            #expect(result.status == 0, "\(benchmark) \(flag): \(result.stderr)")
            #expect(result.stdout.hasPrefix("usage: \(benchmark) "), "\(benchmark) \(flag): \(result.stdout)")
        }
    }

    @Test(arguments: benchmarks)
    func unknownFlag_isRefusedWithTheUsage(_ benchmark: String) throws {
        let result = try runCommand(BuiltProducts.benchmark(benchmark), ["--quik"], timeout: 30)
        #expect(result.status == 64)
        #expect(result.stderr.contains("\(benchmark): unknown argument '--quik'"), "\(result.stderr)")
        #expect(result.stderr.contains("usage: \(benchmark) "), "\(result.stderr)")
    }

    @Test(arguments: [
        ("bench-receipt", ["--rounds"], "--rounds needs a value"),
        ("bench-receipt", ["--rounds", "many"], "--rounds must be a whole number from 1 to 2147483647"),
        ("bench-spool", ["--files", "0"], "--files must be a whole number from 1 to 2147483647"),
        ("bench-spool", ["--size", "--bin", "x"], "--size needs a value"),
        ("bench-sync", ["--only", "everything"], "--only must be creates, receipts or memory"),
        ("bench-sync", ["--count", "-5"], "--count must be a whole number from 1 to 2147483647"),
        ("bench-backends", ["--only", "beancount"], "--only must be ihatemoney or fava"),
        ("bench-daemon", ["--bin"], "--bin needs a value"),
        ("bench-daemon", ["--baseline-bin", "/nonexistent"], "--baseline-bin: no executable expensed in '/nonexistent'"),
    ])
    func badValue_isRefusedNamingTheFlag(_ benchmark: String, _ arguments: [String], _ why: String) throws {
        let result = try runCommand(BuiltProducts.benchmark(benchmark), arguments, timeout: 30)
        #expect(result.status == 64, "\(benchmark) \(arguments): \(result.stderr)")
        #expect(result.stderr.contains("\(benchmark): \(why)"), "\(result.stderr)")
    }
}
