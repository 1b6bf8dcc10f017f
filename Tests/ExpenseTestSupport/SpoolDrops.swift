import Digest
import ExpenseCore
import Foundation
import Posix
import SQLite

/// The ways writers put files into a spool (docs/spool.md), for tests and
/// benchmarks. Names are raw bytes, so hostile names can be dropped too.
public enum SpoolDrop {
    /// Writes in place: creates `name` in the spool, writes in two halves,
    /// closes (what `cp` or a scanner writing straight into the spool does).
    public static func inPlace(_ bytes: [UInt8], as name: FileName, in spool: String) throws {
        let directory = try FileDescriptor.open(spool, [.readOnly, .directory])
        let file = try directory.openAt(name, [.writeOnly, .create, .exclusive, .noFollow], mode: 0o644)
        try file.writeAll(bytes.prefix(bytes.count / 2))
        try file.writeAll(bytes.dropFirst(bytes.count / 2))
    }

    /// Writes into `staging` (on the spool's file system), then renames
    /// into the spool: the way writers are told to drop.
    public static func byRename(_ bytes: [UInt8], as name: FileName, in spool: String, staging: String) throws {
        try byRename([(name, bytes)], in: spool, staging: staging)
    }

    /// Writes every file into `staging`, then renames them into the spool
    /// one right after the other, in order: a sidecar and its receipt
    /// arrive two system calls apart, so that a test's short settle time
    /// holds the pair together however loaded the machine is.
    public static func byRename(_ files: [(name: FileName, bytes: [UInt8])], in spool: String, staging: String) throws {
        try FileSystem.makeDirectories(staging, mode: 0o755)
        let from = try FileDescriptor.open(staging, [.readOnly, .directory])
        let to = try FileDescriptor.open(spool, [.readOnly, .directory])
        for (name, bytes) in files {
            let file = try from.openAt(name, [.writeOnly, .create, .truncate, .noFollow], mode: 0o644)
            try file.writeAll(bytes)
        }
        for (name, _) in files {
            try from.renameAt(name, to: name, in: to, replacing: true)
        }
    }

    /// Runs `cp SOURCE SPOOL/NAME`.
    public static func withCp(_ source: String, as name: String, in spool: String) throws {
        let result = try runCommand("/bin/cp", ["--", source, "\(spool)/\(name)"])
        guard result.status == 0 else { throw TestFailure("cp failed: \(result.stderr)") }
    }

    /// A whole receipt file of `kind` that no other call with another `tag` gives.
    public static func receipt(_ kind: ReceiptKind, tag: Int, size: Int = 4096) -> [UInt8] {
        ReceiptBytes.make(kind, size: size, label: " receipt \(tag) ") { UInt8(truncatingIfNeeded: $0 &* 31 &+ tag) }
    }

    /// A sidecar's bytes for `fields` (each set one a JSON string).
    public static func sidecar(_ fields: ExpenseFields) -> [UInt8] {
        JSONValue.object(fields.jsonMembers).serializedBytes()
    }
}

/// An expense in a daemon's outbox, as the spool tests compare them.
public struct QueuedExpense: Sendable, Equatable, CustomStringConvertible {
    public let transactionID: String
    public let fields: ExpenseFields
    /// SHA-256 (hex) of the stored receipt file, when there is a receipt job.
    public let receiptDigest: String?

    public var description: String { "\(transactionID) \(fields.merchant ?? "-") \(receiptDigest?.prefix(8) ?? "-")" }

    /// Every expense queued in `stateDirectory`'s database, with its
    /// receipt's digest read from the receipts directory.
    public static func all(stateDirectory: String) throws -> [QueuedExpense] {
        let db = try Connection(path: "\(stateDirectory)/expensed.db", readOnly: true)
        let creates = try db.query("SELECT transaction_id, payload FROM jobs WHERE kind = 'create' ORDER BY seq") { ($0.string(0), $0.string(1)) }
        let receipts = try db.query("SELECT transaction_id, receipt_file FROM jobs WHERE kind = 'receipt'") { ($0.string(0), $0.string(1)) }
        var files: [String: String] = [:]
        for (id, file) in receipts {
            if files[id] != nil { throw TestFailure("\(id) has two receipt jobs") }
            files[id] = file
        }
        return try creates.map { id, payload in
            let fieldsJSON = try JSONValue.parse(Array(payload.utf8))["fields"]
            let fields = ExpenseFields(jsonMembers: fieldsJSON)
            var digest: String?
            if let file = files[id] {
                guard let bytes = FileManager.default.contents(atPath: "\(stateDirectory)/receipts/\(file)") else {
                    throw TestFailure("receipt file \(file) of \(id) is missing")
                }
                digest = Hex.encode(SHA256.hash([UInt8](bytes)))
            }
            return QueuedExpense(transactionID: id, fields: fields, receiptDigest: digest)
        }
    }

    /// Rows left in `spool_intake`.
    public static func intakeRecords(stateDirectory: String) throws -> Int {
        let db = try Connection(path: "\(stateDirectory)/expensed.db", readOnly: true)
        return Int(try db.scalarInt("SELECT count(*) FROM spool_intake") ?? 0)
    }
}

extension DaemonHarness {
    /// Names in the spool (raw, dot names too), without `rejected`.
    public func spoolEntries() throws -> [FileName] {
        try FileDescriptor.open(spoolDirectory, [.readOnly, .directory]).entries().filter { $0 != FileName("rejected") }.sorted()
    }

    /// Names in `rejected/`, raw, sorted.
    public func rejectedEntries() throws -> [FileName] {
        try FileDescriptor.open("\(spoolDirectory)/rejected", [.readOnly, .directory]).entries().sorted()
    }

    /// The text of `rejected/NAME.reason`.
    public func rejectionReason(_ name: FileName) throws -> String {
        let directory = try FileDescriptor.open("\(spoolDirectory)/rejected", [.readOnly, .directory])
        let file = try directory.openAt(name.appending(".reason"), [.readOnly, .noFollow])
        return String(decoding: try file.readAll(limit: 1 << 16) ?? [], as: UTF8.self)
    }

    /// Every expense queued so far.
    public func queuedExpenses() throws -> [QueuedExpense] {
        try QueuedExpense.all(stateDirectory: stateDirectory)
    }

    /// Waits until the spool holds nothing but `rejected/` (and `keeping`
    /// names), `expenses` are queued and `rejected` files are in `rejected/`.
    public func waitForSpool(expenses: Int, rejected: Int, keeping: Set<FileName> = [], timeout: Double = 30) throws {
        var seen = "nothing yet"
        do {
            try waitUntil(timeout: timeout, "the spool to be taken: \(expenses) expenses, \(rejected) rejected") {
                guard let process, process.isRunning else { throw TestFailure("expensed exited: \(log)") }
                let left = try spoolEntries().filter { !keeping.contains($0) }
                let rejectedFiles = try rejectedEntries().filter { $0.lowercasedExtension != "reason" }
                let queued = try? queuedExpenses().count
                seen = "left in the spool \(left.map(\.displayName)), \(rejectedFiles.count) rejected, \(queued.map(String.init) ?? "?") expenses"
                return left.isEmpty && rejectedFiles.count == rejected && queued == expenses
            }
        } catch {
            // What was there last says which part did not happen.
            throw TestFailure("\(error); last seen: \(seen); the daemon's log:\n\(log.suffix(4000))")
        }
    }
}

/// File times as a writer that keeps them (`cp -p`, `rsync -t`, `tar`) sets them.
public enum FileTimes {
    /// Sets the modification time of `path` to `nanoseconds` since the
    /// epoch, leaving its access time (`UTIME_OMIT`, `(1 << 30) - 2`).
    public static func setModified(_ path: String, to nanoseconds: Int64) throws {
        var times = [timespec(tv_sec: 0, tv_nsec: (1 << 30) - 2),
                     timespec(tv_sec: Int(nanoseconds / 1_000_000_000), tv_nsec: Int(nanoseconds % 1_000_000_000))]
        guard utimensat(AT_FDCWD, path, &times, 0) == 0 else { throw TestFailure("utimensat \(path): \(errno)") }
    }
}
