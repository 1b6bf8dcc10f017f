#if canImport(Glibc)
import Glibc
#endif
import ControlProtocol
import ExpenseCore
import Posix

// `expensectl receipt ID [-o FILE] [--open]`: the receipt's bytes, which
// the daemon hands over as a descriptor (already checked against the
// SHA-256 it recorded); this side only copies them where they are asked for.

func runReceipt(_ invocation: Invocation, _ context: Context) throws -> ExitStatus {
    let ref = invocation.positional[0].lowercased()
    let output = invocation.value("-o, --output")
    let open = invocation.has("--open")
    if output == nil && !open {
        guard !Terminal.isTerminal(1) else {
            throw ClientError(status: .usage, message: "will not write a receipt's bytes to a terminal; use -o FILE, a pipe (expensectl receipt \(ref) | …), or --open")
        }
        if context.json { throw ClientError(status: .usage, message: "--json prints what was written: it needs -o FILE or --open, not standard output") }
    }
    if let output, output.isEmpty { throw ClientError(status: .usage, message: "-o needs a file name") }
    // Where the bytes go is made first: a path that cannot be written
    // fails before the daemon is asked (and fetches anything).
    var target: OutputFile?
    if let output { target = try OutputFile(path: output) }
    defer { target?.discard() }

    let (result, source) = try context.connect().callReceivingDescriptor(.receipt(ref: ref, original: invocation.has("--original")), expecting: ReceiptResult.self)
    var written: String?
    if var file = target {
        try copy(source, to: file.descriptor, size: result.size, what: "'\(file.shown)'")
        try file.commit()
        target = nil
        written = file.path
    } else if open {
        let directory: String
        do {
            directory = try FileSystem.makeTemporaryDirectory(in: Environment["TMPDIR"].flatMap { $0.isEmpty ? nil : $0 } ?? "/tmp", prefix: "expensectl-receipt-")
        } catch {
            throw ClientError(status: .cannotCreate, message: "cannot make a private folder for the receipt: \(error.reason)")
        }
        var file = try OutputFile(path: "\(directory)/\(result.transactionID).\(result.kind.fileExtension)")
        defer { file.discard() }
        try copy(source, to: file.descriptor, size: result.size, what: "'\(file.shown)'")
        try file.commit()
        written = file.path
    } else {
        let standardOutput: FileDescriptor
        do {
            standardOutput = try FileDescriptor.duplicate(1)
        } catch {
            throw ClientError(status: .ioError, message: "cannot write the receipt to standard output: \(error.reason)")
        }
        // A viewer reading the pipe is woken a few times, not 160 times for 10 MiB.
        standardOutput.enlargePipeBuffer(to: Int(min(result.size, 1 << 20)))
        try copy(source, to: standardOutput, size: result.size, what: "standard output")
    }
    if open, let written { try openWithViewer(written) }
    if let written {
        if context.json { context.printJSON(result) } else if output == nil { Output.out(Output.text(written)) }
    }
    return .success
}

/// Copies exactly `size` bytes of `source` (from its start) to `destination`, in the kernel.
private func copy(_ source: FileDescriptor, to destination: FileDescriptor, size: Int64, what: String) throws {
    var offset: Int64 = 0
    while offset < size {
        let n: Int
        do {
            n = try destination.copy(from: source, offset: &offset, count: Int(min(size - offset, 1 << 30)))
        } catch {
            throw ClientError(status: .ioError, message: "cannot write the receipt to \(what): \(error.reason)")
        }
        if n == 0 { throw ClientError(status: .ioError, message: "the receipt ended after \(offset) of its \(size) bytes; nothing usable was written") }
    }
}

/// Hands `path` to `xdg-open` (found on `PATH`) and waits for it, as a
/// desktop's "open" does: it returns once a viewer has the file.
private func openWithViewer(_ path: String) throws {
    let directories = (Environment["PATH"] ?? "/usr/local/bin:/usr/bin:/bin").split(separator: ":").map(String.init)
    guard let program = directories.map({ "\($0)/xdg-open" }).first(where: { (path: String) in access(path, X_OK) == 0 }) else {
        throw ClientError(status: .unavailable, message: "xdg-open is not on PATH; the receipt is in '\(path)'")
    }
    let viewer: Subprocess
    do {
        viewer = try Subprocess(program, arguments: [path])
    } catch {
        throw ClientError(status: .unavailable, message: "cannot run '\(program)': \(error.reason); the receipt is in '\(path)'")
    }
    if let ending = viewer.wait(), ending != .exited(0) {
        throw ClientError(status: .unavailable, message: "xdg-open failed (\(ending)); the receipt is in '\(path)'")
    }
}

/// A file written under a temporary name beside its final one and renamed
/// over it only once whole: a failure leaves what was there untouched.
private struct OutputFile {
    let path: String
    let temporary: String
    let descriptor: FileDescriptor
    private var committed = false

    var shown: String { path.escapingControlCharacters() }

    init(path: String) throws {
        self.path = path
        let slash = path.lastIndex(of: "/")
        let directory = slash.map { String(path[...$0]) } ?? ""
        let name = slash.map { String(path[path.index(after: $0)...]) } ?? path
        guard !name.isEmpty, name != ".", name != ".." else {
            throw ClientError(status: .usage, message: "-o must name a file, not '\(path.escapingControlCharacters())'")
        }
        temporary = "\(directory).\(name).\(ClientID.make(milliseconds: Clock.wallMilliseconds)).tmp"
        do {
            if let status = try? FileSystem.status(path), status.kind == .directory {
                throw SystemCallError(call: "open", errno: EISDIR, subject: path)
            }
            descriptor = try FileDescriptor.open(temporary, [.writeOnly, .create, .exclusive, .noFollow], mode: 0o600)
        } catch let error as SystemCallError {
            throw ClientError(status: error.isPermissionDenied ? .noPermission : .cannotCreate,
                              message: "cannot write '\(path.escapingControlCharacters())': \(error.reason)")
        }
    }

    /// Makes the file durable under its final name.
    mutating func commit() throws {
        do {
            try descriptor.sync()
            try FileSystem.rename(temporary, to: path)
        } catch {
            throw ClientError(status: .ioError, message: "cannot write '\(shown)': \(error.reason)")
        }
        committed = true
    }

    /// Removes the temporary file unless it became the final one.
    func discard() {
        if !committed { try? FileSystem.remove(temporary) }
    }
}
