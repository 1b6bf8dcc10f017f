import ExpenseCore
import ExpenseTestSupport
import Foundation
import SQLite
import Synchronization
import Testing

/// Acknowledged means durable: kill -9 at random moments loses nothing
/// that was acknowledged, doubles nothing, and leaves no orphan receipt.
@Suite struct DurabilityTests {
    @Test func killNineDuringAdds_losesNothingAcknowledged() throws {
        let daemon = DaemonHarness()
        let receipt = daemon.directory.at("r.jpg")
        SampleReceipt.write(SampleReceipt.jpeg(size: 20_000), to: receipt)
        let acknowledged = Mutex<[String: String]>([:])  // client id -> transaction id
        var generator = SystemRandomNumberGenerator()
        let rounds = 25

        for round in 0..<rounds {
            try daemon.start()
            let stop = Atomic<Bool>(false)
            let finished = Atomic<Int>(0)
            let writers = (0..<3).map { writer in
                Thread {
                    defer { finished.add(1, ordering: .relaxed) }
                    var n = 0
                    while !stop.load(ordering: .relaxed) {
                        n += 1
                        let clientID = ClientID.make()
                        let withReceipt = (n + writer) % 3 == 0
                        let line = #"{"id":1,"op":"add","client_id":""# + clientID + #"","receipt":\#(withReceipt),"expense":{"merchant":"R\#(round)W\#(writer)N\#(n)","amount":"1.00","currency":"EUR","date":"2026-01-01"}}"# + "\n"
                        guard let client = try? RawClient(path: daemon.socketPath, timeout: 5) else { continue }
                        do {
                            if withReceipt { try client.send(line, passingFileAt: receipt) } else { try client.send(line) }
                            let answer = try client.readJSONLine()
                            if answer["ok"] == true, let id = answer["result"]?["transaction_id"]?.stringValue {
                                acknowledged.withLock { $0[clientID] = id }
                            }
                        } catch {
                            // The daemon died mid-request: not acknowledged, nothing promised.
                        }
                    }
                }
            }
            writers.forEach { $0.start() }
            usleep(UInt32.random(in: 20_000...250_000, using: &generator))
            daemon.crash()
            stop.store(true, ordering: .relaxed)
            // The writers notice at once (their connections fail): wait for them.
            try waitUntil("the writers of round \(round) to stop") { finished.load(ordering: .relaxed) == writers.count }
        }

        try daemon.start()
        let list = try daemon.list()
        #expect(daemon.stop() == 0)
        let expected = acknowledged.withLock { $0 }
        #expect(expected.count > rounds, "the test acknowledged \(expected.count) adds")
        let shown = list.compactMap { $0["transaction_id"]?.stringValue }
        #expect(Set(shown).count == shown.count, "no expense twice")
        let missing = expected.filter { !shown.contains($0.value) }
        #expect(missing.isEmpty, "\(missing.count) acknowledged adds lost")

        // Every receipt file belongs to a job, and every receipt job has its file.
        let db = try Connection(path: "\(daemon.stateDirectory)/expensed.db")
        let referenced = try db.query("SELECT receipt_file FROM jobs WHERE receipt_file IS NOT NULL") { $0.string(0) }
        #expect(Set(referenced) == Set(daemon.receiptFiles()))
        let receipts = list.filter { $0["receipt"] == "pending" }.count
        #expect(receipts == referenced.count)
        let stored = try db.scalarInt("SELECT count(*) FROM jobs WHERE kind = 'create'")
        #expect(stored == Int64(shown.count))
    }
}
