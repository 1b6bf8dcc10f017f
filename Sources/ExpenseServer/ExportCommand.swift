import ExpenseCore
import Posix
import ServerStorage

extension ServerCommand {
    /// `expense-server export`: every expense (of `--user`, dated from
    /// `--since`), deleted ones left out, oldest date first, written to
    /// standard output as the database hands the rows over.
    static func export(_ request: ExportRequest, from storage: StorageLocation) -> Int32 {
        let store: any ExpenseStorage
        var filter = ExpenseFilter(since: request.since)
        do {
            store = try storage.open(poolSize: 1)
            if let name = request.user {
                guard let user = try store.users().first(where: { $0.name == name }) else {
                    StandardStreams.writeErrorLine("expense-server: no user '\(name)'")
                    return ExitStatus.failure.rawValue
                }
                filter.user = user.id
            }
        } catch {
            StandardStreams.writeErrorLine("expense-server: Failed to open \(storage): \(error)")
            return ExitStatus.failure.rawValue
        }
        do {
            let output = try FileDescriptor.duplicate(1)
            var buffer = OutputBuffer(output)
            try buffer.append(request.format.header)
            try store.forEachExpense(filter) { try buffer.append(request.format.line($0, receiptBase: request.baseURL)) }
            try buffer.flush()
            return ExitStatus.success.rawValue
        } catch {
            StandardStreams.writeErrorLine("expense-server: Failed to export from \(storage): \(error)")
            return ExitStatus.failure.rawValue
        }
    }
}

/// Bytes gathered into 64 KiB writes.
struct OutputBuffer {
    private let file: FileDescriptor
    private var bytes: [UInt8] = []
    private let size = 64 << 10

    init(_ file: FileDescriptor) {
        self.file = file
        bytes.reserveCapacity(size)
    }

    mutating func append(_ more: [UInt8]) throws {
        bytes.append(contentsOf: more)
        if bytes.count >= size { try flush() }
    }

    mutating func flush() throws {
        try file.writeAll(bytes)
        bytes.removeAll(keepingCapacity: true)
    }
}
