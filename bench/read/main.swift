// bench-read: the receipt reader on the corpus of Tests/Fixtures/receipts,
// as the daemon will run it (expensed-decode --read in its sandbox, through
// ReceiptReader, then ReceiptParser): the share of fields it reads right
// against expected.json, and its time per receipt beside the plain copy
// of the same receipt (ReceiptDecoder, the decoder's other mode: its
// baseline), sampled in turn in the same run.
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

var right = 0, fields = 0
var readMedians: [Double] = [], copyMedians: [Double] = []
for receipt in corpus {
    var copies: [Double] = [], reads: [Double] = []
    var wrong: [String] = []
    for _ in 0..<rounds {
        var start = BenchRun.now()
        do { _ = try copier.copy(of: try FileDescriptor.open(receipt.path, .readOnly)) } catch { fail("\(receipt.file): copy: \(error)") }
        copies.append(BenchRun.now() - start)
        start = BenchRun.now()
        let text: ReadText
        do { text = try reader.read(try FileDescriptor.open(receipt.path, .readOnly)) } catch { fail("\(receipt.file): read: \(error)") }
        wrong = receipt.wrongFields(ReceiptParser.suggest(text, settings: receipt.settings))
        reads.append(BenchRun.now() - start)
    }
    right += receipt.fields.count - wrong.count
    fields += receipt.fields.count
    let (copy, read) = (BenchRun.percentile(copies, 0.5), BenchRun.percentile(reads, 0.5))
    copyMedians.append(copy)
    readMedians.append(read)
    print(String(format: "%@: %d/%d fields right, read %.3f s, copy %.3f s, ratio %.1f%@", receipt.file, receipt.fields.count - wrong.count,
                 receipt.fields.count, read, copy, read / copy, wrong.isEmpty ? "" : " (\(wrong.joined(separator: "; ")))"))
}
let totalRead = readMedians.reduce(0, +), totalCopy = copyMedians.reduce(0, +)
print(String(format: "fields right: %d of %d (%.0f %%); reading per receipt, median %.3f s; reading ÷ plain copy, all receipts: %.1f (%.2f / %.2f s)",
             right, fields, Double(right) * 100 / Double(max(fields, 1)), BenchRun.percentile(readMedians, 0.5), totalRead / totalCopy, totalRead, totalCopy))

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
