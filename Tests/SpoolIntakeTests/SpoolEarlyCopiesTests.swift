import DaemonSupport
import ExpenseCore
@testable import SpoolIntake
@testable import OutboxStore
import ExpenseTestSupport
import Posix
import Synchronization
import Testing

@Suite struct SpoolEarlyCopiesTests {
    let name = FileName("a.jpg")!
    let temporary = TemporaryDirectory(prefix: "early-copies")

    func copy(_ tag: Int) throws -> SpoolEarlyCopies.Copy {
        let path = temporary.at("file-\(tag)")
        SampleReceipt.write([UInt8(tag)], to: path)
        let descriptor = try FileDescriptor.open(path, .readOnly)
        return SpoolEarlyCopies.Copy(file: SpoolFile(name: name, descriptor: descriptor, status: try descriptor.status()),
                                     staged: StagedReceipt(jobUUID: "uuid-\(tag)", kind: .jpeg, size: 10))
    }

    @Test func claimAfterTheCopy_getsItOnce() async throws {
        let discarded = Mutex<[String]>([])
        let copies = SpoolEarlyCopies { staged in discarded.withLock { $0.append(staged.jobUUID) } }
        let ticket = try #require(copies.begin(name))
        copies.finish(name, ticket: ticket, copy: try copy(1))
        #expect(await copies.claim(name)?.staged.jobUUID == "uuid-1")
        #expect(await copies.claim(name) == nil, "claimed once")
        #expect(discarded.withLock { $0 }.isEmpty)
    }

    @Test func claimWhileCopying_waitsForTheCopy() async throws {
        let copies = SpoolEarlyCopies { _ in }
        let ticket = try #require(copies.begin(name))
        async let claimed = copies.claim(name)
        while copies.waiterCount(name) == 0 { await Task.yield() }
        copies.finish(name, ticket: ticket, copy: try copy(2))
        #expect(await claimed?.staged.jobUUID == "uuid-2")
    }

    @Test func newerCopy_supersedesAndDiscardsTheOlder() async throws {
        let discarded = Mutex<[String]>([])
        let copies = SpoolEarlyCopies { staged in discarded.withLock { $0.append(staged.jobUUID) } }
        let first = try #require(copies.begin(name))
        let second = try #require(copies.begin(name))
        copies.finish(name, ticket: first, copy: try copy(1))
        #expect(discarded.withLock { $0 } == ["uuid-1"], "a superseded copy is removed")
        copies.finish(name, ticket: second, copy: try copy(2))
        let third = try #require(copies.begin(name))
        #expect(discarded.withLock { $0 } == ["uuid-1", "uuid-2"], "an unclaimed copy is removed when a newer one starts")
        copies.finish(name, ticket: third, copy: nil)
        #expect(await copies.claim(name) == nil)
    }

    @Test func claimWithoutACopy_isNil() async {
        #expect(await SpoolEarlyCopies { _ in }.claim(name) == nil)
    }

    @Test func atTheLimit_noNewCopyBegins_untilOneIsClaimed() async throws {
        let copies = SpoolEarlyCopies { _ in }
        for n in 0..<SpoolEarlyCopies.limit {
            let other = FileName("r\(n).jpg")!
            copies.finish(other, ticket: try #require(copies.begin(other)), copy: nil)
        }
        #expect(copies.begin(name) == nil, "each copy holds a descriptor: bounded")
        #expect(copies.begin(FileName("r0.jpg")!) != nil, "a name with a copy may copy again")
        _ = await copies.claim(FileName("r1.jpg")!)
        #expect(copies.begin(name) != nil)
    }

    @Test func aCopy_isOfTheSameFileOnlyWhileNothingChangedIt() throws {
        let path = temporary.at("photo.jpg")
        SampleReceipt.write(SampleReceipt.jpeg(), to: path)
        let descriptor = try FileDescriptor.open(path, .readOnly)
        let copy = SpoolEarlyCopies.Copy(file: SpoolFile(name: name, descriptor: descriptor, status: try descriptor.status()),
                                         staged: StagedReceipt(jobUUID: "u", kind: .jpeg, size: 2048))
        #expect(copy.isCopy(of: try FileSystem.status(path)))
        // A chmod changes no byte, no size, no mtime: only the change time
        // tells. (Kept at it until the kernel's coarse clock has ticked.)
        var mode: UInt32 = 0o600
        for _ in 0..<100_000 where copy.isCopy(of: try FileSystem.status(path)) {
            try FileSystem.setMode(path, mode)
            mode ^= 0o040
        }
        #expect(!copy.isCopy(of: try FileSystem.status(path)))
        #expect(try FileSystem.status(path).modifiedNanoseconds == copy.file.status.modifiedNanoseconds)
    }
}

extension SpoolEarlyCopies.Copy: Equatable {
    public static func == (a: Self, b: Self) -> Bool { a.file.status == b.file.status && a.staged == b.staged }
}
