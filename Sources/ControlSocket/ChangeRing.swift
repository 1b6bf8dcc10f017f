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

    mutating func append(_ change: ExpenseChange) {
        // Numbers given by the server are consecutive; one dropped before
        // reaching the ring (too many while this thread was busy) leaves a hole.
        nextSeq = max(nextSeq, change.seq)
        slots[Int(change.seq % Int64(Self.capacity))] = change
        nextSeq = change.seq + 1
    }

    /// The change numbered `seq`, if the ring still holds it.
    func change(_ seq: Int64) -> ExpenseChange? {
        guard seq >= firstSeq, seq < nextSeq, let change = slots[Int(seq % Int64(Self.capacity))], change.seq == seq else { return nil }
        return change
    }
}
