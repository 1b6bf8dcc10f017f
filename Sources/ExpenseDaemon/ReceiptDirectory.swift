import ExpenseCore
import Posix

/// A receipt copied into the state directory, durable, and not yet
/// referenced by any job (the job's commit does that).
public struct StagedReceipt: Sendable, Equatable {
    /// The receipt job's UUID, which also names the file.
    public let jobUUID: String
    public let kind: ReceiptKind
    public let size: Int

    /// `<uuid>.<ext>`, inside the receipts directory.
    public var fileName: String { "\(jobUUID).\(kind.fileExtension)" }
}

/// Why a receipt was not taken.
public enum ReceiptError: Error, Sendable, Equatable, CustomStringConvertible {
    case tooLarge(limit: Int)
    case invalid(String)
    case io(SystemCallError)

    public var description: String {
        switch self {
        case .tooLarge(let limit): "receipt is larger than the limit of \(limit) bytes"
        case .invalid(let why): why
        case .io(let error): "cannot store receipt: \(error)"
        }
    }
}

/// `receipts/` beside the database: the bytes of receipts waiting to be
/// uploaded, one file per receipt job, named `<job uuid>.<ext>`.
public final class ReceiptDirectory: Sendable {
    public let path: String

    public init(path: String) throws(SystemCallError) {
        self.path = path
        try FileSystem.makeDirectory(path, mode: 0o700)
    }

    public func filePath(_ fileName: String) -> String { "\(path)/\(fileName)" }

    /// Copies the receipt in `source` into a new file, durably: temporary
    /// name, `fsync`, `rename`, directory `fsync`. Reads from offset 0 with
    /// `pread`, whatever the descriptor's position. Blocking.
    /// - Throws: ``ReceiptError`` when `source` is not a regular file, is
    ///   empty, larger than `maxBytes`, or not JPEG, PNG or PDF by its bytes.
    public func stage(from source: FileDescriptor, jobUUID: String, maxBytes: Int) throws(ReceiptError) -> StagedReceipt {
        // The client opened it: it may be write-only or a mere O_PATH handle.
        guard source.isOpenForReading else { throw .invalid("receipt descriptor is not open for reading") }
        let status: FileStatus
        do { status = try source.status() } catch { throw .io(error) }
        guard status.kind == .regular else { throw .invalid("receipt is not a regular file") }
        guard status.size <= maxBytes else { throw .tooLarge(limit: maxBytes) }

        var head = [UInt8](repeating: 0, count: ReceiptKind.magicLength)
        let headCount: Int
        do { headCount = try source.read(into: &head, at: 0) } catch { throw .io(error) }
        guard headCount > 0 else { throw .invalid("receipt is empty") }
        guard let kind = ReceiptKind.detect(head.prefix(headCount)) else {
            throw .invalid("receipt is not a JPEG, PNG or PDF file (by its first bytes)")
        }

        let temporary = "\(path)/.\(jobUUID).tmp"
        let output: FileDescriptor
        do {
            output = try FileDescriptor.open(temporary, [.writeOnly, .create, .exclusive, .noFollow], mode: 0o600)
        } catch {
            throw .io(error)
        }
        do throws(ReceiptError) {
            // Copied in the kernel; the digest is computed when it is sent,
            // so the acknowledgement waits only for the bytes to be durable.
            var offset: Int64 = 0
            while true {
                let n: Int
                do { n = try output.copy(from: source, offset: &offset, count: maxBytes + 1 - Int(offset)) } catch { throw .io(error) }
                if offset > Int64(maxBytes) { throw .tooLarge(limit: maxBytes) }
                if n == 0 { break }
            }
            // A file that grew or shrank while it was copied is not the one the client meant.
            guard offset == status.size else { throw ReceiptError.invalid("receipt changed while it was being read") }
            let staged = StagedReceipt(jobUUID: jobUUID, kind: kind, size: Int(offset))
            do {
                try output.sync()
                try FileSystem.rename(temporary, to: filePath(staged.fileName))
                try FileSystem.syncDirectory(path)
            } catch {
                throw .io(error)
            }
            return staged
        } catch {
            try? FileSystem.remove(temporary)
            throw error
        }
    }

    /// Removes a receipt file; a missing one is fine (a crash may have removed it already).
    public func remove(_ fileName: String) throws(SystemCallError) {
        try FileSystem.remove(filePath(fileName))
    }

    /// Deletes files the daemon made that no job references: `<uuid>.<ext>`
    /// files not in `referenced`, and `.<uuid>.tmp` files left by a crash
    /// mid-copy. Anything named otherwise is left alone.
    /// - Returns: the names removed.
    public func sweep(keeping referenced: Set<String>) throws(SystemCallError) -> [String] {
        var removed: [String] = []
        for name in try FileSystem.contents(of: path) {
            guard let text = name.string, Self.isDaemonName(text), !referenced.contains(text) else { continue }
            try FileSystem.remove(filePath(text))
            removed.append(text)
        }
        if !removed.isEmpty { try FileSystem.syncDirectory(path) }
        return removed.sorted()
    }

    /// True for exactly the names the daemon writes: a lowercase canonical
    /// UUID with `.jpg`, `.png` or `.pdf`, or `.` + UUID + `.tmp`.
    static func isDaemonName(_ name: String) -> Bool {
        if name.hasPrefix("."), name.hasSuffix(".tmp") {
            return ClientID.isCanonical(String(name.dropFirst().dropLast(4)))
        }
        let parts = name.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 2, ReceiptKind.allCases.contains(where: { $0.fileExtension == parts[1] }) else { return false }
        return ClientID.isCanonical(String(parts[0]))
    }
}
