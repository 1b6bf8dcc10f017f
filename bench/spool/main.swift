// bench-spool: how fast the spool turns dropped receipts into jobs, beside
// what durably copying the same files costs on the same disk.
//
// Usage: bench-spool [--bin DIR] [--files N] [--size BYTES] [--settle DURATION] [--rounds N] [--copies]
// Starts the expensed in DIR (default .build/release) in a temporary
// folder. With --copies: intake of photos each of which needs a legible
// copy, beside the same intake with a decoder that does nothing. Prints one line per figure; compare the ratios printed
// in one run: absolute numbers move with the machine.
import ExpenseCore
import ExpenseTestSupport
import Foundation
import Posix

let options = BenchArguments("bench-spool", usage: "usage: bench-spool [--bin DIR] [--files N] [--size BYTES] [--settle DURATION] [--rounds N] [--copies]",
                             options: ["--bin", "--files", "--size", "--settle", "--rounds"], switches: ["--copies"])
let bin = options.binaryDirectory()
let copies = options.has("--copies")
let fileCount = options.int("--files", default: copies ? 200 : 1000)
let fileSize = options.int("--size", default: 200 * 1024)
let settles = options.value("--settle").map { [$0] } ?? ["500ms", "0ms"]

func now() -> Double { Double(Clock.monotonicNanoseconds) / 1e9 }
func fail(_ message: String) -> Never {
    FileHandle.standardError.write(Data("bench-spool: \(message)\n".utf8))
    exit(1)
}

/// `count` whole JPEG files of `size` bytes in `directory`, each different
/// (the spool takes only whole receipts).
func makeFiles(in directory: String, count: Int, size: Int) throws -> [String] {
    try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
    // xorshift64: incompressible enough, and cheap (no system call per byte).
    var state = UInt64.random(in: 1...UInt64.max)
    return try (0..<count).map { n in
        let name = "receipt-\(n).jpg"
        var filler: [UInt8] = []
        filler.reserveCapacity(size)
        while filler.count < size {
            state ^= state << 13
            state ^= state >> 7
            state ^= state << 17
            withUnsafeBytes(of: state) { filler += $0.prefix(size - filler.count) }
        }
        let bytes = ReceiptBytes.make(.jpeg, size: size, label: name) { [filler] in filler[$0 % filler.count] }
        try Data(bytes).write(to: URL(fileURLWithPath: "\(directory)/\(name)"))
        return name
    }
}

/// The raw rate: each file copied (in the kernel) to a temporary name,
/// `fsync`, `rename`, `fsync` of the directory, one after the other.
func durableCopies(_ names: [String], from source: String, to destination: String) throws -> Double {
    try FileManager.default.createDirectory(atPath: destination, withIntermediateDirectories: true)
    let start = now()
    for name in names {
        let input = try FileDescriptor.open("\(source)/\(name)", [.readOnly])
        let temporary = "\(destination)/.\(name).tmp"
        let output = try FileDescriptor.open(temporary, [.writeOnly, .create, .exclusive], mode: 0o600)
        var offset: Int64 = 0
        while try output.copy(from: input, offset: &offset, count: 1 << 20) > 0 {}
        try output.sync()
        try FileSystem.rename(temporary, to: "\(destination)/\(name)")
        try FileSystem.syncDirectory(destination)
    }
    return Double(names.count) / (now() - start)
}

/// `count` phone photos in `directory`: one 1600 × 1200 JPEG with EXIF
/// location (so each needs a legible copy without it), each file made
/// different by a comment segment after its start (the same bytes twice
/// would be held as the same receipt).
func makePhotos(in directory: String, count: Int) throws -> [String] {
    try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
    let work = TemporaryDirectory(prefix: "bench-photo")
    try Data(RealReceiptFiles.exifWithLocation()).write(to: URL(fileURLWithPath: work.at("gps.app1")))
    try RealReceiptFiles.run(RealReceiptFiles.convert, ["-size", "1600x1200", "plasma:fractal", "-quality", "85", "-profile", work.at("gps.app1"),
                                                        work.at("photo.jpg")])
    guard let photo = FileManager.default.contents(atPath: work.at("photo.jpg")).map([UInt8].init), photo.starts(with: [0xFF, 0xD8]) else {
        fail("ImageMagick made no JPEG")
    }
    return try (0..<count).map { n in
        let name = "photo-\(n).jpg"
        let text = Array("bench photo \(n)".utf8)
        let comment: [UInt8] = [0xFF, 0xFE, UInt8((text.count + 2) >> 8), UInt8((text.count + 2) & 0xFF)] + text
        try Data(photo.prefix(2) + comment + photo.dropFirst(2)).write(to: URL(fileURLWithPath: "\(directory)/\(name)"))
        return name
    }
}

/// Intake: the files renamed into the spool of a stopped daemon; timed
/// from its resumption until the status shows every job committed.
func spoolIntake(_ names: [String], from source: String, settle: String, arguments: [String] = []) throws -> Double {
    let daemon = DaemonHarness(arguments: ["--spool-settle", settle] + arguments, spool: true)
    try daemon.start()
    defer { daemon.stop() }
    let spool = daemon.spoolDirectory
    daemon.process?.signal(SIGSTOP)
    for name in names { try FileSystem.rename("\(source)/\(name)", to: "\(spool)/\(name)") }
    let start = now()
    daemon.process?.signal(SIGCONT)
    // Each receipt is two jobs: the create and its upload (which needs
    // attention once a decoder that does nothing failed to copy it).
    func committed() throws -> Int64 {
        let status = try daemon.request(["op": "status"])["result"]
        return (status?["queued"]?.intValue ?? 0) + (status?["needs_attention"]?.intValue ?? 0)
    }
    while try committed() < Int64(2 * names.count) {
        if now() - start > 600 { fail("intake did not finish") }
        usleep(5_000)
    }
    let rate = Double(names.count) / (now() - start)
    let left = try daemon.spoolEntries()
    if !left.isEmpty { fail("\(left.count) files left in the spool") }
    return rate
}

let rounds = options.int("--rounds", default: 3)
if copies {
    // Intake with the legible copies made meanwhile ÷ intake with a decoder
    // that exits at once (as before copies were made): the acknowledgement
    // does not wait for the copy, so only sharing the cores may cost.
    let settle = options.value("--settle") ?? "500ms"
    print("bench-spool --copies: bin=\(bin) files=\(fileCount) (1600 x 1200 JPEG photos with location) settle=\(settle) rounds=\(rounds)")
    let scratch = NSTemporaryDirectory() + "bench-spool-\(UUID().uuidString.prefix(8))"
    defer { try? FileManager.default.removeItem(atPath: scratch) }
    var ratios: [Double] = []
    for round in 0..<rounds {
        var rates: [Bool: Double] = [:]
        // Which goes first alternates, so neither always has the colder cache.
        for withCopies in round % 2 == 0 ? [false, true] : [true, false] {
            let dir = "\(scratch)/\(round)-\(withCopies)"
            let names = try makePhotos(in: dir, count: fileCount)
            sync()
            rates[withCopies] = try spoolIntake(names, from: dir, settle: settle, arguments: withCopies ? [] : ["--receipt-decoder", "/bin/false"])
            try? FileManager.default.removeItem(atPath: dir)
        }
        let ratio = rates[false]! / rates[true]!
        ratios.append(ratio)
        print("round \(round + 1): intake with copies \(String(format: "%.0f", rates[true]!)) files/s; without \(String(format: "%.0f", rates[false]!)) files/s; time ratio \(String(format: "%.2f", ratio))")
    }
    print("intake time with copies ÷ without: median \(String(format: "%.2f", ratios.sorted()[ratios.count / 2])) (target <= 1.1)")
    exit(0)
}
print("bench-spool: bin=\(bin) files=\(fileCount) size=\(fileSize) bytes rounds=\(rounds)")
let scratch = NSTemporaryDirectory() + "bench-spool-\(UUID().uuidString.prefix(8))"
defer { try? FileManager.default.removeItem(atPath: scratch) }
let mib = Double(fileSize) / 1_048_576
func rate(_ files: Double) -> String { String(format: "%.0f files/s (%.1f MiB/s)", files, files * mib) }
for settle in settles {
    var ratios: [Double] = []
    for round in 0..<rounds {
        let dir = "\(scratch)/\(settle)-\(round)"
        let source = "\(dir)/source"
        let names = try makeFiles(in: source, count: fileCount, size: fileSize)
        // Each phase starts with nothing left to write back, so neither
        // pays for the other's (or the set-up's) dirty pages.
        sync()
        let raw = try durableCopies(names, from: source, to: "\(dir)/copies")
        sync()
        let intake = try spoolIntake(names, from: source, settle: settle)
        ratios.append(intake / raw)
        print("spool_settle=\(settle) round \(round + 1): intake \(rate(intake)); durable copy \(rate(raw)); ratio \(String(format: "%.2f", intake / raw))")
        try? FileManager.default.removeItem(atPath: dir)
    }
    print("spool_settle=\(settle): median ratio \(String(format: "%.2f", ratios.sorted()[ratios.count / 2])) (target >= 0.7)")
}
