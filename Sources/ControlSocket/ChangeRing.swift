import ExpenseCore

/// The recent changes `watch` connections follow, by sequence number: a
/// fixed ring, so a watcher that reads nothing costs the daemon no memory
/// beyond it; one that falls a ring behind is told how many it missed.
struct ChangeRing {
    static let capacity = 4096
    private var slots: [ExpenseChange?] = Array(repeating: nil, count: capacity)
    /// The sequence number the next change will have (the first is 1).
    private(set) var nextSeq: Int64 = 1

    /// The oldest sequence number still held.
    var firstSeq: Int64 { max(1, nextSeq - Int64(Self.capacity)) }

    /// How many changes there were, in all and by account, those that
    /// never reached the ring included.
    struct Counts {
        var all: Int64 = 0
        var byAccount: [String: Int64] = [:]

        /// A watcher's count of the changes in `scope` so far: the newest
        /// change's `seq` for every account, its account's `accountSeq` for one.
        func last(in scope: AccountScope) -> Int64 {
            switch scope {
            case .all: all
            case .account(let name): byAccount[name] ?? 0
            }
        }
    }
    private(set) var counts = Counts()

    /// Numbers given by the server are consecutive; one dropped before
    /// reaching the ring (too many while the socket's thread was busy)
    /// leaves a hole, which `byAccount` (taken with them) counts.
    mutating func append(_ changes: [ExpenseChange], byAccount: [String: Int64]) {
        for change in changes {
            slots[Int(change.seq % Int64(Self.capacity))] = change
            nextSeq = change.seq + 1
        }
        counts = Counts(all: nextSeq - 1, byAccount: byAccount)
    }

    /// Where `change` stands in that count.
    static func ordinal(of change: ExpenseChange, in scope: AccountScope) -> Int64 {
        scope == .all ? change.seq : change.accountSeq
    }

    /// The change numbered `seq`, if the ring still holds it.
    func change(_ seq: Int64) -> ExpenseChange? {
        guard seq >= firstSeq, seq < nextSeq, let change = slots[Int(seq % Int64(Self.capacity))], change.seq == seq else { return nil }
        return change
    }
}
