import ExpenseCore
import ExpenseTestSupport
import Foundation
import Posix
import SQLite

// bench-read --daemon: whether reading starves the rest of the daemon.
// A daemon and an expense-server (SyncHarness); 50 photos of a receipt
// (the corpus's cafe photo, each with a comment segment of its own, so no
// two are the same receipt) dropped in the spool; once they are queued, N
// adds without a receipt, one after another on the control socket, each
// timed, and the time until every one of them is on the server. The same
// with `reading = off`, in turn, round by round; the ratio of the two.

/// One measurement: add latencies and the time from the first add until
/// the server has them all; the readings still to do when the adds ended.
struct LoadFigures {
    var addP50: Double
    var addsAndDrain: Double
    var readingsLeft: Int
}

func distinctPhotos(_ count: Int) throws -> [[UInt8]] {
    let path = "\(ReceiptCorpus.directory)/cafe-fr-photo.jpg"
    guard let data = FileManager.default.contents(atPath: path) else { throw TestFailure("cannot read \(path)") }
    let photo = [UInt8](data)
    return (0..<count).map { index in
        let tag = Array("bench-read photo \(index)".utf8)
        let length = tag.count + 2
        return Array(photo.prefix(2)) + [0xFF, 0xFE, UInt8(length >> 8), UInt8(length & 0xFF)] + tag + Array(photo.dropFirst(2))
    }
}

func readingsToDo(_ stateDirectory: String) -> Int {
    guard let db = try? Connection(path: "\(stateDirectory)/expensed.db", readOnly: true) else { return -1 }
    return Int((try? db.scalarInt("SELECT count(*) FROM receipt_readings")) ?? -1)
}

func measureLoad(reading: Bool, photos: [[UInt8]], adds: Int) throws -> LoadFigures {
    let sync = try SyncHarness(daemonArguments: ["--reading", reading ? "on" : "off"], spool: true)
    try sync.daemon.start()
    defer { sync.daemon.stop() }
    for (index, photo) in photos.enumerated() {
        try SpoolDrop.byRename(photo, as: FileName("photo-\(index).jpg")!, in: sync.daemon.spoolDirectory, staging: sync.daemon.directory.path)
    }
    try waitUntil(timeout: 120, "the photos to be taken") { try sync.daemon.list().count >= photos.count }
    var latencies: [Double] = []
    let start = BenchRun.now()
    for index in 0..<adds {
        let began = BenchRun.now()
        let answer = try sync.daemon.request(["op": "add", "expense": ["merchant": .string("bench-add \(index)"), "amount": "1.00",
                                                                        "currency": "EUR", "date": "2026-12-01"]])
        guard answer["result"] != nil else { throw TestFailure("add: \(answer.serialized())") }
        latencies.append(BenchRun.now() - began)
    }
    try waitUntil(timeout: 600, "the adds to reach the server") {
        try sync.serverRecords().filter { $0.merchant?.hasPrefix("bench-add ") == true }.count >= adds
    }
    let elapsed = BenchRun.now() - start
    return LoadFigures(addP50: BenchRun.percentile(latencies, 0.5), addsAndDrain: elapsed, readingsLeft: readingsToDo(sync.daemon.stateDirectory))
}

func daemonLoad(rounds: Int, adds: Int) {
    print("bench-read --daemon: 50 photos read while \(adds) adds are made and sent, reading on ÷ off, \(rounds) rounds")
    do {
        let photos = try distinctPhotos(50)
        var ratios: [Double] = [], addRatios: [Double] = []
        for round in 0..<rounds {
            var figures: [Bool: LoadFigures] = [:]
            // Which goes first alternates, so neither always has the colder cache.
            for reading in round % 2 == 0 ? [false, true] : [true, false] {
                figures[reading] = try measureLoad(reading: reading, photos: photos, adds: adds)
            }
            let on = figures[true]!, off = figures[false]!
            ratios.append(on.addsAndDrain / off.addsAndDrain)
            addRatios.append(on.addP50 / off.addP50)
            print(String(format: "round %d: adds and drain %.2f s reading / %.2f s not (%.2f); add p50 %.3f / %.3f ms (%.2f); readings still to do at the end: %d",
                         round + 1, on.addsAndDrain, off.addsAndDrain, on.addsAndDrain / off.addsAndDrain, on.addP50 * 1000, off.addP50 * 1000,
                         on.addP50 / off.addP50, on.readingsLeft))
        }
        print(String(format: "adds and drain, reading ÷ not: median %.2f (target <= 1.2); add p50: median %.2f",
                     BenchRun.percentile(ratios, 0.5), BenchRun.percentile(addRatios, 0.5)))
    } catch {
        FileHandle.standardError.write(Data("bench-read: \(error)\n".utf8))
        exit(1)
    }
}
