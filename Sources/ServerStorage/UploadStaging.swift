import Digest
import ExpenseCore
import Posix

/// The folder where receipt uploads are written while they arrive
/// (`tmp/` in the data directory), and the files it holds.
///
/// A file here is only ever a buffer: the engine makes the bytes durable
/// its own way (a rename into `receipts/`, a copy into the database) once
/// they are complete and checked.
public struct UploadStaging: Sendable {
    public let directory: String

    /// Uses (creating if needed) `directory`.
    public init(directory: String) throws(SystemCallError) {
        self.directory = directory
        try FileSystem.makeDirectories(directory, mode: 0o700)
    }

    /// A new, empty, exclusively created file, open for reading and writing.
    public func makeFile() throws(SystemCallError) -> (FileDescriptor, path: String) {
        let path = "\(directory)/\(Hex.encode(SecureRandom.bytes(16))).part"
        let fd = try FileDescriptor.open(path, [.readWrite, .create, .exclusive, .noFollow], mode: 0o600)
        return (fd, path)
    }

    /// A new file that has no name: gone when its descriptor is closed,
    /// whatever happens to the process.
    public func makeAnonymousFile() throws(SystemCallError) -> FileDescriptor {
        let (fd, path) = try makeFile()
        try FileSystem.remove(path)
        return fd
    }

    /// Removes uploads a crash left behind, once older than `graceNanoseconds`.
    /// - Returns: the names removed, as `tmp/NAME`.
    public func sweep(graceNanoseconds: Int64, now: Int64) throws(SystemCallError) -> [String] {
        try Self.removeOldFiles(in: directory, label: "tmp", graceNanoseconds: graceNanoseconds, now: now) { $0.hasSuffix(".part") }
    }

    /// Removes the regular files of `directory` whose names `matches`
    /// accepts, once not modified for `graceNanoseconds` (a younger one may
    /// belong to a request or commit still under way, in this or another
    /// server process).
    /// - Returns: the names removed, as `label/NAME`.
    public static func removeOldFiles(in directory: String, label: String, graceNanoseconds: Int64, now: Int64,
                                      where matches: (String) -> Bool) throws(SystemCallError) -> [String] {
        var removed: [String] = []
        for name in try FileSystem.contents(of: directory) {
            guard let text = name.string, matches(text) else { continue }
            let path = "\(directory)/\(text)"
            if let st = try? FileSystem.status(path, followLinks: false), st.kind == .regular,
               now - st.modifiedNanoseconds > graceNanoseconds {
                try FileSystem.remove(path)
                removed.append("\(label)/\(text)")
            }
        }
        return removed
    }
}

/// A complete upload, its bytes checked against their kind and digest,
/// in a file of ``UploadStaging``.
public struct StagedReceipt: Sendable {
    public let file: FileDescriptor
    public let path: String
    public let kind: ReceiptKind
    /// SHA-256 of the bytes, hex.
    public let sha256: String
    public let size: Int64

    public init(file: FileDescriptor, path: String, kind: ReceiptKind, sha256: String, size: Int64) {
        self.file = file
        self.path = path
        self.kind = kind
        self.sha256 = sha256
        self.size = size
    }

    /// Removes the file (its descriptor stays readable until closed).
    public func discard() {
        try? FileSystem.remove(path)
    }
}
