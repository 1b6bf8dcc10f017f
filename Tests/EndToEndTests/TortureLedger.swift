import Synchronization

/// What the torture's writers did, for the verdict: every add tried, with
/// whether it was acknowledged, and every drop into the spool, with what
/// the daemon is entitled to make of it.
final class TortureLedger: Sendable {
    /// One expense added through the control socket or `expensectl`.
    struct Add: Sendable {
        let clientID: String
        let transactionID: String
        let merchant: String
        /// SHA-256 (hex) of the receipt sent with it.
        let receiptDigest: String?
        /// `socket` or `expensectl`.
        let via: String
        var attempts = 0
        /// An attempt got an ok answer (or exit status 0) with its transaction id.
        var acknowledged = false
    }

    enum DropKind: String, Sendable, CaseIterable {
        case receipt, sidecar, pairSidecarFirst, pairReceiptFirst
    }

    /// One drop: a receipt, a sidecar, or both under one stem.
    struct Drop: Sendable {
        let unit: Int
        let kind: DropKind
        /// Written straight into the spool (two writes, one close) rather than renamed in.
        let inPlace: Bool
        let receiptName: String?
        let sidecarName: String?
        /// The sidecar's merchant, unique to this drop.
        let merchant: String?
        let receiptDigest: String?
        let sidecarDigest: String?
        /// SHA-256 of the receipt's first half (what an early take of an in-place write would see).
        let receiptFirstHalfDigest: String?
        /// Milliseconds from the first file of a pair being in the spool to the second.
        var gapMilliseconds = 0.0
        /// Milliseconds from creating an in-place file to closing it (the longest of the drop).
        var writeMilliseconds = 0.0
    }

    private struct State: ~Copyable {
        var adds: [String: Add] = [:]
        var drops: [Drop] = []
        var problems: [String] = []
    }

    private let state = Mutex(State())

    /// Records an attempt of `add` (a new one or a retry under its client id).
    func attempt(_ add: Add) {
        state.withLock { state in
            var entry = state.adds[add.clientID] ?? add
            entry.attempts += 1
            state.adds[add.clientID] = entry
        }
    }

    func acknowledge(_ clientID: String) {
        state.withLock { $0.adds[clientID]?.acknowledged = true }
    }

    func record(_ drop: Drop) {
        state.withLock { $0.drops.append(drop) }
    }

    /// Something a writer saw that must not happen (a valid add refused, a wrong answer).
    func problem(_ text: String) {
        state.withLock { $0.problems.append(text) }
    }

    var adds: [Add] { state.withLock { Array($0.adds.values) } }
    var drops: [Drop] { state.withLock { $0.drops } }
    var problems: [String] { state.withLock { $0.problems } }
}
