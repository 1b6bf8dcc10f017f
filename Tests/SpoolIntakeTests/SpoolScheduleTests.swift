import DaemonSupport
@testable import SpoolIntake
import Posix
import Testing

@Suite struct SpoolScheduleTests {
    func name(_ text: String) -> FileName { FileName(text)! }

    @Test(arguments: [
        ("a.jpg", SpoolSchedule.Role.receipt), ("a.JPEG", .receipt), ("a.Png", .receipt), ("a.pdf", .receipt),
        ("a.json", .sidecar), ("a.JSON", .sidecar), ("a.gif", .other), ("a", .other), ("a.jpg.tmp", .other),
    ])
    func role_isDecidedByTheExtensionInAnyCase(_ file: String, _ role: SpoolSchedule.Role) {
        #expect(SpoolSchedule.role(of: name(file)) == role)
    }

    @Test func sidecarThenReceipt_areTakenTogetherAtOnce() {
        var schedule = SpoolSchedule(settleMilliseconds: 500)
        #expect(schedule.arrived(name("a.json"), now: 0).isEmpty)
        #expect(schedule.nextDue == 500)
        #expect(schedule.arrived(name("a.jpg"), now: 10) == [.expense(receipt: name("a.jpg"), sidecar: name("a.json"))])
        #expect(schedule.nextDue == nil)
        #expect(schedule.takeDue(now: 10_000).isEmpty)
    }

    @Test func receiptThenSidecarWithinTheSettleTime_areTakenTogether() {
        var schedule = SpoolSchedule(settleMilliseconds: 500)
        #expect(schedule.arrived(name("a.jpg"), now: 0).isEmpty)
        #expect(schedule.takeDue(now: 499).isEmpty)
        #expect(schedule.arrived(name("a.json"), now: 499) == [.expense(receipt: name("a.jpg"), sidecar: name("a.json"))])
    }

    @Test func receiptAlone_isTakenAloneOnceTheSettleTimeHasPassed() {
        var schedule = SpoolSchedule(settleMilliseconds: 500)
        _ = schedule.arrived(name("a.jpg"), now: 0)
        _ = schedule.arrived(name("b.json"), now: 100)
        #expect(schedule.takeDue(now: 499).isEmpty)
        #expect(schedule.takeDue(now: 500) == [.expense(receipt: name("a.jpg"), sidecar: nil)])
        #expect(schedule.nextDue == 600)
        #expect(schedule.takeDue(now: 600) == [.expense(receipt: nil, sidecar: name("b.json"))])
        #expect(!schedule.isIdle, "both are being taken")
        _ = schedule.finished(.expense(receipt: name("a.jpg"), sidecar: nil), now: 700)
        _ = schedule.finished(.expense(receipt: nil, sidecar: name("b.json")), now: 700)
        #expect(schedule.isIdle)
    }

    @Test func sidecarAfterTheSettleTime_isTakenOnItsOwn() {
        var schedule = SpoolSchedule(settleMilliseconds: 500)
        _ = schedule.arrived(name("a.jpg"), now: 0)
        #expect(schedule.takeDue(now: 500) == [.expense(receipt: name("a.jpg"), sidecar: nil)])
        #expect(schedule.finished(.expense(receipt: name("a.jpg"), sidecar: nil), now: 550).isEmpty)
        #expect(schedule.arrived(name("a.json"), now: 600).isEmpty)
        #expect(schedule.takeDue(now: 1100) == [.expense(receipt: nil, sidecar: name("a.json"))])
    }

    /// A sidecar that arrives while its receipt is being taken alone waits
    /// until that take has finished: taken beside it, before the receipt's
    /// expense is committed, it would not be known as a late sidecar and
    /// would become a second expense. Then it waits as any lone sidecar.
    @Test func sidecarWhileItsReceiptIsBeingTaken_waitsForThatTake() {
        var schedule = SpoolSchedule(settleMilliseconds: 500)
        _ = schedule.arrived(name("a.jpg"), now: 0)
        _ = schedule.arrived(name("b.jpg"), now: 0)
        #expect(schedule.takeDue(now: 500) == [.expense(receipt: name("a.jpg"), sidecar: nil), .expense(receipt: name("b.jpg"), sidecar: nil)])
        #expect(schedule.arrived(name("a.json"), now: 600).isEmpty)
        #expect(schedule.receiptHolding(name("a.json")) == name("a.jpg"))
        #expect(schedule.nextDue == nil, "it waits for the take, not for a time")
        #expect(schedule.takeDue(now: 100_000).isEmpty)
        // Another stem's take finishing frees nothing.
        #expect(schedule.finished(.expense(receipt: name("b.jpg"), sidecar: nil), now: 100_000).isEmpty)
        #expect(schedule.receiptHolding(name("a.json")) == name("a.jpg"))
        #expect(schedule.finished(.expense(receipt: name("a.jpg"), sidecar: nil), now: 100_100).isEmpty)
        #expect(schedule.receiptHolding(name("a.json")) == nil)
        #expect(schedule.takeDue(now: 100_599).isEmpty)
        #expect(schedule.takeDue(now: 100_600) == [.expense(receipt: nil, sidecar: name("a.json"))])
        _ = schedule.finished(.expense(receipt: nil, sidecar: name("a.json")), now: 100_700)
        #expect(schedule.isIdle)
    }

    /// The receipt's take failed and is tried again later: the sidecar
    /// that waited for it waits as long, and the two are taken as a pair.
    @Test func sidecarThatWaitedForAReceiptTriedAgain_isTakenWithIt() {
        var schedule = SpoolSchedule(settleMilliseconds: 0)
        #expect(schedule.arrived(name("a.jpg"), now: 0) == [])
        #expect(schedule.takeDue(now: 0) == [.expense(receipt: name("a.jpg"), sidecar: nil)])
        #expect(schedule.arrived(name("a.json"), now: 10).isEmpty)
        #expect(schedule.finished(.expense(receipt: name("a.jpg"), sidecar: nil), now: 20, retryAfter: 30_000).isEmpty)
        #expect(schedule.takeDue(now: 30_019).isEmpty)
        #expect(schedule.takeDue(now: 30_020) == [.expense(receipt: name("a.jpg"), sidecar: name("a.json"))])
    }

    /// A sidecar taken with its receipt as a pair, and one arriving under
    /// another name of the same stem meanwhile, waits for the pair's take.
    @Test func sidecarWhileAPairOfItsStemIsBeingTaken_waitsForIt() {
        var schedule = SpoolSchedule(settleMilliseconds: 500)
        _ = schedule.arrived(name("a.json"), now: 0)
        #expect(schedule.arrived(name("a.jpg"), now: 10) == [.expense(receipt: name("a.jpg"), sidecar: name("a.json"))])
        #expect(schedule.arrived(name("a.JSON"), now: 20).isEmpty)
        #expect(schedule.takeDue(now: 10_000).isEmpty)
        _ = schedule.finished(.expense(receipt: name("a.jpg"), sidecar: name("a.json")), now: 10_000)
        #expect(schedule.takeDue(now: 10_500) == [.expense(receipt: nil, sidecar: name("a.JSON"))])
    }

    @Test func otherKinds_areTakenAtOnce() {
        var schedule = SpoolSchedule(settleMilliseconds: 500)
        #expect(schedule.arrived(name("x.gif"), now: 0) == [.other(name("x.gif"))])
    }

    @Test func waitingFileWrittenAgain_waitsTheSettleTimeAnew() {
        var schedule = SpoolSchedule(settleMilliseconds: 500)
        _ = schedule.arrived(name("a.jpg"), now: 0)
        _ = schedule.arrived(name("a.jpg"), now: 300)
        #expect(schedule.waitingCount == 1)
        #expect(schedule.takeDue(now: 500).isEmpty)
        #expect(schedule.takeDue(now: 800) == [.expense(receipt: name("a.jpg"), sidecar: nil)])
    }

    @Test func arrivalWhileBeingTaken_waitsUntilTheTakeHasFinished() {
        var schedule = SpoolSchedule(settleMilliseconds: 500)
        #expect(schedule.arrived(name("x.gif"), now: 0) == [.other(name("x.gif"))])
        #expect(schedule.arrived(name("x.gif"), now: 1).isEmpty, "a second file under the same name waits")
        #expect(schedule.finished(.other(name("x.gif")), now: 2) == [.other(name("x.gif"))])
        #expect(schedule.finished(.other(name("x.gif")), now: 3).isEmpty)
        #expect(schedule.isIdle)
    }

    @Test func receiptArrivingAgainWhileBeingTaken_waitsTheSettleTimeAfterwards() {
        var schedule = SpoolSchedule(settleMilliseconds: 500)
        _ = schedule.arrived(name("a.json"), now: 0)
        let pair = schedule.arrived(name("a.jpg"), now: 0)
        #expect(schedule.arrived(name("a.jpg"), now: 5).isEmpty)
        #expect(schedule.finished(pair[0], now: 10).isEmpty)
        #expect(schedule.nextDue == 510)
        #expect(schedule.takeDue(now: 510) == [.expense(receipt: name("a.jpg"), sidecar: nil)])
    }

    @Test func failedTake_isTriedAgainAfterTheRetryDelay() {
        var schedule = SpoolSchedule(settleMilliseconds: 500)
        let other = schedule.arrived(name("x.gif"), now: 0)
        #expect(schedule.finished(other[0], now: 10, retryAfter: 30_000).isEmpty)
        #expect(schedule.takeDue(now: 30_009).isEmpty)
        #expect(schedule.takeDue(now: 30_010) == [.other(name("x.gif"))])
        _ = schedule.arrived(name("a.json"), now: 0)
        let pair = schedule.arrived(name("a.jpg"), now: 0)
        #expect(schedule.finished(pair[0], now: 100, retryAfter: 30_000).isEmpty, "a pair that failed waits too, not taken over and over")
        #expect(schedule.takeDue(now: 30_099).isEmpty)
        #expect(schedule.takeDue(now: 30_100) == [.expense(receipt: name("a.jpg"), sidecar: name("a.json"))], "as a pair")
    }

    @Test func aPairWaitingToBeTriedAgain_isTakenAtOnceWhenOneOfItIsWrittenAgain() {
        var schedule = SpoolSchedule(settleMilliseconds: 500)
        _ = schedule.arrived(name("a.json"), now: 0)
        let pair = schedule.arrived(name("a.jpg"), now: 0)
        #expect(schedule.finished(pair[0], now: 100, retryAfter: 30_000).isEmpty)
        #expect(schedule.arrived(name("a.jpg"), now: 200) == [.expense(receipt: name("a.jpg"), sidecar: name("a.json"))],
                "its writer finished it: no reason to wait")
    }

    @Test func twoReceiptsWithOneStem_onlyTheFirstGetsTheSidecar() {
        var schedule = SpoolSchedule(settleMilliseconds: 500)
        _ = schedule.arrived(name("a.jpg"), now: 0)
        _ = schedule.arrived(name("a.png"), now: 1)
        #expect(schedule.arrived(name("a.json"), now: 2) == [.expense(receipt: name("a.jpg"), sidecar: name("a.json"))])
        #expect(schedule.takeDue(now: 501) == [.expense(receipt: name("a.png"), sidecar: nil)])
    }

    @Test func stemsAreBytes_soNamesThatAreNotUTF8StillPair() {
        var schedule = SpoolSchedule(settleMilliseconds: 500)
        let receipt = FileName(bytes: [0xFF, 0xFE, 0x0A] + Array(".jpg".utf8))!
        let sidecar = FileName(bytes: [0xFF, 0xFE, 0x0A] + Array(".json".utf8))!
        _ = schedule.arrived(sidecar, now: 0)
        #expect(schedule.arrived(receipt, now: 1) == [.expense(receipt: receipt, sidecar: sidecar)])
    }
}
