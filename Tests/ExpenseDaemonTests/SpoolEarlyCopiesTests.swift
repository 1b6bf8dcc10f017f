import ExpenseCore
@testable import ExpenseDaemon
import Posix
import Synchronization
import Testing

@Suite struct SpoolEarlyCopiesTests {
    let name = FileName("a.jpg")!

    func copy(_ tag: Int) -> SpoolEarlyCopies.Copy {
        SpoolEarlyCopies.Copy(record: SpoolIntakeRecord(device: 1, inode: UInt64(tag), size: 10, modified: 20, name: name),
                              staged: StagedReceipt(jobUUID: "uuid-\(tag)", kind: .jpeg, size: 10))
    }

    @Test func claimAfterTheCopy_getsItOnce() async {
        let discarded = Mutex<[String]>([])
        let copies = SpoolEarlyCopies { staged in discarded.withLock { $0.append(staged.jobUUID) } }
        let ticket = copies.begin(name)
        copies.finish(name, ticket: ticket, copy: copy(1))
        #expect(await copies.claim(name)?.staged.jobUUID == "uuid-1")
        #expect(await copies.claim(name) == nil, "claimed once")
        #expect(discarded.withLock { $0 }.isEmpty)
    }

    @Test func claimWhileCopying_waitsForTheCopy() async {
        let copies = SpoolEarlyCopies { _ in }
        let ticket = copies.begin(name)
        async let claimed = copies.claim(name)
        while copies.waiterCount(name) == 0 { await Task.yield() }
        copies.finish(name, ticket: ticket, copy: copy(2))
        #expect(await claimed?.staged.jobUUID == "uuid-2")
    }

    @Test func newerCopy_supersedesAndDiscardsTheOlder() async {
        let discarded = Mutex<[String]>([])
        let copies = SpoolEarlyCopies { staged in discarded.withLock { $0.append(staged.jobUUID) } }
        let first = copies.begin(name)
        let second = copies.begin(name)
        copies.finish(name, ticket: first, copy: copy(1))
        #expect(discarded.withLock { $0 } == ["uuid-1"], "a superseded copy is removed")
        copies.finish(name, ticket: second, copy: copy(2))
        let third = copies.begin(name)
        #expect(discarded.withLock { $0 } == ["uuid-1", "uuid-2"], "an unclaimed copy is removed when a newer one starts")
        copies.finish(name, ticket: third, copy: nil)
        #expect(await copies.claim(name) == nil)
    }

    @Test func claimWithoutACopy_isNil() async {
        #expect(await SpoolEarlyCopies { _ in }.claim(name) == nil)
    }
}

extension SpoolEarlyCopies.Copy: Equatable {
    public static func == (a: Self, b: Self) -> Bool { a.record == b.record && a.staged == b.staged }
}
