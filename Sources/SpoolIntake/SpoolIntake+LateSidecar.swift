import DaemonSupport
import ExpenseCore
import OutboxStore
import Posix

/// A sidecar that comes after its receipt was taken alone: an edit of the
/// receipt's expense, not an expense of its own (docs/spool.md, "A late
/// sidecar"). The same intake as any file, with the edit in place of the
/// create: the edit and the sidecar's `spool_intake` row commit in one
/// transaction, and the sidecar is removed after, so a crash before the
/// commit (`spool-before-late-edit`) leaves the sidecar in the spool, taken
/// again at start while the window lasts, and one after it
/// (`spool-after-late-edit`) leaves the row by which start-up removes it.
extension SpoolIntake {
    enum LateTake {
        /// No receipt of its name was taken alone within the window.
        case notLate
        /// Taken (as an edit, or rejected); `keep`: files whose removal failed.
        case done(keep: [SpoolFile])
        case retryLater
    }

    /// Takes `file`, a sidecar alone, claimed, as a late one if its receipt
    /// was taken alone within the window. `digest`: of the bytes parsed.
    func takeLate(_ file: SpoolFile, fields: ExpenseFields, digest: [UInt8], account: String) async -> LateTake {
        // The row's private name is the intake's own; its client id, the expense's.
        let record = SpoolIntakeRecord(file, clientID: ClientID.make(milliseconds: Clock.wallMilliseconds), index: 0, digest: digest)
        let now = Clock.wallMilliseconds
        FaultPoints.hit("spool-before-late-edit")
        let outcome: LateSidecarOutcome
        do {
            outcome = try await store.enqueueLateSidecar(fields: fields, sidecarName: file.name, account: account,
                                                          since: now - sidecarWindowMilliseconds, files: [record], now: now)
        } catch {
            logger.error("Failed to queue late sidecar '\(file.name.displayName)': \(error), skipping for now")
            return .retryLater
        }
        switch outcome {
        case .noReceipt:
            return .notLate
        case .refused(let transactionID, let reason):
            let moved = (try? await blocking.run { [self] in rejectNow(file.name, reason: reason, transactionID: transactionID) }) ?? false
            return moved ? .done(keep: []) : .retryLater
        case .edited(let transactionID, let receiptName, let filled, let kept):
            FaultPoints.hit("spool-after-late-edit")
            let source = SourceRecord.spool(name: receiptName, sidecar: file.name, droppedMilliseconds: 0).shown.compact
            logger.info("Queued an edit of \(filled.joined(separator: ", ")) from late sidecar '\(file.name.displayName)' of spool file '\(receiptName.displayName)'"
                        + (kept.isEmpty ? "" : "; \(kept.joined(separator: ", ")) kept as the expense had them"),
                        transactionID: transactionID, account: account, source: source)
            onChange()
            onQueued()
            let failed = await remove([record], transactionID: transactionID)
            return .done(keep: failed.isEmpty ? [] : [file])
        }
    }
}
