import ExpenseCore
@testable import SpoolIntake
import Posix
import Testing

/// Spool files left in place for room in the outbox: which wait, when the
/// journal hears of it (once when the waiting starts, once when it ends),
/// which refusals count, and how room freed brings their next try forward.
@Suite struct SpoolRoomWaitTests {
    func name(_ text: String) -> FileName { FileName(text)! }

    @Test func waiting_startsOnce_countsEachDropOnce_andEndsWhenTheLastIsTaken() {
        var wait = SpoolRoomWait()
        let pair = [name("a.jpg"), name("a.json")]
        #expect(wait.finished(pair, waiting: true) == .init(isNewRefusal: true, started: true, ended: false, count: 2))
        #expect(wait.finished([name("b.pdf")], waiting: true) == .init(isNewRefusal: true, started: false, ended: false, count: 3))
        // Tried again and still no room: the same drop, not a new refusal.
        #expect(wait.finished(pair, waiting: true) == .init(isNewRefusal: false, started: false, ended: false, count: nil))
        #expect(wait.finished(pair, waiting: false) == .init(isNewRefusal: false, started: false, ended: false, count: 1))
        // A take of a file that never waited changes nothing.
        #expect(wait.finished([name("c.jpg")], waiting: false) == .init())
        #expect(wait.finished([name("b.pdf")], waiting: false) == .init(isNewRefusal: false, started: false, ended: true, count: 0))
        #expect(wait.names.isEmpty)
    }

    @Test func roomFreed_bringsTheWaitingFilesForward_andLeavesTheOthers() {
        var schedule = SpoolSchedule(settleMilliseconds: 500)
        // Refused for room: taken again after the long retry unless room frees.
        #expect(schedule.arrived(name("a.jpg"), now: 0).isEmpty)
        let take = schedule.takeDue(now: 500)
        #expect(take == [.expense(receipt: name("a.jpg"), sidecar: nil)])
        #expect(schedule.finished(take[0], now: 600, retryAfter: 30_000).isEmpty)
        _ = schedule.arrived(name("b.jpg"), now: 700)
        #expect(schedule.nextDue == 1200)
        schedule.hurry([name("a.jpg"), name("gone.jpg")], due: 800)
        #expect(schedule.nextDue == 800)
        #expect(schedule.takeDue(now: 800) == [.expense(receipt: name("a.jpg"), sidecar: nil)])
        #expect(schedule.nextDue == 1200, "b.jpg still waits for its sidecar")
        // Never later than it was due.
        schedule.hurry([name("b.jpg")], due: 5000)
        #expect(schedule.nextDue == 1200)
    }
}
