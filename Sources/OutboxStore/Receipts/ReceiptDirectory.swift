import Digest
import ExpenseCore
import Posix

/// `receipts/` beside the database: the bytes of receipts waiting to be
/// uploaded, one file per receipt job, named `<job uuid>.<ext>`.
public final class ReceiptDirectory: Sendable {
    public let path: String

    public init(path: String) throws(SystemCallError) {
        self.path = path
        try FileSystem.makeDirectory(path, mode: 0o700)
    }

    public func filePath(_ fileName: String) -> String { "\(path)/\(fileName)" }

    /// How much is read and written at a time: small enough that the
    /// buffers of copies running at once, which malloc keeps for reuse,
    /// stay a small part of the daemon's memory.
    package static let chunkSize = 64 * 1024

    /// The size and SHA-256 of everything in `file`, read from offset 0
    /// with `pread` in chunks, whatever the descriptor's position: how a
    /// receipt file is hashed wherever one is (a staged or kept copy, a
    /// spool file, an upload's body). Blocking.
    public static func digest(of file: FileDescriptor) throws(SystemCallError) -> (size: Int64, sha256: [UInt8]) {
        var hasher = SHA256()
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: chunkSize, alignment: 16)
        defer { buffer.deallocate() }
        var offset: Int64 = 0
        while true {
            let n = try file.read(into: buffer, at: offset)
            if n == 0 { return (offset, hasher.finalize()) }
            hasher.update(UnsafeRawBufferPointer(rebasing: buffer[0..<n]))
            offset += Int64(n)
        }
    }

    /// Copies the receipt in `source` into a new file, durably: temporary
    /// name, `fsync`, `rename`, directory `fsync`. Reads from offset 0 with
    /// `pread`, whatever the descriptor's position, in chunks that are
    /// checked (``ReceiptValidator``) and written as they come: a receipt
    /// is stored only when its bytes are a whole file of a kind it takes, of
    /// the kind they show. Blocking.
    /// - Parameter digesting: also compute the SHA-256 of the bytes copied
    ///   (``StagedReceipt/digest``).
    /// - Throws: ``ReceiptError``: `.truncated` when the bytes end before
    ///   their structure does; `.invalid` when `source` is not a regular
    ///   file, is empty, not a receipt or damaged; `.tooLarge` past
    ///   `maxBytes`; `.io` when it cannot be read or stored.
    public func stage(from source: FileDescriptor, jobUUID: String, maxBytes: Int, digesting: Bool = false) throws(ReceiptError) -> StagedReceipt {
        // The client opened it: it may be write-only or a mere O_PATH handle.
        guard source.isOpenForReading else { throw .invalid("is not open for reading") }
        let status: FileStatus
        do { status = try source.status() } catch { throw .io(error) }
        guard status.kind == .regular else { throw .invalid("is not a regular file") }
        guard status.size <= maxBytes else { throw .tooLarge(limit: maxBytes) }
        guard status.size > 0 else { throw .invalid("is empty") }

        let temporary = "\(path)/.\(jobUUID).tmp"
        let output: FileDescriptor
        do {
            output = try FileDescriptor.open(temporary, [.writeOnly, .create, .exclusive, .noFollow], mode: 0o600)
        } catch {
            throw .io(error)
        }
        do throws(ReceiptError) {
            var validator = ReceiptValidator()
            var hasher: SHA256? = digesting ? SHA256() : nil
            let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: Self.chunkSize, alignment: 16)
            defer { buffer.deallocate() }
            var offset: Int64 = 0
            while true {
                let n: Int
                do { n = try source.read(into: buffer, at: offset) } catch { throw .io(error) }
                if n == 0 { break }
                offset += Int64(n)
                if offset > Int64(maxBytes) { throw .tooLarge(limit: maxBytes) }
                let chunk = UnsafeRawBufferPointer(rebasing: buffer[0..<n])
                validator.append(chunk)
                // Damaged already: the rest cannot mend it.
                if validator.hasFailed, case .invalid(let why) = validator.verdict { throw .invalid(why) }
                hasher?.update(chunk)
                do { try output.writeAll(chunk) } catch { throw .io(error) }
            }
            // A file that grew or shrank while it was copied is not the one the client meant.
            guard offset == status.size else { throw ReceiptError.invalid("changed while it was being read") }
            let kind: ReceiptKind
            switch validator.verdict {
            case .complete(let found): kind = found
            case .truncated(let found, let why): throw .truncated(found, why)
            case .invalid(let why): throw .invalid(why)
            }
            if kind == .tiff {
                // A TIFF's IFDs and strips point anywhere: checked now the whole file is here.
                let verdict: ReceiptVerdict
                do { verdict = try TIFFLayout.check(size: offset) { at, count throws(SystemCallError) in try Self.read(source, count, at: at) } } catch { throw .io(error) }
                switch verdict {
                case .complete: break
                case .truncated(let found, let why): throw .truncated(found, why)
                case .invalid(let why): throw .invalid(why)
                }
            }
            let staged = StagedReceipt(jobUUID: jobUUID, kind: kind, size: Int(offset), digest: hasher.take()?.finalize())
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

    /// Writes `bytes` as a new receipt file `fileName`, durably: temporary
    /// name, `fsync`, `rename`, directory `fsync` (a legible copy).
    public func write(_ bytes: [UInt8], as fileName: String) throws(SystemCallError) {
        let temporary = "\(path)/.\(fileName.split(separator: ".").first ?? "").tmp"
        do {
            let output = try FileDescriptor.open(temporary, [.writeOnly, .create, .truncate, .noFollow], mode: 0o600)
            try output.writeAll(bytes)
            try output.sync()
            try FileSystem.rename(temporary, to: filePath(fileName))
            try FileSystem.syncDirectory(path)
        } catch {
            try? FileSystem.remove(temporary)
            throw error
        }
    }

    /// Up to `count` bytes of `file` from `offset` (fewer at its end).
    static func read(_ file: FileDescriptor, _ count: Int, at offset: Int64) throws(SystemCallError) -> [UInt8] {
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: max(count, 1), alignment: 16)
        defer { buffer.deallocate() }
        var filled = 0
        while filled < count {
            let n = try file.read(into: UnsafeMutableRawBufferPointer(rebasing: buffer[filled..<count]), at: offset + Int64(filled))
            if n == 0 { break }
            filled += n
        }
        return Array(buffer[0..<filled])
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
