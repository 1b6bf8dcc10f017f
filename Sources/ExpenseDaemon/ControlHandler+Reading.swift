import ControlProtocol
import DaemonSupport
import ExpenseCore
import OutboxStore
import Posix
import ReceiptCopy
import ReceiptReading

// `read`: a receipt read again on request (another language installed,
// say), its suggestions applied as the automatic reading's are.
extension ControlHandler {
    /// Reads `ref`'s receipt now (the bytes as received where the daemon
    /// keeps them, else the server's), waits for the result (the reader's
    /// own deadline bounds it: `reading_timeout`), fills the fields the
    /// expense lacks or has only as read, and answers every field found.
    func readAgain(ref: String, in scope: AccountScope) async throws -> ReadResult {
        guard let readings else {
            throw ControlFailure(.invalidState, "receipts are not read (reading = off in expensed.conf, or --reading off)")
        }
        let account = try await store.receiptSource(ref: ref, in: scope).account
        let (source, descriptor) = try await originalOrCopy(ref: ref, in: scope)
        let transactionID = source.transactionID
        let suggestions: Result<ReceiptSuggestions, CopyFailure> = await readings.suggestions(account: account, receivedAt: Clock.wallMilliseconds) {
            descriptor
        }
        switch suggestions {
        case .failure(let failure):
            logger.warning("Receipt not read on request: \(failure.reason)", transactionID: transactionID, account: account)
            throw ControlFailure(.invalidState, "the receipt of \(transactionID) cannot be read: \(failure.reason)")
        case .success(let read):
            guard let outcome = try await store.applyReading(transactionID: transactionID, jobUUID: nil, read, now: Clock.wallMilliseconds) else {
                throw ControlFailure(.notFound, "no expense matches '\(ref)'")
            }
            readings.log(outcome, suggestions: read, asked: true)
            if !outcome.filled.isEmpty {
                publisher.markChanged()
                drainer?.trigger()
            }
            return ReadResult(transactionID: transactionID, fields: outcome.fields.map {
                ReadResult.Field(field: $0.field, value: $0.value, confidence: $0.confidence, note: $0.note, applied: $0.applied)
            })
        }
    }

    /// The bytes as received of `ref`'s receipt when the daemon keeps them,
    /// else the receipt as ``receipt(ref:in:)`` hands it out.
    private func originalOrCopy(ref: String, in scope: AccountScope) async throws -> (ReceiptResult, FileDescriptor) {
        do {
            return try await originalReceipt(ref: ref, in: scope)
        } catch let failure as ControlFailure where failure.code == .noReceipt {
            return try await receipt(ref: ref, in: scope)
        }
    }
}
