// bench-receipt: `expensectl receipt` of a large receipt from the daemon's
// own copy, beside `cat` of the same file, both writing into a pipe that
// this program drains (as a viewer reading `expensectl receipt ID | …`
// would), sampled in turn.
//
// Usage: bench-receipt [--bin DIR] [--size BYTES] [--rounds N]
// Starts the expensed in DIR (default .build/release) in a temporary
// folder with no server (the receipt stays queued), adds one receipt of
// --size bytes (default 10 MiB), then runs `cat FILE` and `expensectl
// receipt ID` in turn, --rounds times each (default 40). Prints each one's
// median time and rate, and the ratio of the rates; compare the ratio.
import ExpenseCore
import ExpenseTestSupport
import Foundation
import Posix

let options = BenchArguments("bench-receipt", usage: "usage: bench-receipt [--bin DIR] [--size BYTES] [--rounds N]",
                             options: ["--bin", "--size", "--rounds"])
let bin = options.binaryDirectory()
let size = options.int("--size", default: 10 << 20)
let rounds = options.int("--rounds", default: 40)

func now() -> Double { Double(Clock.monotonicNanoseconds) / 1e9 }
func fail(_ message: String) -> Never {
    FileHandle.standardError.write(Data("bench-receipt: \(message)\n".utf8))
    exit(1)
}

/// Runs `executable` with its standard output into a pipe read here to
/// the end; returns the seconds from start to exit and the bytes read.
func timedRun(_ executable: String, _ arguments: [String]) throws -> (seconds: Double, bytes: Int) {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: executable)
    process.arguments = arguments
    let pipe = Pipe()
    process.standardOutput = pipe
    process.standardError = FileHandle.nullDevice
    let reader = pipe.fileHandleForReading.fileDescriptor
    var buffer = [UInt8](repeating: 0, count: 1 << 20)
    let start = now()
    try process.run()
    try? pipe.fileHandleForWriting.close()
    var total = 0
    while true {
        let n = buffer.withUnsafeMutableBytes { read(reader, $0.baseAddress, $0.count) }
        if n < 0 && errno == EINTR { continue }
        if n <= 0 { break }
        total += n
    }
    process.waitUntilExit()
    let seconds = now() - start
    guard process.terminationStatus == 0 else { fail("\(executable) \(arguments.joined(separator: " ")) exited \(process.terminationStatus)") }
    return (seconds, total)
}

func median(_ values: [Double]) -> Double {
    let sorted = values.sorted()
    return sorted[sorted.count / 2]
}

let daemon = DaemonHarness(arguments: ["--server", "none"])
try daemon.start()
defer { daemon.stop() }
let source = daemon.directory.at("scan.jpg")
// xorshift64 filler: incompressible, like a photo.
var state = UInt64.random(in: 1...UInt64.max)
var filler = [UInt8]()
filler.reserveCapacity(1 << 16)
while filler.count < 1 << 16 {
    state ^= state << 13
    state ^= state >> 7
    state ^= state << 17
    withUnsafeBytes(of: state) { filler += $0 }
}
let bytes = ReceiptBytes.make(.jpeg, size: size) { filler[$0 % filler.count] }
try Data(bytes).write(to: URL(fileURLWithPath: source))
let added = try daemon.ctl(["add", "--receipt", source])
guard added.status == 0 else { fail("add: \(added.stderr)") }
let id = added.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
guard let copy = daemon.receiptFiles().first else { fail("no receipt copy in the state directory") }
// cat reads the very file the daemon hands out, so both read the same page cache.
let copyPath = "\(daemon.stateDirectory)/receipts/\(copy)"
let expensectl = "\(bin)/expensectl"
let cat = "/bin/cat"

var catTimes: [Double] = [], receiptTimes: [Double] = []
// One of each first, unmeasured: caches warm for both.
_ = try timedRun(cat, [copyPath])
_ = try timedRun(expensectl, ["--socket", daemon.socketPath, "receipt", id])
for _ in 0..<rounds {
    let c = try timedRun(cat, [copyPath])
    let r = try timedRun(expensectl, ["--socket", daemon.socketPath, "receipt", id])
    guard c.bytes == size, r.bytes == size else { fail("read \(c.bytes) and \(r.bytes) bytes, not \(size)") }
    catTimes.append(c.seconds)
    receiptTimes.append(r.seconds)
}
let mib = Double(size) / Double(1 << 20)
let catMedian = median(catTimes), receiptMedian = median(receiptTimes)
print(String(format: "receipt of %.1f MiB from the local copy into a pipe, %d rounds each, in turn", mib, rounds))
print(String(format: "  cat FILE:                 median %7.2f ms  %8.0f MiB/s", catMedian * 1000, mib / catMedian))
print(String(format: "  expensectl receipt ID:    median %7.2f ms  %8.0f MiB/s", receiptMedian * 1000, mib / receiptMedian))
print(String(format: "  ratio (receipt rate / cat rate): %.2f", catMedian / receiptMedian))
