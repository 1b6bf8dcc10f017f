import DaemonSupport
import ExpenseCore
@testable import SpoolIntake
@testable import OutboxStore
import ExpenseTestSupport
import Foundation
import Posix
import Testing

/// The spool directory's file operations on a real temporary directory.
@Suite struct SpoolDirectoryTests {
    let temporary = TemporaryDirectory(prefix: "spool-dir")
    let directory: SpoolDirectory

    init() throws {
        let logger = Logger(target: .stderr)
        directory = try SpoolSetup.openDirectory(temporary.at("spool"), logger: logger)
    }

    func write(_ name: String, _ bytes: [UInt8]) {
        SampleReceipt.write(bytes, to: "\(directory.path)/\(name)")
    }

    func record(_ name: String) throws -> SpoolIntakeRecord {
        guard case .file(let file) = try directory.open(FileName(name)!, maxBytes: 1 << 20) else {
            throw TestFailure("\(name) did not open")
        }
        return SpoolIntakeRecord(file, clientID: ClientID.make(), index: 0, digest: try SpoolDirectory.digest(of: file.descriptor))
    }

    func rejectedNames() -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: "\(directory.path)/rejected")) ?? []).sorted()
    }

    @Test func missingSpool_isCreatedWithMode1730() throws {
        let status = try FileSystem.status(directory.path)
        #expect(status.mode == 0o1730)
        #expect(try FileSystem.status("\(directory.path)/rejected").mode == 0o700)
    }

    @Test func remove_removesTheFileTaken() throws {
        write("a.jpg", SampleReceipt.jpeg())
        let taken = try record("a.jpg")
        #expect(try directory.remove(taken) == .removed)
        #expect(try directory.entries() == ["rejected"])
    }

    @Test func remove_whenANewFileReplacedTheName_putsTheNewFileBack() throws {
        write("a.jpg", SampleReceipt.jpeg(seed: 1))
        let taken = try record("a.jpg")
        // A writer renames a new file over the name while the first is taken.
        write("staged", SampleReceipt.jpeg(seed: 2))
        try FileSystem.rename(temporary.at("spool/staged"), to: "\(directory.path)/a.jpg")
        #expect(try directory.remove(taken) == .replaced(FileName("a.jpg")!))
        #expect(FileManager.default.contents(atPath: "\(directory.path)/a.jpg") == Data(SampleReceipt.jpeg(seed: 2)))
    }

    @Test func remove_whenWrittenToAfterItWasTaken_leavesItUnderAPrivateName() throws {
        write("a.jpg", SampleReceipt.jpeg())
        let taken = try record("a.jpg")
        let handle = try #require(FileHandle(forWritingAtPath: "\(directory.path)/a.jpg"))
        handle.seekToEndOfFile()
        handle.write(Data([1, 2, 3]))
        try handle.close()
        let removal = try directory.remove(taken)
        #expect(removal == .changed(taken.takenName))
        #expect(FileSystem.exists("\(directory.path)/\(taken.takenName.displayName)"), "nothing is deleted that was not taken")
    }

    /// Takes `name` and renames it to its private name, as a removal
    /// would, then changes one byte in place and sets its mtime back.
    func takenThenOverwritten(_ name: String, _ bytes: [UInt8]) throws -> SpoolIntakeRecord {
        write(name, bytes)
        let taken = try record(name)
        let path = "\(directory.path)/\(taken.takenName.displayName)"
        try FileSystem.rename("\(directory.path)/\(name)", to: path)
        let handle = try #require(FileHandle(forWritingAtPath: path))
        handle.seek(toFileOffset: 100)
        handle.write(Data([0x5A]))
        try handle.close()
        try FileTimes.setModified(path, to: taken.modified)
        return taken
    }

    @Test func finishRemoval_checkingTheDigest_tellsOtherBytesOfTheSameSizeAndTime() throws {
        let taken = try takenThenOverwritten("a.jpg", SampleReceipt.jpeg(seed: 1))
        #expect(try directory.finishRemoval(taken) == .removed, "size and mtime alone cannot tell")
        let other = try takenThenOverwritten("b.jpg", SampleReceipt.jpeg(seed: 2))
        #expect(try directory.finishRemoval(other, checkingDigest: true) == .changed(other.takenName), "the bytes can")
        #expect(FileSystem.exists("\(directory.path)/\(other.takenName.displayName)"))
    }

    @Test func find_locatesAFileByItsInodeUnderItsNewName() throws {
        write("a.jpg", SampleReceipt.jpeg())
        let taken = try record("a.jpg")
        try FileSystem.rename("\(directory.path)/a.jpg", to: "\(directory.path)/b.jpg")
        #expect(try directory.find(device: taken.device, inode: taken.inode) == FileName("b.jpg")!)
        #expect(try directory.remove(taken) == .gone)
        #expect(try directory.remove(taken.renamed(FileName("b.jpg")!)) == .removed)
        #expect(try directory.find(device: taken.device, inode: taken.inode) == nil)
    }

    @Test func remove_whenGone_saysSo() throws {
        write("a.jpg", SampleReceipt.jpeg())
        let taken = try record("a.jpg")
        try FileSystem.remove("\(directory.path)/a.jpg")
        #expect(try directory.remove(taken) == .gone)
    }

    @Test func putBack_neverReplaces() throws {
        write(".private", [1])
        write("a.jpg", [2])
        let name = try directory.putBack(FileName(".private")!, as: FileName("a.jpg")!)
        #expect(name == FileName("a.jpg.1")!)
        #expect(FileManager.default.contents(atPath: "\(directory.path)/a.jpg") == Data([2]))
    }

    @Test func reject_writesTheReasonAndNeverOverwrites() throws {
        for round in 0..<3 {
            write("x.gif", [UInt8(round)])
            let moved = try directory.reject(FileName("x.gif")!, reason: "has an unknown extension", timestamp: "T")
            #expect(moved == FileName(round == 0 ? "x.gif" : "x.gif.\(round)")!)
        }
        #expect(rejectedNames() == ["x.gif", "x.gif.1", "x.gif.1.reason", "x.gif.2", "x.gif.2.reason", "x.gif.reason"])
        let reason = try String(contentsOfFile: "\(directory.path)/rejected/x.gif.2.reason", encoding: .utf8)
        #expect(reason == "name: x.gif\nreason: has an unknown extension\nrejected_at: T\n")
        #expect(FileManager.default.contents(atPath: "\(directory.path)/rejected/x.gif.1") == Data([1]))
    }

    @Test func reject_ofANameEndingInReason_givesItASuffix_soOnlyReasonFilesEndSo() throws {
        write("notes.reason", [1])
        write("x.gif", [2])
        #expect(try directory.rejectedCount() == 0)
        #expect(try directory.reject(FileName("notes.reason")!, reason: "r", timestamp: "T") == FileName("notes.reason.1")!)
        #expect(try directory.reject(FileName("x.gif")!, reason: "r", timestamp: "T") == FileName("x.gif")!)
        #expect(rejectedNames() == ["notes.reason.1", "notes.reason.1.reason", "x.gif", "x.gif.reason"])
        #expect(try directory.rejectedCount() == 2, "two files, two reasons")
    }

    @Test func reject_ofTheLongestName_shortensItToLeaveRoomForTheReason() throws {
        let long = String(repeating: "é", count: 125) + ".gif"  // 254 bytes
        write(long, [1])
        let moved = try #require(try directory.reject(FileName(long)!, reason: "r", timestamp: "T"))
        #expect(moved.bytes.count <= 255 - ".reason".count - 4)
        #expect(moved.string != nil, "cut at a character boundary")
        let reason = try String(contentsOfFile: "\(directory.path)/rejected/\(moved.string!).reason", encoding: .utf8)
        #expect(reason.contains("name: \(long)\n"), "the reason file has the whole name")
    }

    @Test func reject_ofAGoneFile_isNil() throws {
        #expect(try directory.reject(FileName("none.gif")!, reason: "r", timestamp: "T") == nil)
        #expect(rejectedNames().isEmpty, "no stray reason file")
    }

    @Test func open_neverOpensWhatIsNotARegularFile() throws {
        #expect(mkfifo("\(directory.path)/f.jpg", 0o600) == 0)
        try FileManager.default.createSymbolicLink(atPath: "\(directory.path)/l.jpg", withDestinationPath: "/etc/hostname")
        write("big.jpg", SampleReceipt.jpeg(size: 5000))
        guard case .rejected(let fifo) = try directory.open(FileName("f.jpg")!, maxBytes: 1 << 20),
              case .rejected(let link) = try directory.open(FileName("l.jpg")!, maxBytes: 1 << 20),
              case .rejected(let big) = try directory.open(FileName("big.jpg")!, maxBytes: 4096),
              case .gone = try directory.open(FileName("none.jpg")!, maxBytes: 1 << 20) else {
            Issue.record("opened something it must not")
            return
        }
        #expect(fifo.reason == "is a FIFO (named pipe)")
        #expect(link.reason == "is a symbolic link")
        #expect(big.reason == "is larger than the limit of 4096 bytes (5000 bytes)")
    }
}

extension SpoolDirectory {
    /// Every name in the spool, dot names too, as strings, sorted.
    func entries() throws -> [String] {
        try descriptor.entries().map { $0.displayName }.sorted()
    }
}
