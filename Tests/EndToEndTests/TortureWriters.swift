import Digest
import Dispatch
import ExpenseCore
import ExpenseTestSupport
import Foundation
import Posix
import Synchronization

/// The torture's writers, each on a thread of its own until ``stop()``:
/// clients adding expenses through the control socket and through
/// `expensectl`, with and without receipts, and one dropping files into
/// the spool. They go on whether the daemon is up, starting or dead; what
/// each was told goes into the ledger.
final class TortureWriters: Sendable {
    let daemon: DaemonHarness
    let ledger: TortureLedger
    let receipts: WholeReceipts
    private let stopping = Atomic<Bool>(false)
    private let running = DispatchGroup()

    init(daemon: DaemonHarness, ledger: TortureLedger, receipts: WholeReceipts) {
        self.daemon = daemon
        self.ledger = ledger
        self.receipts = receipts
    }

    /// Starts `socketClients` raw socket clients, `ctlClients` expensectl
    /// clients and one spool dropper, each with a generator derived from `random`.
    func start(socketClients: Int, ctlClients: Int, random: SeededRandom) throws {
        for index in 0..<(socketClients + ctlClients) {
            let via = index < socketClients ? "socket" : "expensectl"
            let folder = daemon.directory.at("writer-\(index)")
            try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
            spawn(random.derived(index)) { [self] random in addLoop(index, via: via, folder: folder, random: &random) }
        }
        spawn(random.derived(1000)) { [self] random in dropLoop(random: &random) }
    }

    /// Asks every writer to finish what it is doing and waits for them.
    func stop() throws {
        stopping.store(true, ordering: .relaxed)
        guard running.wait(timeout: .now() + 120) == .success else { throw TestFailure("the torture's writers did not stop within 120 s") }
    }

    private var isStopping: Bool { stopping.load(ordering: .relaxed) }

    private func spawn(_ random: SeededRandom, _ body: @escaping @Sendable (inout SeededRandom) -> Void) {
        running.enter()
        Thread { [running] in
            var random = random
            body(&random)
            running.leave()
        }.start()
    }

    /// The writers' pace: a short random pause between operations, so that
    /// adds, drops and kills interleave differently each time.
    private static func pause(_ random: inout SeededRandom, upTo milliseconds: Int) {
        usleep(UInt32(1_000 * (1 + random.next(milliseconds))))
    }

    // MARK: Adds

    private enum Answer { case acknowledged(String), notAcknowledged, refused(String) }

    private func addLoop(_ writer: Int, via: String, folder: String, random: inout SeededRandom) {
        var unanswered: (TortureLedger.Add, String?)?
        var count = 0
        while !isStopping {
            let add: TortureLedger.Add, receiptPath: String?
            if let retry = unanswered, random.chance(0.5) {
                // A client that got no answer tries again with the same client id.
                (add, receiptPath) = retry
            } else {
                count += 1
                var path: String?
                var digest: String?
                if random.chance(0.4) {
                    let kind: ReceiptKind = random.chance(0.5) ? .jpeg : (random.chance(0.6) ? .pdf : .png)
                    guard let bytes = try? receipts.make(kind, tag: writer * 1_000_000 + count, size: Self.receiptSize(&random)) else {
                        ledger.problem("could not make a \(kind) receipt")
                        return
                    }
                    path = "\(folder)/add-\(count).\(kind.fileExtension)"
                    SampleReceipt.write(bytes, to: path!)
                    digest = Hex.encode(SHA256.hash(bytes))
                }
                let clientID = ClientID.make()
                add = TortureLedger.Add(clientID: clientID, transactionID: TransactionID.derive(from: clientID),
                                        merchant: "add-\(writer)-\(count)", receiptDigest: digest, via: via)
                receiptPath = path
            }
            unanswered = nil
            ledger.attempt(add)
            let answer = via == "socket" ? sendOverSocket(add, receipt: receiptPath) : sendWithCtl(add, receipt: receiptPath)
            switch answer {
            case .acknowledged(let transactionID):
                if transactionID != add.transactionID {
                    ledger.problem("add \(add.merchant) (\(add.clientID)) was acknowledged as \(transactionID), not \(add.transactionID)")
                }
                ledger.acknowledge(add.clientID)
            case .notAcknowledged:
                unanswered = (add, receiptPath)
            case .refused(let why):
                ledger.problem("valid add \(add.merchant) via \(via) was refused: \(why)")
            }
            Self.pause(&random, upTo: 60)
        }
    }

    /// Mostly small receipts, some of a few hundred KiB (a longer copy to be killed in).
    private static func receiptSize(_ random: inout SeededRandom) -> Int {
        random.chance(0.8) ? 2_000 + random.next(40_000) : 100_000 + random.next(500_000)
    }

    private static func addLine(_ add: TortureLedger.Add, receipt: Bool) -> String {
        let fields: JSONValue = ["merchant": .string(add.merchant), "amount": "12.34", "currency": "EUR", "date": "2026-11-29"]
        let request: JSONValue = ["id": 1, "op": "add", "client_id": .string(add.clientID), "receipt": .bool(receipt), "expense": fields]
        return request.serialized() + "\n"
    }

    private func sendOverSocket(_ add: TortureLedger.Add, receipt: String?) -> Answer {
        guard let client = try? RawClient(path: daemon.socketPath, timeout: 30) else { return .notAcknowledged }
        do {
            let line = Self.addLine(add, receipt: receipt != nil)
            if let receipt { try client.send(line, passingFileAt: receipt) } else { try client.send(line) }
            let answer = try client.readJSONLine()
            if answer["ok"] == true { return .acknowledged(answer["result"]?["transaction_id"]?.stringValue ?? "") }
            let code = answer["error"]?["code"]?.stringValue ?? ""
            // The daemon is stopping, busy, or has no room: no acknowledgement, nothing promised.
            if ["shutting_down", "too_many_connections", "idle_timeout", "storage_failed", "outbox_full"].contains(code) { return .notAcknowledged }
            return .refused(answer.serialized())
        } catch {
            // The daemon died with the request: no answer, nothing promised.
            return .notAcknowledged
        }
    }

    private func sendWithCtl(_ add: TortureLedger.Add, receipt: String?) -> Answer {
        var arguments = ["--socket", daemon.socketPath, "add", "--client-id", add.clientID, "--merchant", add.merchant,
                         "--amount", "12.34", "--currency", "EUR", "--date", "2026-11-29"]
        if let receipt { arguments += ["--receipt", receipt] }
        guard let result = try? runCommand(BuiltProducts.path("expensectl"), arguments, timeout: 60) else { return .notAcknowledged }
        switch result.status {
        case 0: return .acknowledged(result.stdout.trimmingCharacters(in: .whitespacesAndNewlines))
        case 64, 65: return .refused("exit \(result.status): \(result.stderr)")
        default: return .notAcknowledged
        }
    }

    // MARK: Spool drops

    private func dropLoop(random: inout SeededRandom) {
        let staging = daemon.directory.at("staging")
        var unit = 0
        while !isStopping {
            unit += 1
            let kind = TortureLedger.DropKind.allCases[random.next(4)]
            let inPlace = random.chance(0.3)
            do {
                ledger.record(try drop(unit, kind: kind, inPlace: inPlace, staging: staging, random: &random))
            } catch {
                ledger.problem("drop \(unit) (\(kind), \(inPlace ? "in place" : "renamed in")) failed: \(error)")
            }
            Self.pause(&random, upTo: 200)
        }
    }

    private func drop(_ unit: Int, kind: TortureLedger.DropKind, inPlace: Bool, staging: String,
                      random: inout SeededRandom) throws -> TortureLedger.Drop {
        let stem = "drop-\(unit)"
        var receipt: (name: String, bytes: [UInt8])?
        var sidecar: (name: String, bytes: [UInt8])?
        var merchant: String?
        if kind != .sidecar {
            let receiptKind: ReceiptKind = random.chance(0.5) ? .jpeg : (random.chance(0.6) ? .pdf : .png)
            receipt = ("\(stem).\(receiptKind.fileExtension)", try receipts.make(receiptKind, tag: -unit, size: Self.receiptSize(&random)))
        }
        if kind != .receipt {
            merchant = stem
            // Complete fields, so that a sidecar taken without its receipt is an expense too.
            sidecar = ("\(stem).json", SpoolDrop.sidecar(ExpenseFields(merchant: stem, amount: "7.50", currency: "EUR", date: "2026-11-30")))
        }
        let files = kind == .pairReceiptFirst ? [receipt, sidecar] : [sidecar, receipt]
        var record = TortureLedger.Drop(unit: unit, kind: kind, inPlace: inPlace, receiptName: receipt?.name, sidecarName: sidecar?.name,
                                        merchant: merchant, receiptDigest: receipt.map { Hex.encode(SHA256.hash($0.bytes)) },
                                        sidecarDigest: sidecar.map { Hex.encode(SHA256.hash($0.bytes)) },
                                        receiptFirstHalfDigest: receipt.map { Hex.encode(SHA256.hash(Array($0.bytes.prefix($0.bytes.count / 2)))) })
        var firstDone: Date?
        for case let file? in files {
            let began = Date()
            if inPlace {
                try SpoolDrop.inPlace(file.bytes, as: FileName(file.name)!, in: daemon.spoolDirectory)
                record.writeMilliseconds = max(record.writeMilliseconds, Date().timeIntervalSince(began) * 1000)
            } else {
                try SpoolDrop.byRename(file.bytes, as: FileName(file.name)!, in: daemon.spoolDirectory, staging: staging)
            }
            if let firstDone { record.gapMilliseconds = Date().timeIntervalSince(firstDone) * 1000 } else { firstDone = Date() }
        }
        return record
    }
}
