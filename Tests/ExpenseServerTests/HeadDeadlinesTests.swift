import Testing
@testable import HTTPD

/// The head deadline and the connection limit's choices, without threads:
/// times are given in seconds, descriptors are numbers.
@Suite struct HeadDeadlinesTests {
    /// The rules behind a reference, so that `#expect` can call their
    /// mutating methods; each call returns what the test looks at.
    final class Rules {
        var rules: HeadDeadlines
        init(limit: Int = 8, timeout: UInt64 = 10) {
            rules = HeadDeadlines(limit: limit, timeoutNanoseconds: timeout * 1_000_000_000)
        }
        /// The descriptors shut down.
        @discardableResult
        func open(_ id: UInt, fd: Int32, at seconds: UInt64, unread: Set<Int32> = []) -> [Int32] {
            rules.opened(id, descriptor: fd, now: seconds * 1_000_000_000, headIsUnread: { unread.contains($0) }).shutDown
        }
        func headArrived(_ id: UInt) -> Bool { rules.headArrived(id) }
        @discardableResult
        func exchangeEnded(_ id: UInt, at seconds: UInt64) -> HeadDeadlines.Reason? {
            rules.exchangeEnded(id, now: seconds * 1_000_000_000).reason
        }
        /// The descriptors shut down, and the next deadline in seconds.
        func expire(at seconds: UInt64) -> (shutDown: [Int32], next: UInt64?) {
            let (actions, next) = rules.expire(now: seconds * 1_000_000_000)
            return (actions.shutDown, next.map { $0 / 1_000_000_000 })
        }
        func wakesTimerOnOpening(_ id: UInt, fd: Int32, at seconds: UInt64) -> Bool {
            rules.opened(id, descriptor: fd, now: seconds * 1_000_000_000).wakeTimer
        }
        func wakesTimerOnEnding(_ id: UInt, at seconds: UInt64) -> Bool {
            rules.exchangeEnded(id, now: seconds * 1_000_000_000).actions.wakeTimer
        }
        func closed(_ id: UInt) { rules.closed(id) }
        func reason(_ id: UInt) -> HeadDeadlines.Reason? { rules.reason(id) }
        var served: Int { rules.served }
    }

    @Test func aHeadNotCompleteAtTheDeadline_isClosed_notBefore() {
        let rules = Rules()
        rules.open(1, fd: 31, at: 100)
        rules.open(2, fd: 32, at: 103)
        #expect(rules.expire(at: 109) == ([], 110))
        #expect(rules.expire(at: 110) == ([31], 113))
        #expect(rules.reason(1) == .headTimeout)
        // Its head completing now is too late: it must not be served.
        #expect(!rules.headArrived(1))
        #expect(rules.exchangeEnded(1, at: 111) == .headTimeout)
        #expect(rules.expire(at: 200) == ([32], nil))
        #expect(rules.served == 0)
    }

    @Test func aCompleteHead_stopsTheClock_andTheNextWaitStartsWhenTheExchangeEnds() {
        let rules = Rules()
        rules.open(1, fd: 31, at: 0)
        #expect(rules.headArrived(1))
        // A long upload and its answer are not the head's business.
        #expect(rules.expire(at: 60) == ([], nil))
        #expect(rules.exchangeEnded(1, at: 60) == nil)
        // Keep-alive: the next head is due 10 s after the previous exchange.
        #expect(rules.expire(at: 69) == ([], 70))
        #expect(rules.expire(at: 70) == ([31], nil))
        #expect(rules.reason(1) == .headTimeout)
    }

    @Test func atTheLimit_aHeadInButUnread_isPassedOver_unlessEveryWaitingHeadIs() {
        let rules = Rules(limit: 3)
        rules.open(1, fd: 31, at: 1)
        rules.open(2, fd: 32, at: 2)
        rules.open(3, fd: 33, at: 3)
        // 1 has waited longest, but its whole head is in its socket: the
        // server has not read it yet, the client is not slow.
        #expect(rules.open(4, fd: 34, at: 4, unread: [31]) == [32])
        #expect(rules.reason(1) == nil)
        #expect(rules.reason(2) == .evicted)
        #expect(rules.open(5, fd: 35, at: 5, unread: [31, 34]) == [33])
        // Every waiting head unread: the oldest still makes room.
        #expect(rules.open(6, fd: 36, at: 6, unread: [31, 34, 35]) == [31])
        #expect(rules.served == 3)
        // The passed-over wait keeps its place in the queue: 34 is now oldest.
        #expect(rules.open(7, fd: 37, at: 7) == [34])
        #expect(rules.expire(at: 15) == ([35], 16))
    }

    @Test func atTheLimit_theLongestWaitingHeadMakesRoom_neverABusyConnection() {
        let rules = Rules(limit: 3)
        rules.open(1, fd: 31, at: 1)
        rules.open(2, fd: 32, at: 2)
        rules.open(3, fd: 33, at: 3)
        #expect(rules.headArrived(1))
        // 1 is busy, 2 has waited longest.
        #expect(rules.open(4, fd: 34, at: 4) == [32])
        #expect(rules.reason(2) == .evicted)
        #expect(rules.served == 3)
        #expect(rules.open(5, fd: 35, at: 5) == [33])
        #expect(rules.open(6, fd: 36, at: 6) == [34])
        #expect(rules.headArrived(5))
        #expect(rules.headArrived(6))
        // Nobody waits for a head: the newcomer is the one closed.
        #expect(rules.open(7, fd: 37, at: 7) == [37])
        #expect(rules.reason(7) == .connectionLimit)
        #expect(!rules.headArrived(7))
        #expect(rules.served == 3)
        // An idle keep-alive connection waits for its next head, so it can make room.
        #expect(rules.exchangeEnded(5, at: 8) == nil)
        #expect(rules.open(8, fd: 38, at: 9) == [35])
        // Closed ones free their slot only once: 2 and 7 were no longer counted.
        rules.closed(2)
        rules.closed(7)
        #expect(rules.served == 3)
        rules.closed(1)
        #expect(rules.served == 2)
        #expect(rules.open(9, fd: 39, at: 10) == [])
    }

    @Test func aNewConnectionAtTheAddressOfAClosedOne_startsItsOwnClock() {
        let rules = Rules()
        rules.open(1, fd: 31, at: 0)
        rules.open(2, fd: 32, at: 0)
        rules.closed(1)
        // libmicrohttpd may put the next connection where the freed one was.
        rules.open(1, fd: 33, at: 9)
        #expect(rules.expire(at: 10) == ([32], 19))
        #expect(rules.reason(1) == nil)
    }

    @Test func theTimer_isWokenOnlyWhenAWaitBeginsWhileItSleepsWithoutDeadline() {
        let rules = Rules()
        #expect(rules.expire(at: 0) == ([], nil))
        #expect(rules.wakesTimerOnOpening(1, fd: 31, at: 1))
        #expect(!rules.wakesTimerOnOpening(2, fd: 32, at: 2))
        #expect(rules.headArrived(1))
        #expect(rules.headArrived(2))
        #expect(rules.expire(at: 3) == ([], nil))
        #expect(rules.wakesTimerOnEnding(1, at: 4))
        #expect(!rules.wakesTimerOnEnding(2, at: 5))
    }

    @Test func manyShortExchanges_keepTheQueueSmall() {
        let rules = Rules()
        rules.open(1, fd: 31, at: 0)
        rules.open(2, fd: 32, at: 0)
        #expect(rules.headArrived(1))
        for second in 1...100_000 {
            #expect(rules.headArrived(2))
            rules.exchangeEnded(2, at: UInt64(second))
        }
        #expect(rules.rules.queuedWaits < 100)
        #expect(rules.expire(at: 100_010) == ([32], nil))
    }
}
