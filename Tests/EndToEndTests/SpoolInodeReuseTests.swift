import Digest
import ExpenseCore
import ExpenseTestSupport
import Foundation
import Posix
import SQLite
import Testing

/// Killed after removing a taken file but before forgetting its row, the
/// daemon restarts with a row whose inode the file system may have handed
/// to a new file meanwhile (ext4 does so at once). The new file, even with
/// the old one's size, mtime and name, is a new expense: never removed,
/// never rejected; the old one stays one expense.
/// Serialized: each test waits for the file system to hand a freed inode to a new file; tests beside each other would take each other's inodes.
@Suite(.serialized) struct SpoolInodeReuseTests {
    /// On a disk, whatever `$TMPDIR` is: scripts/test puts the suites'
    /// folders on a tmpfs, which numbers inodes afresh and never hands one
    /// out again, so only the fallback below would ever run there.
    /// `$EXPENSED_TEST_DISK_TMPDIR`, else /var/tmp.
    static func folderOnDisk() -> TemporaryDirectory {
        TemporaryDirectory(prefix: "expensed-inode", in: ProcessInfo.processInfo.environment["EXPENSED_TEST_DISK_TMPDIR"] ?? "/var/tmp")
    }

    static let fields = ExpenseFields(merchant: "Crash Café", amount: "41.90", currency: "EUR", date: "2026-04-01", category: "Meals")
    /// Another expense whose sidecar has the same length.
    static let otherFields = ExpenseFields(merchant: "Crash Café", amount: "52.10", currency: "EUR", date: "2026-04-02", category: "Meals")
    static let receipt = SpoolDrop.receipt(.jpeg, tag: 77, size: 200 * 1024)
    static let otherReceipt = SpoolDrop.receipt(.jpeg, tag: 78, size: 200 * 1024)

    enum Drop: String, Sendable { case receipt, sidecar }

    /// What a spool row recorded of the file taken as `name`.
    struct Recorded {
        let inode: UInt64
        let size: Int64
        let modified: Int64
    }

    static func recorded(_ name: String, in daemon: DaemonHarness) throws -> Recorded {
        let db = try Connection(path: "\(daemon.stateDirectory)/expensed.db", readOnly: true)
        guard let row = try db.queryFirst("SELECT inode, size, modified FROM spool_intake WHERE name = ?", [.blob(Array(name.utf8))], { r in
            Recorded(inode: UInt64(bitPattern: r.int64(0)), size: r.int64(1), modified: r.int64(2))
        }) else { throw TestFailure("no intake row for \(name)") }
        return row
    }

    /// Creates files in `directory` until one gets `inode` (bounded), writes
    /// `bytes` into it, gives it the mtime `modified` when asked (as `cp
    /// -p`, `rsync -t` or `tar` do), and renames it to `spool/name`.
    /// - Returns: false when the inode did not come back: another process
    ///   took it first, or the file system does not hand inodes out again
    ///   (tmpfs numbers them afresh).
    static func newFile(withInode inode: UInt64, in directory: String, bytes: [UInt8], modified: Int64?,
                        as name: String, spool: String) throws -> Bool {
        var probes: [String] = []
        defer { for probe in probes { unlink(probe) } }
        var found: String?
        for n in 0..<5000 where found == nil {
            let path = "\(directory)/.probe-\(n)"
            let fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o644)
            guard fd >= 0 else { throw TestFailure("cannot create \(path): \(errno)") }
            close(fd)
            if try FileSystem.status(path).inode == inode { found = path } else { probes.append(path) }
        }
        guard let found else { return false }
        do {
            let file = try FileDescriptor.open(found, [.writeOnly, .truncate])
            try file.writeAll(bytes)
        }
        if let modified { try FileTimes.setModified(found, to: modified) }
        try FileSystem.rename(found, to: "\(spool)/\(name)")
        return true
    }

    /// Drops `drops` (sidecar first) into a daemon armed to die at `point`;
    /// once it has, makes a new file with the inode of the one taken as
    /// `reused`, holding `bytes`, named `newName`, in the directory the
    /// taken one was made in (so from the same inode group on ext4). Where
    /// the inode does not come back (another process took it, or a file
    /// system such as tmpfs that never reuses one), the new file is made
    /// anyway and the row is given its inode: the state the daemon restarts
    /// into is then the very one a reuse leaves, a row and a new file that
    /// share device, inode, name, size and mtime.
    /// - Returns: the daemon, stopped, and what its row records now.
    static func crash(at point: String, dropping drops: [(String, [UInt8])], thenReuse reused: String, bytes: [UInt8],
                      copyingTime: Bool, as newName: String) throws -> (DaemonHarness, Recorded) {
        let daemon = DaemonHarness(arguments: ["--spool-settle", "300ms"], environment: ["EXPENSED_FAULT": point], spool: true,
                                   directory: folderOnDisk())
        try daemon.start()
        let staging = daemon.directory.at("staging")
        try SpoolDrop.byRename(drops.map { (FileName($0.0)!, $0.1) }, in: daemon.spoolDirectory, staging: staging)
        guard daemon.process?.waitForExit(timeout: 20) != nil else {
            daemon.crash()
            throw TestFailure("the daemon did not reach \(point)")
        }
        #expect(daemon.log.contains("fault point \(point)"))
        daemon.environment["EXPENSED_FAULT"] = nil
        #expect(try daemon.spoolEntries().isEmpty, "the taken files were removed")
        let old = try recorded(reused, in: daemon)
        if try newFile(withInode: old.inode, in: staging, bytes: bytes, modified: copyingTime ? old.modified : nil,
                       as: newName, spool: daemon.spoolDirectory) {
            return (daemon, old)
        }
        let path = "\(staging)/\(newName)"
        SampleReceipt.write(bytes, to: path)
        if copyingTime { try FileTimes.setModified(path, to: old.modified) }
        try FileSystem.rename(path, to: "\(daemon.spoolDirectory)/\(newName)")
        let inode = try FileSystem.status("\(daemon.spoolDirectory)/\(newName)").inode
        let db = try Connection(path: "\(daemon.stateDirectory)/expensed.db")
        try db.execute("UPDATE spool_intake SET inode = ? WHERE name = ?", [.integer(Int64(bitPattern: inode)), .blob(Array(reused.utf8))])
        return (daemon, try recorded(reused, in: daemon))
    }

    /// point, what was dropped and taken, whether the new file copies the
    /// old one's size and mtime, whether it gets the old one's name.
    static let cases: [(String, Drop, Bool, Bool)] = [
        ("spool-after-unlink", .receipt, true, false),
        ("spool-after-sync", .receipt, true, true),
        ("spool-after-sync", .receipt, false, false),
        ("spool-after-unlink", .sidecar, true, false),
        ("spool-after-sync", .sidecar, true, true),
        ("spool-after-unlink", .sidecar, false, true),
    ]

    @Test(arguments: cases.indices)
    func aNewFileWithTheInodeOfOneTaken_beforeTheRestart_isANewExpense(_ index: Int) throws {
        let (point, drop, copiesSizeAndTime, sameName) = Self.cases[index]
        let name = drop == .receipt ? "A.jpg" : "A.json"
        let bytes = drop == .receipt ? Self.receipt : SpoolDrop.sidecar(Self.fields)
        // Another expense, in the same number of bytes or one more.
        var newBytes = drop == .receipt ? Self.otherReceipt : SpoolDrop.sidecar(Self.otherFields)
        #expect(newBytes.count == bytes.count)
        if !copiesSizeAndTime { newBytes.append(0x20) }
        let newName = sameName ? name : (drop == .receipt ? "B.jpg" : "B.json")
        let (daemon, old) = try Self.crash(at: point, dropping: [(name, bytes)], thenReuse: name, bytes: newBytes,
                                           copyingTime: copiesSizeAndTime, as: newName)
        let now = try FileSystem.status("\(daemon.spoolDirectory)/\(newName)")
        #expect(now.inode == old.inode)
        if copiesSizeAndTime { #expect(now.size == old.size && now.modifiedNanoseconds == old.modified) }

        try daemon.start()
        defer { daemon.stop() }
        try daemon.waitForSpool(expenses: 2, rejected: 0)
        let queued = try daemon.queuedExpenses()
        switch drop {
        case .receipt:
            #expect(Set(queued.compactMap(\.receiptDigest)) == [Hex.encode(SHA256.hash(bytes)), Hex.encode(SHA256.hash(newBytes))],
                    "the old receipt once, the new one once")
        case .sidecar:
            let byAmount: [ExpenseFields] = queued.map(\.fields).sorted { (a: ExpenseFields, b: ExpenseFields) -> Bool in
                (a.amount ?? "") < (b.amount ?? "")
            }
            #expect(byAmount == [Self.fields, Self.otherFields], "the old expense once, the new one once")
        }
        #expect(!daemon.log.contains("Removed spool file '\(newName)'"))
        try waitUntil(timeout: 10, "the intake records to be forgotten") {
            try QueuedExpense.intakeRecords(stateDirectory: daemon.stateDirectory) == 0
        }
    }

    @Test func aReceiptOfAPairTaken_thenANewReceiptWithItsInodeNameSizeAndTime_isANewExpense() throws {
        let (daemon, _) = try Self.crash(at: "spool-after-unlink", dropping: [("A.json", SpoolDrop.sidecar(Self.fields)), ("A.jpg", Self.receipt)],
                                         thenReuse: "A.jpg", bytes: Self.otherReceipt, copyingTime: true, as: "A.jpg")
        try daemon.start()
        defer { daemon.stop() }
        try daemon.waitForSpool(expenses: 2, rejected: 0)
        let queued = try daemon.queuedExpenses().sorted { $0.fields.merchant ?? "" < $1.fields.merchant ?? "" }
        #expect(queued.map(\.fields) == [ExpenseFields(), Self.fields], "the new receipt alone, and the pair")
        #expect(queued.map(\.receiptDigest) == [Hex.encode(SHA256.hash(Self.otherReceipt)), Hex.encode(SHA256.hash(Self.receipt))])
    }

    @Test func aWaitingReceiptReplaced_byAFileWithItsNameSizeAndMtime_isTakenWithTheNewBytes() throws {
        // The receipt's early copy is made while it waits for a sidecar;
        // the copy is then held (a slow disk) before it is handed over,
        // while the take, due after 10 ms, waits for it.
        let daemon = DaemonHarness(arguments: ["--spool-settle", "10ms"], spool: true, directory: Self.folderOnDisk())
        let hold = try FaultHold("spool-after-stage", on: daemon)
        try daemon.start()
        defer { daemon.stop() }
        let spool = daemon.spoolDirectory
        try SpoolDrop.byRename(Self.receipt, as: FileName("A.jpg")!, in: spool, staging: daemon.directory.at("staging"))
        try waitUntil(timeout: 20, "the early copy to be made") { daemon.receiptFiles().contains { !$0.hasPrefix(".") } }
        let old = try FileSystem.status("\(spool)/A.jpg")
        // Its writer removes it and writes another receipt of the same size
        // in its place, with its mtime: the inode comes back at once, unless
        // something still holds the old file open.
        #expect(unlink("\(spool)/A.jpg") == 0)
        if try !Self.newFile(withInode: old.inode, in: spool, bytes: Self.otherReceipt, modified: old.modifiedNanoseconds,
                             as: "A.jpg", spool: spool) {
            // Held open by the copy, the inode does not come back: same
            // name, size and mtime, then.
            SampleReceipt.write(Self.otherReceipt, to: "\(spool)/.other")
            try FileTimes.setModified("\(spool)/.other", to: old.modifiedNanoseconds)
            try FileSystem.rename("\(spool)/.other", to: "\(spool)/A.jpg")
        }
        try hold.release(daemon)
        try daemon.waitForSpool(expenses: 1, rejected: 0, timeout: 60)
        #expect(try daemon.queuedExpenses().map(\.receiptDigest) == [Hex.encode(SHA256.hash(Self.otherReceipt))],
                "the bytes of the file taken, not the copy of the one before")
        try waitUntil(timeout: 20, "the early copy of the old file to be removed") { daemon.receiptFiles().count == 1 }
    }
}
