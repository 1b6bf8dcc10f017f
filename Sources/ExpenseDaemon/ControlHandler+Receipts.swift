import ControlProtocol
import DaemonSupport
import Digest
import ExpenseCore
import OutboxStore
import Posix
import SyncEngine

// `receipt`: handing an expense's receipt back, checked, as a descriptor;
// and copying one in for `add` and `edit`.
extension ControlHandler {
    /// Copies a receipt a client sent durably into the state directory,
    /// with its SHA-256, which the job records: refused (``OutboxRefusal``)
    /// before a byte is copied when what the change brings with it
    /// (`incoming`, of the receipt's size) cannot fit; the commit checks
    /// again. An add retried with the client id of an expense already here
    /// (`retrying`) is not refused: it is answered as its first try was.
    func stage(_ receipt: FileDescriptor, bringing incoming: (_ size: Int64) -> OutboxLimits.Incoming,
               retrying clientID: String? = nil) async throws -> StagedReceipt {
        if let size = try? receipt.status().size, size > 0 {
            try await store.admit(incoming(size), retrying: clientID)
        }
        let maxBytes = settings.receiptMaxBytes
        return try await receiptCopies.run { [store] in
            try store.receipts.stage(from: receipt, jobUUID: ClientID.make(milliseconds: Clock.wallMilliseconds), maxBytes: maxBytes, digesting: true)
        }
    }

    /// The receipt of `ref`'s expense: a read-only descriptor of a file
    /// holding exactly its bytes, checked against the recorded SHA-256.
    /// The daemon's own copy while the upload waits (or the kept copy),
    /// else the server's, fetched into an unlinked file.
    func receipt(ref: String, in scope: AccountScope) async throws -> (ReceiptResult, FileDescriptor) {
        // Twice at most: an upload that lands between the look-up and the
        // open removes the daemon's copy, and the second look finds it synced.
        for attempt in 0..<2 {
            let source = try await store.receiptSource(ref: ref, in: scope)
            let transactionID = source.transactionID
            switch source.location {
            case .none:
                throw ControlFailure(.noReceipt, "\(transactionID) has no receipt; attach one with 'expensectl edit \(transactionID) --receipt FILE'")
            case .queued(let fileName, let kind):
                do {
                    return try await localCopy(store.receipts.filePath(fileName), kind: kind, source, from: .queued)
                } catch let error as SystemCallError where error.isNotFound && attempt == 0 {
                    continue
                }
            case .synced(let url) where url.hasPrefix("file://"):
                return try await keptCopy(url: url, source)
            case .synced:
                return try await serverCopy(source)
            }
        }
        throw ControlFailure(.invalidState, "the receipt moved while it was being read; try again")
    }

    /// The bytes as received of `ref`'s receipt, when a legible copy of it
    /// was sent (the newest); for a receipt that went as it is, the same
    /// bytes ``receipt(ref:in:)`` hands out, which are those.
    func originalReceipt(ref: String, in scope: AccountScope) async throws -> (ReceiptResult, FileDescriptor) {
        let source = try await store.receiptSource(ref: ref, in: scope)
        guard let kept = try await store.originals(of: source.transactionID).first else { return try await receipt(ref: ref, in: scope) }
        if let removed = kept.removedAt {
            throw ControlFailure(.noReceipt, "the original of the receipt of \(source.transactionID) was removed on \(Timestamp.format(milliseconds: removed)), as receipt_original_retention says; 'expensectl receipt \(source.transactionID)' writes the legible copy the backend has")
        }
        let recorded = ReceiptSource(transactionID: source.transactionID, account: source.account, location: source.location, sha256: kept.sha256)
        do {
            return try await localCopy(store.receipts.filePath(kept.fileName), kind: kept.kind, recorded, from: .original)
        } catch let error as SystemCallError where error.isNotFound {
            throw ControlFailure(.noReceipt, "the original of the receipt of \(source.transactionID) is gone from the state directory")
        }
    }

    /// A kept receipt, only where the daemon keeps them: a `file://` URL
    /// the cache holds names nothing else (a backend could put any there).
    private func keptCopy(url: String, _ source: ReceiptSource) async throws -> (ReceiptResult, FileDescriptor) {
        for kind in ReceiptKind.allCases {
            let path = "\(settings.stateDirectory)/kept-receipts/\(source.transactionID).\(kind.fileExtension)"
            if url == "file://\(path)" {
                do {
                    return try await localCopy(path, kind: kind, source, from: .keptLocally)
                } catch let error as SystemCallError where error.isNotFound {
                    throw ControlFailure(.noReceipt, "the kept receipt of \(source.transactionID) is gone from '\(path)'")
                }
            }
        }
        throw ControlFailure(.invalidState, "the receipt of \(source.transactionID) is a file the daemon does not keep; not read")
    }

    private func localCopy(_ path: String, kind: ReceiptKind, _ source: ReceiptSource, from: ReceiptResult.Source) async throws
        -> (ReceiptResult, FileDescriptor) {
        let (fd, size, digest) = try await receiptCopies.run { try Self.openAndHash(path) }
        try check(digest, source, what: from == .queued ? "the daemon's copy of the receipt" : from == .original ? "the original of the receipt" : "the kept receipt '\(path)'")
        return (ReceiptResult(transactionID: source.transactionID, kind: kind, size: size, sha256: Hex.encode(digest), source: from), fd)
    }

    /// Opens a file of the daemon's read-only and hashes all of it.
    private static func openAndHash(_ path: String) throws -> (FileDescriptor, Int64, [UInt8]) {
        let fd = try FileDescriptor.open(path, [.readOnly, .noFollow])
        let (size, digest) = try ReceiptDirectory.digest(of: fd)
        return (fd, size, digest)
    }

    /// Refuses bytes whose SHA-256 is not the one recorded when the daemon
    /// took the receipt; one recorded by no version before this has
    /// nothing to be checked against.
    private func check(_ digest: [UInt8], _ source: ReceiptSource, what: String) throws {
        guard let recorded = source.sha256, recorded != digest else { return }
        let message = "\(what) of \(source.transactionID) is damaged: its SHA-256 is \(Hex.encode(digest)), recorded \(Hex.encode(recorded)); nothing was written"
        logger.error(message, transactionID: source.transactionID, account: source.account)
        throw ControlFailure(.receiptDamaged, message)
    }

    /// Fetches the receipt with the account's credentials, checks it, and
    /// hands it over in an unlinked file of the state directory.
    private func serverCopy(_ source: ReceiptSource) async throws -> (ReceiptResult, FileDescriptor) {
        guard let drainer else { throw ControlFailure(.invalidState, "no server is configured to fetch the receipt of \(source.transactionID) from") }
        let transactionID = source.transactionID
        switch await drainer.fetchReceipt(transactionID: transactionID, account: source.account) {
        case .unanswered(let reason):
            throw ControlFailure(.serverUnreachable, "the receipt of \(transactionID) is on the server, which cannot be reached: \(reason); try again later")
        case .notFound:
            throw ControlFailure(.noReceipt, "the server has no receipt for \(transactionID)")
        case .credentialsRefused(let code):
            throw ControlFailure(.serverRefused, "the server did not give the receipt of \(transactionID): the server answered \(code) (credentials refused)")
        case .failed(let failure) where failure.kind == .transient:
            throw ControlFailure(.serverUnreachable, "the receipt of \(transactionID) is on the server, which cannot give it now: \(failure.summary); try again later")
        case .failed(let failure):
            throw ControlFailure(.serverRefused, "the server did not give the receipt of \(transactionID): \(failure.summary)")
        case .tooLarge(let limit):
            throw ControlFailure(.serverRefused, "the server did not give the receipt of \(transactionID): the receipt is larger than receipt_max_bytes (\(limit) bytes)")
        case .unsupported(let reason):
            throw ControlFailure(.serverRefused, "the receipt of \(transactionID) cannot be fetched: \(reason)")
        case .bytes(let bytes, let reprDigest):
            let digest = SHA256.hash(bytes)
            try check(digest, source, what: "the server's receipt")
            if let reprDigest, reprDigest != digest {
                throw ControlFailure(.receiptDamaged, "the receipt of \(transactionID) arrived damaged: its SHA-256 is \(Hex.encode(digest)), the server's Repr-Digest \(Hex.encode(reprDigest)); nothing was written")
            }
            guard let kind = ReceiptKind.detect(bytes) else {
                throw ControlFailure(.receiptDamaged, "the server's receipt of \(transactionID) is not a JPEG, PNG or PDF file; nothing was written")
            }
            let directory = store.receipts.path
            let fd = try await receiptCopies.run { try Self.unlinkedCopy(bytes, in: directory) }
            return (ReceiptResult(transactionID: transactionID, kind: kind, size: Int64(bytes.count), sha256: Hex.encode(digest), source: .server), fd)
        }
    }

    /// `bytes` in a file nobody else can open: written under a name the
    /// start-up sweep removes after a crash (`.<uuid>.tmp`), opened again
    /// read-only, and unlinked.
    private static func unlinkedCopy(_ bytes: [UInt8], in directory: String) throws -> FileDescriptor {
        let path = "\(directory)/.\(ClientID.make(milliseconds: Clock.wallMilliseconds)).tmp"
        defer { try? FileSystem.remove(path) }
        let writer = try FileDescriptor.open(path, [.writeOnly, .create, .exclusive, .noFollow], mode: 0o600)
        try writer.writeAll(bytes)
        return try FileDescriptor.open(path, [.readOnly, .noFollow])
    }
}
