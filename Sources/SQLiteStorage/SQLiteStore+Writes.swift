import ExpenseCore
import Posix
import ServerStorage

extension SQLiteStore {
    public func create(_ operation: IdempotentOperation, _ request: CreateRequest) throws -> WriteOutcome {
        try write { try ExpenseRules.create($0, operation, request) }
    }

    public func edit(_ operation: IdempotentOperation, transactionID: String, _ request: PatchRequest) throws -> WriteOutcome {
        try write { try ExpenseRules.edit($0, operation, transactionID: transactionID, request) }
    }

    public func delete(_ operation: IdempotentOperation, transactionID: String) throws -> WriteOutcome {
        try write { try ExpenseRules.delete($0, operation, transactionID: transactionID) }
    }

    /// The upload is made durable under `receipts/` first, then the row is
    /// pointed at it. Afterwards (never before the commit) the file that
    /// nothing points at goes: the new one after a replay or a failure,
    /// the old one after a replacement.
    public func attachReceipt(_ operation: IdempotentOperation, transactionID: String, _ upload: StagedReceipt) throws -> WriteOutcome {
        let name: String
        do {
            name = try receipts.keep(upload, transactionID: transactionID)
        } catch {
            upload.discard()
            throw Self.storageError(error)
        }
        let receipt = StoredReceipt(locator: name, contentType: upload.kind.contentType, sha256: upload.sha256, size: upload.size)
        let result: (outcome: WriteOutcome, replaced: String?, attached: Bool)
        do {
            result = try write { writer in
                var replaced: String?
                var attached = false
                let outcome = try ExpenseRules.attachReceipt(writer, operation, transactionID: transactionID,
                                                             contentType: receipt.contentType, sha256: receipt.sha256) { stored, now in
                    try writer.pointAtReceipt(stored, receipt, now: now)
                    replaced = stored.receipt?.locator
                    attached = true
                }
                return (outcome, replaced, attached)
            }
        } catch {
            // Not committed: nothing points at the new file.
            try? receipts.remove(name)
            throw error
        }
        // A file whose removal fails stays unreferenced; the hourly sweep takes it.
        if !result.attached { try? receipts.remove(name) }
        if let replaced = result.replaced { try? receipts.remove(replaced) }
        return result.outcome
    }
}
