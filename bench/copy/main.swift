// bench-copy: the legible copy of a phone-sized photo, made as the daemon
// makes it (expensed-decode in its sandbox, through ReceiptDecoder),
// beside `vips thumbnail` of the same file to the same size in the same
// run, sampled in turn; and the bytes a backend is sent for a set of
// phone photos against their originals.
//
// Usage: bench-copy [--bin DIR] [--baseline-bin DIR] [--rounds N] [--megapixels N]
// Makes a 12-megapixel (--megapixels) photo with ImageMagick, as HEIC and
// as JPEG (quality 92), in a temporary folder; then for each, --rounds
// times (default 10) in turn: `vips thumbnail FILE out.jpg 2500 --size
// down` and the decoder of DIR (default .build/release). Prints each
// one's median and the ratio (target ≤ 1.3), then the sizes: originals
// against what the decoder sends (target ≤ 25 %). With --baseline-bin,
// the small receipt also goes through that build's decoder, in turn with
// this one's: wall time and the decoder's CPU (its rusage), this ÷ that.
import ExpenseCore
import ExpenseTestSupport
import Foundation
import Posix
import ReceiptCopy

let options = BenchArguments("bench-copy", usage: "usage: bench-copy [--bin DIR] [--baseline-bin DIR] [--rounds N] [--megapixels N]",
                             options: ["--bin", "--baseline-bin", "--rounds", "--megapixels"])
let bin = options.binaryDirectory()
let baselineBin = options.value("--baseline-bin")
let rounds = options.int("--rounds", default: 10)
let megapixels = options.int("--megapixels", default: 12, in: 1...100)

func fail(_ message: String) -> Never {
    FileHandle.standardError.write(Data("bench-copy: \(message)\n".utf8))
    exit(1)
}

func run(_ executable: String, _ arguments: [String]) {
    let result: CommandResult
    do { result = try runCommand(executable, arguments, timeout: 600) } catch { fail("\(executable): \(error)") }
    guard result.status == 0 else { fail("\(executable) \(arguments.joined(separator: " ")): \(result.stderr)") }
}

let directory = TemporaryDirectory(prefix: "bench-copy")
// A photo-like image (noise over a gradient, so it compresses as photos do) of 4:3.
let width = Int((Double(megapixels) * 1_000_000 * 4 / 3).squareRoot())
let height = width * 3 / 4
run("/usr/bin/convert", ["-size", "\(width)x\(height)", "plasma:fractal", "-blur", "0x1", "-attenuate", "0.4", "+noise", "Gaussian",
                        "-quality", "92", directory.at("photo.jpg")])
run("/usr/bin/convert", [directory.at("photo.jpg"), "-quality", "80", directory.at("photo.heic")])

let decoder = ReceiptDecoder(executable: "\(bin)/expensed-decode", settings: CopySettings())
print("bench-copy: \(width)×\(height) photo, \(rounds) rounds each, decoder \(bin)/expensed-decode")
var sizes: [(String, Int, Int)] = []
for name in ["photo.jpg", "photo.heic"] {
    let path = directory.at(name)
    var vips: [Double] = [], ours: [Double] = []
    var sent = 0
    for _ in 0..<rounds {
        var start = BenchRun.now()
        run("/usr/bin/vips", ["thumbnail", path, directory.at("vips.jpg"), "2500", "--size", "down"])
        vips.append(BenchRun.now() - start)
        start = BenchRun.now()
        do {
            let file = try FileDescriptor.open(path, .readOnly)
            guard case .copy(_, let bytes, _, _, _) = try decoder.copy(of: file, kind: name.hasSuffix(".jpg") ? .jpeg : .heif) else {
                fail("\(name) went as it is")
            }
            sent = bytes.count
        } catch { fail("\(name): \(error)") }
        ours.append(BenchRun.now() - start)
    }
    let original = (try? FileManager.default.attributesOfItem(atPath: path)[.size] as? Int) ?? 0
    sizes.append((name, original, sent))
    let (v, o) = (BenchRun.percentile(vips, 0.5), BenchRun.percentile(ours, 0.5))
    print(String(format: "%@: vips thumbnail %.3f s, expensed-decode %.3f s (sandbox included), ratio %.2f", name, v, o, o / v))
}
// A small receipt, which goes as it is: what it costs is the decoder's
// start and the header's read. Told its kind (as the daemon tells it),
// ImageMagick is not started; not told, it is.
run("/usr/bin/convert", ["-size", "800x600", "plasma:fractal", "-quality", "85", directory.at("small.jpg")])
/// The CPU seconds of the children waited for so far (the decoders).
func childrenCPU() -> Double {
    var usage = rusage()
    getrusage(RUSAGE_CHILDREN.rawValue, &usage)
    return Double(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) + Double(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6
}

/// One copy of the small receipt by `decoder`: its wall and CPU seconds.
func smallCopy(_ decoder: ReceiptDecoder, kind: ReceiptKind?) -> (wall: Double, cpu: Double) {
    let (start, cpu) = (BenchRun.now(), childrenCPU())
    do {
        _ = try decoder.copy(of: try FileDescriptor.open(directory.at("small.jpg"), .readOnly), kind: kind)
    } catch { fail("small.jpg: \(error)") }
    return (BenchRun.now() - start, childrenCPU() - cpu)
}

let baselineDecoder = baselineBin.map { ReceiptDecoder(executable: "\($0)/expensed-decode", settings: CopySettings()) }
var told: [Double] = [], untold: [Double] = [], toldCPU: [Double] = [], baseline: [Double] = [], baselineCPU: [Double] = []
for _ in 0..<(rounds * 4) {
    var copy = smallCopy(decoder, kind: .jpeg)
    told.append(copy.wall)
    toldCPU.append(copy.cpu)
    untold.append(smallCopy(decoder, kind: nil).wall)
    if let baselineDecoder {
        copy = smallCopy(baselineDecoder, kind: .jpeg)
        baseline.append(copy.wall)
        baselineCPU.append(copy.cpu)
    }
}
let (t, u) = (BenchRun.percentile(told, 0.5), BenchRun.percentile(untold, 0.5))
print(String(format: "small.jpg (800×600, goes as it is): decoder told its kind %.1f ms (CPU %.1f ms), not told (modules and ImageMagick started) %.1f ms, ratio %.2f",
             t * 1000, BenchRun.percentile(toldCPU, 0.5) * 1000, u * 1000, t / u))
if let baselineBin {
    let (b, c, bc) = (BenchRun.percentile(baseline, 0.5), BenchRun.percentile(toldCPU, 0.5), BenchRun.percentile(baselineCPU, 0.5))
    print(String(format: "small.jpg told its kind, this build ÷ %@ in turn: wall %.2f (%.1f / %.1f ms), decoder CPU %.2f (%.1f / %.1f ms)",
                 baselineBin, t / b, t * 1000, b * 1000, c / bc, c * 1000, bc * 1000))
}
for (name, original, sent) in sizes {
    print(String(format: "%@: %d bytes received, %d sent: %.1f %%", name, original, sent, Double(sent) * 100 / Double(original)))
}
