// bench-read: the receipt reader on the corpus of Tests/Fixtures/receipts,
// as the daemon will run it (expensed-decode --read in its sandbox, through
// ReceiptReader, then ReceiptParser): the share of fields it reads right
// against expected.json, and its time per receipt beside the plain copy
// of the same receipt (ReceiptDecoder, the decoder's other mode: its
// baseline), sampled in turn in the same run; the same on a degraded set
// made in the run (Degraded.swift), accuracy by field for both sets; each
// reading's time beside `tesseract FILE stdout` on the same image
// (tesseract-ocr, from scripts/setup --test), p50 and p99; and that a blank
// page and a photo of no text get no confident suggestion.
//
// Usage: bench-read [--bin DIR] [--rounds N] [--daemon [--adds N]]
// --daemon: adds and drains of a daemon while it reads 50 receipts ÷ the
// same with reading off (DaemonLoad.swift).
// For each receipt, --rounds times (default 3) in turn: the copy and the
// reading. Prints each receipt's fields right, the medians and their
// ratio; then the share of all fields right, the median reading time per
// receipt, and the ratio of the total reading time to the total copy time.
// Last, the parser alone (it runs in the daemon, on text from an untrusted
// receipt) on the most text a reader's answer may hold, words of random
// letters, digits and separators, with 2,000 merchants to look for.
import ExpenseCore
import ExpenseTestSupport
import Foundation
import Posix
import ReceiptCopy
import ReceiptReading

let options = BenchArguments("bench-read", usage: "usage: bench-read [--bin DIR] [--rounds N] [--daemon [--adds N]]",
                             options: ["--bin", "--rounds", "--adds"], switches: ["--daemon"])
let bin = options.binaryDirectory()
let rounds = options.int("--rounds", default: 3, in: 1...100)
if options.has("--daemon") {
    daemonLoad(rounds: rounds, adds: options.int("--adds", default: 300, in: 1...100_000))
    exit(0)
}

func fail(_ message: String) -> Never {
    FileHandle.standardError.write(Data("bench-read: \(message)\n".utf8))
    exit(1)
}

let corpus: [CorpusReceipt]
do { corpus = try ReceiptCorpus.load() } catch { fail("\(error)") }
let copier = ReceiptDecoder(executable: "\(bin)/expensed-decode", settings: CopySettings())
let reader = ReceiptReader(executable: "\(bin)/expensed-decode", settings: ReadSettings())
print("bench-read: \(corpus.count) receipts, \(rounds) rounds each, decoder \(bin)/expensed-decode, languages \(reader.settings.languages.joined(separator: "+"))")

/// Fields read right, by field, over a set of receipts.
struct Tally {
    var right: [String: Int] = [:], total: [String: Int] = [:]
    mutating func add(_ receipt: CorpusReceipt, wrong: [String]) {
        for field in receipt.fields.keys {
            total[field, default: 0] += 1
            if !wrong.contains(where: { $0.hasPrefix(field + ":") }) { right[field, default: 0] += 1 }
        }
    }
    func share(_ field: String) -> String {
        guard let all = total[field], all > 0 else { return "—" }
        return String(format: "%d/%d (%.0f %%)", right[field] ?? 0, all, Double(right[field] ?? 0) * 100 / Double(all))
    }
    var all: (right: Int, total: Int) { (right.values.reduce(0, +), total.values.reduce(0, +)) }
}

let scratch = NSTemporaryDirectory() + "bench-read-\(UUID().uuidString.prefix(8))"
do { try FileManager.default.createDirectory(atPath: scratch, withIntermediateDirectories: true) } catch { fail("\(error)") }
defer { try? FileManager.default.removeItem(atPath: scratch) }
let degraded: [CorpusReceipt]
let nothing: [String]
do {
    degraded = try DegradedSet.make(from: corpus, in: scratch)
    nothing = try DegradedSet.nothingToRead(in: scratch)
} catch { fail("making the degraded set: \(error)") }

/// `tesseract FILE stdout` on the same image, the baseline of a reading's time.
@MainActor func tesseractSeconds(_ receipt: CorpusReceipt) -> Double {
    let input: String
    do { input = try DegradedSet.tesseractInput(receipt, in: scratch) } catch { fail("\(error)") }
    let start = BenchRun.now()
    do {
        let result = try runCommand("/usr/bin/tesseract", [input, "stdout", "-l", reader.settings.languages.joined(separator: "+")], timeout: 300)
        guard result.status == 0 else { fail("tesseract \(input): exit \(result.status)") }
    } catch { fail("tesseract: \(error); scripts/setup --test installs it (tesseract-ocr)") }
    return BenchRun.now() - start
}

var readMedians: [Double] = [], copyMedians: [Double] = []
var readSamples: [Double] = [], tesseractSamples: [Double] = []
@MainActor func measure(_ receipts: [CorpusReceipt], withCopy: Bool) -> Tally {
    var tally = Tally()
    for receipt in receipts {
        var copies: [Double] = [], reads: [Double] = []
        var wrong: [String] = []
        for _ in 0..<rounds {
            var start = BenchRun.now()
            if withCopy {
                do { _ = try copier.copy(of: try FileDescriptor.open(receipt.path, .readOnly)) } catch { fail("\(receipt.file): copy: \(error)") }
                copies.append(BenchRun.now() - start)
            }
            tesseractSamples.append(tesseractSeconds(receipt))
            start = BenchRun.now()
            let text: ReadText
            do { text = try reader.read(try FileDescriptor.open(receipt.path, .readOnly)) } catch { fail("\(receipt.file): read: \(error)") }
            wrong = receipt.wrongFields(ReceiptParser.suggest(text, settings: receipt.settings))
            reads.append(BenchRun.now() - start)
        }
        readSamples += reads
        tally.add(receipt, wrong: wrong)
        let read = BenchRun.percentile(reads, 0.5)
        if withCopy {
            let copy = BenchRun.percentile(copies, 0.5)
            copyMedians.append(copy)
            readMedians.append(read)
            print(String(format: "%@: %d/%d fields right, read %.3f s, copy %.3f s, ratio %.1f%@", receipt.file, receipt.fields.count - wrong.count,
                         receipt.fields.count, read, copy, read / copy, wrong.isEmpty ? "" : " (\(wrong.joined(separator: "; ")))"))
        } else {
            print(String(format: "%@: %d/%d fields right, read %.3f s%@", receipt.file, receipt.fields.count - wrong.count,
                         receipt.fields.count, read, wrong.isEmpty ? "" : " (\(wrong.joined(separator: "; ")))"))
        }
    }
    return tally
}

print("clean set (the corpus as checked in):")
let clean = measure(corpus, withCopy: true)
print("degraded set (turned 2.5°, blurred, noise; JPEG and HEIC of quality 60):")
let worse = measure(degraded, withCopy: false)

// What has nothing to read: any suggestion of confidence 0.8 or more is a wrong value presented as sure.
var confidentlyWrong: [String] = []
for path in nothing {
    let text: ReadText
    do { text = try reader.read(try FileDescriptor.open(path, .readOnly)) } catch { fail("\(path): read: \(error)") }
    for (field, suggestion) in ReceiptParser.suggest(text).byField where suggestion.confidence >= 0.8 {
        confidentlyWrong.append("\((path as NSString).lastPathComponent): \(field) \(suggestion.value) (\(suggestion.confidence))")
    }
}

print("")
print("| field | clean | target | degraded | target |")
print("| --- | --- | --- | --- | --- |")
for (field, cleanTarget, worseTarget) in [("amount", "≥ 95 %", "≥ 85 %"), ("date", "≥ 95 %", "≥ 85 %"), ("merchant", "≥ 80 %", "—"), ("currency", "—", "—")] {
    print("| \(field) | \(clean.share(field)) | \(cleanTarget) | \(worse.share(field)) | \(worseTarget) |")
}
print("")
let totalRead = readMedians.reduce(0, +), totalCopy = copyMedians.reduce(0, +)
let (right, fields) = clean.all
print(String(format: "fields right, clean: %d of %d (%.0f %%); reading per receipt, median %.3f s; reading ÷ plain copy, all receipts: %.1f (%.2f / %.2f s)",
             right, fields, Double(right) * 100 / Double(max(fields, 1)), BenchRun.percentile(readMedians, 0.5), totalRead / totalCopy, totalRead, totalCopy))
let (readP50, readP99) = (BenchRun.percentile(readSamples, 0.5), BenchRun.percentile(readSamples, 0.99))
let (tessP50, tessP99) = (BenchRun.percentile(tesseractSamples, 0.5), BenchRun.percentile(tesseractSamples, 0.99))
print(String(format: "reading a receipt, all %d readings: p50 %.3f s, p99 %.3f s; `tesseract FILE stdout` on the same images: p50 %.3f s, p99 %.3f s; ratio p50 %.2f, p99 %.2f (target ≤ 1.2)",
             readSamples.count, readP50, readP99, tessP50, tessP99, readP50 / tessP50, readP99 / tessP99))
print("nothing to read (a blank page, a photo of no text): \(confidentlyWrong.isEmpty ? "no suggestion of confidence 0.8 or more (target: none)" : "confident suggestions: \(confidentlyWrong.joined(separator: "; "))")")

// The parser's worst case: the codec's whole text allowance, every word a candidate amount, date or merchant.
var random = SeededRandom(seed: 28)
let alphabet = Array("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.,/:-€$")
var lines: [ReadText.Line] = [], textBytes = 0
while textBytes + 25 * 9 <= ReadTextCodec.maxTextBytes {
    lines.append(ReadText.Line(words: (0..<25).map { _ in ReadText.Word(String((0..<8).map { _ in alphabet[random.next(alphabet.count)] }), confidence: 0.9) }))
    textBytes += 25 * 9
}
let merchants = (0..<2000).map { "Merchant \($0) Supermarket" }
var parses: [Double] = []
for _ in 0..<rounds {
    let start = BenchRun.now()
    _ = ReceiptParser.suggest(ReadText(source: .recognized, lines: lines), settings: ReadingSettings(knownMerchants: merchants))
    parses.append(BenchRun.now() - start)
}
print(String(format: "parser on %d lines (%d KiB) of random words, 2,000 known merchants: %.3f s, median", lines.count, textBytes / 1024,
             BenchRun.percentile(parses, 0.5)))
