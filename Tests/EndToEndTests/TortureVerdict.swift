import ExpenseTestSupport

/// Judges the end of a torture run from the server's own database: every
/// acknowledged add there exactly once, an unacknowledged one at most once,
/// every file that left the spool there exactly once with its receipt's
/// bytes, or in `rejected/` for a reason docs/spool.md gives; and nothing
/// on the server that no writer made.
struct TortureVerdict {
    /// A file in `rejected/`: the name it had in the spool, why, and the
    /// SHA-256 of its bytes (which tell whose file it is).
    struct Rejection {
        let name: String
        let reason: String
        let digest: String
    }

    private(set) var failures: [String] = []
    /// Failures that are the spool's trust in a recycled inode (the file
    /// taken for one queued before a crash).
    private(set) var recycledInode = 0
    private(set) var unacknowledgedOnServer = 0
    private(set) var splitPairs = 0
    private(set) var documentedRejections = 0

    /// - Parameters:
    ///   - settleMilliseconds: the daemon's `--spool-settle`.
    ///   - log: every daemon log of the run, for telling the known defect apart.
    init(ledger: TortureLedger, server: [SyncHarness.ServerRecord], rejected: [Rejection], settleMilliseconds: Double, log: String) {
        var claimed: [String: String] = [:]
        let byTransaction = Dictionary(server.map { ($0.transactionID, $0) }, uniquingKeysWith: { first, _ in first })
        func claim(_ record: SyncHarness.ServerRecord, by who: String) {
            if let other = claimed[record.transactionID] {
                failures.append("\(record.transactionID) is claimed by both \(other) and \(who)")
            }
            claimed[record.transactionID] = who
            if record.deleted { failures.append("\(who): \(record.transactionID) is deleted on the server") }
            if record.receiptDigest != record.recordedDigest {
                failures.append("\(who): the server's receipt file of \(record.transactionID) does not hash to the digest it recorded")
            }
        }

        for add in ledger.adds.sorted(by: { $0.merchant < $1.merchant }) {
            let who = "add \(add.merchant) via \(add.via) (\(add.transactionID), \(add.attempts) attempt(s))"
            guard let record = byTransaction[add.transactionID] else {
                if add.acknowledged { failures.append("\(who): acknowledged, but not on the server") }
                continue
            }
            claim(record, by: who)
            if !add.acknowledged { unacknowledgedOnServer += 1 }
            if record.merchant != add.merchant { failures.append("\(who): the server has merchant \(record.merchant ?? "none")") }
            if record.receiptDigest != add.receiptDigest {
                failures.append("\(who): receipt \(add.receiptDigest.map { "sha256 \($0.prefix(12))" } ?? "none") sent, the server has \(record.receiptDigest.map { "sha256 \($0.prefix(12))" } ?? "none")")
            }
        }

        let byMerchant = Dictionary(grouping: server.filter { $0.merchant != nil }, by: { $0.merchant! })
        let byDigest = Dictionary(grouping: server.filter { $0.receiptDigest != nil }, by: { $0.receiptDigest! })
        // Each rejected file by the drop whose bytes it holds: a file
        // quarantined under another drop's name was taken for that one.
        var files: [String: String] = [:]
        for drop in ledger.drops {
            if let name = drop.receiptName, let digest = drop.receiptDigest { files[digest] = name }
            if let name = drop.sidecarName, let digest = drop.sidecarDigest { files[digest] = name }
        }
        var rejections: [String: [Rejection]] = [:]
        for rejection in rejected {
            let owner = files[rejection.digest] ?? rejection.name
            if owner != rejection.name {
                recycledInode += 1
                failures.append("'\(owner)' was quarantined under the name '\(rejection.name)' (the spool took it for that file, trusting a recycled inode): \(rejection.reason)")
                rejections[owner, default: []].append(Rejection(name: owner, reason: "misnamed", digest: rejection.digest))
            } else {
                rejections[owner, default: []].append(rejection)
            }
        }
        // Which drop each server expense came from, by the sidecar's
        // merchant or the receipt's bytes: a quarantine names the expense
        // its file was taken as, which must be that file's own.
        var unitOf: [String: Int] = [:]
        for drop in ledger.drops {
            for digest in [drop.receiptDigest, drop.receiptFirstHalfDigest].compactMap({ $0 }) {
                for row in byDigest[digest] ?? [] { unitOf[row.transactionID] = drop.unit }
            }
            for row in drop.merchant.flatMap({ byMerchant[$0] }) ?? [] { unitOf[row.transactionID] = drop.unit }
        }
        for drop in ledger.drops {
            let how = drop.inPlace ? "written in place" : "renamed in"
            let who = "drop \(drop.unit) (\(drop.kind.rawValue), \(how))"
            var rows: [String: SyncHarness.ServerRecord] = [:]
            var receiptRow: SyncHarness.ServerRecord?, sidecarRow: SyncHarness.ServerRecord?
            var receiptRejected = false, sidecarRejected = false, retaken = false
            let recycledBefore = recycledInode

            if let name = drop.receiptName, let digest = drop.receiptDigest {
                var found = byDigest[digest] ?? []
                // Taken half-written: documented for a writer slower than the settle time.
                let slow = drop.inPlace && drop.writeMilliseconds >= settleMilliseconds / 2
                if slow, let half = drop.receiptFirstHalfDigest { found += byDigest[half] ?? [] }
                receiptRejected = judge(rejections[name], name: name, drop: drop, slowWrite: slow, unitOf: unitOf, who: who)
                // Its first version an expense, what was written after it in rejected/.
                retaken = slow && receiptRejected && (rejections[name] ?? []).contains { $0.reason.contains("was written to after it was taken") }
                receiptRow = account(name, found, rejected: receiptRejected && !retaken, who: who, log: log)
            }
            if let name = drop.sidecarName, let merchant = drop.merchant {
                sidecarRejected = judge(rejections[name], name: name, drop: drop, slowWrite: false, unitOf: unitOf, who: who)
                sidecarRow = account(name, byMerchant[merchant] ?? [], rejected: sidecarRejected, who: who, log: log)
            }
            let quarantinedForAnother = recycledInode > recycledBefore
                || [drop.receiptName, drop.sidecarName].contains { $0.map { rejections[$0]?.contains { $0.reason == "misnamed" } ?? false } ?? false }
            if receiptRejected != sidecarRejected, !retaken, !quarantinedForAnother, drop.receiptName != nil, drop.sidecarName != nil {
                // One half rejected, so the other must be too ("its receipt … was rejected").
                failures.append("\(who): only one file of the pair was rejected")
            }
            if let receiptRow, let sidecarRow, receiptRow.transactionID != sidecarRow.transactionID {
                splitPairs += 1
                // Taken apart: documented when the second came after the first had waited its settle time.
                if drop.gapMilliseconds < settleMilliseconds / 2 {
                    failures.append("\(who): the pair became two expenses although its files arrived \(Int(drop.gapMilliseconds)) ms apart")
                }
            }
            if let receiptRow, sidecarRow == nil, receiptRow.merchant != nil {
                failures.append("\(who): the receipt's expense \(receiptRow.transactionID) has merchant \(receiptRow.merchant!)")
            }
            if let sidecarRow, receiptRow == nil, let digest = sidecarRow.receiptDigest {
                failures.append("\(who): the sidecar's expense \(sidecarRow.transactionID) has a receipt (sha256 \(digest.prefix(12))) not dropped with it")
            }
            for row in [receiptRow, sidecarRow].compactMap({ $0 }) { rows[row.transactionID] = row }
            for row in rows.values { claim(row, by: who) }
        }

        for record in server where claimed[record.transactionID] == nil {
            failures.append("\(record.transactionID) (merchant \(record.merchant ?? "none"), receipt \(record.receiptDigest?.prefix(12) ?? "none")) on the server comes from no add and no drop")
        }
        for rejection in rejected where files[rejection.digest] == nil {
            failures.append("'\(rejection.name)' in rejected/ holds bytes no drop wrote whole (sha256 \(rejection.digest.prefix(12)))")
        }
    }

    /// Checks the file's rejections: at most one, for a documented reason.
    /// "Was written to after it was taken" names the expense the file was
    /// taken as: another drop's means the spool took a new file for one it
    /// had taken before a crash (a recycled inode); its own is documented
    /// only for a slow writer in place.
    /// - Returns: whether the file was rejected.
    private mutating func judge(_ found: [Rejection]?, name: String, drop: TortureLedger.Drop, slowWrite: Bool,
                                unitOf: [String: Int], who: String) -> Bool {
        guard let found, !found.isEmpty else { return false }
        if found.count > 1 { failures.append("\(who): '\(name)' is in rejected/ \(found.count) times") }
        for rejection in found {
            if rejection.reason.contains("was written to after it was taken") {
                let named = rejection.reason.split(separator: " ").last.map(String.init) ?? ""
                if let other = unitOf[named], other != drop.unit {
                    recycledInode += 1
                    failures.append("\(who): '\(name)' was quarantined as drop \(other)'s file \(named), written to after it was taken (the spool trusted a recycled inode)")
                } else if unitOf[named] == nil {
                    failures.append("\(who): '\(name)' was quarantined as \(named), which is no drop's expense on the server: \(rejection.reason)")
                } else if slowWrite {
                    documentedRejections += 1
                } else {
                    failures.append("\(who): '\(name)', \(drop.inPlace ? "written in place within the settle time" : "renamed in whole"), was quarantined: \(rejection.reason)")
                }
            } else if rejection.reason == "misnamed" {
                // Said above, where it was found.
                continue
            } else if rejection.reason.hasPrefix("its receipt '") || rejection.reason.hasPrefix("its sidecar '") {
                // Its partner's rejection is judged on its own.
                documentedRejections += 1
            } else {
                failures.append("\(who): '\(name)' was rejected for no documented reason: \(rejection.reason)")
            }
        }
        return true
    }

    /// Checks that a dropped file is on the server exactly once, or rejected.
    /// - Returns: its expense.
    private mutating func account(_ name: String, _ rows: [SyncHarness.ServerRecord], rejected: Bool, who: String, log: String) -> SyncHarness.ServerRecord? {
        if rows.count > 1 {
            failures.append("\(who): '\(name)' became \(rows.count) expenses: \(rows.map(\.transactionID).joined(separator: ", "))")
        }
        if rows.isEmpty && !rejected {
            if log.contains("Removed spool file '\(name)', queued before the daemon stopped")
                || log.contains("Spool file '\(name)' was queued already; removing it") {
                recycledInode += 1
                failures.append("\(who): '\(name)' was removed from the spool as a file queued already (the spool trusted a recycled inode), and is on no server")
            } else {
                failures.append("\(who): '\(name)' left the spool but is neither on the server nor in rejected/")
            }
        }
        if !rows.isEmpty && rejected {
            failures.append("\(who): '\(name)' is in rejected/ and on the server as \(rows[0].transactionID)")
        }
        return rows.first
    }
}
