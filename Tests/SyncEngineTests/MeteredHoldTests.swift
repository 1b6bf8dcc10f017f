import ExpenseCore
import SyncEngine
import Testing

/// What a metered link holds, as a value: NetworkManager's word × the
/// `metered` mode × the kind of job → sent or held; `sync --now` lifts it.
@Suite struct MeteredHoldTests {
    /// NetworkManager's `Metered` (nil: no NetworkManager) and the mode →
    /// the kinds held. Yes and guess-yes are metered; unknown, the noes and
    /// no NetworkManager are not.
    static let table: [(link: NetworkMetered?, mode: MeteredMode, held: Set<JobKind>)] = [
        (nil, .pauseReceipts, []), (nil, .pause, []), (nil, .ignore, []),
        (.unknown, .pauseReceipts, []), (.unknown, .pause, []), (.unknown, .ignore, []),
        (.yes, .pauseReceipts, [.receipt]), (.yes, .pause, [.create, .receipt, .edit, .delete]), (.yes, .ignore, []),
        (.no, .pauseReceipts, []), (.no, .pause, []), (.no, .ignore, []),
        (.guessYes, .pauseReceipts, [.receipt]), (.guessYes, .pause, [.create, .receipt, .edit, .delete]), (.guessYes, .ignore, []),
        (.guessNo, .pauseReceipts, []), (.guessNo, .pause, []), (.guessNo, .ignore, []),
    ]

    @Test func everyLinkModeAndKind_isSentOrHeldAsTheTableSays() {
        #expect(Self.table.count == (NetworkMetered.allCases.count + 1) * MeteredMode.allCases.count, "every case once")
        for row in Self.table {
            let hold = MeteredHold(mode: row.mode, link: row.link)
            for kind in JobKind.allCases {
                #expect(hold.holds(kind) == row.held.contains(kind), "\(String(describing: row.link)) × \(row.mode) × \(kind)")
                #expect(!hold.overridden(true).holds(kind), "sync --now sends \(kind) whatever the link")
            }
            #expect(hold.heldKinds == row.held)
            #expect(hold.holdsRefresh == (row.held.count == JobKind.allCases.count), "only pause holds the refresh")
            #expect(hold.overridden(true).heldKinds.isEmpty && !hold.overridden(true).holdsRefresh)
            #expect(hold.isMetered == (row.link == .yes || row.link == .guessYes))
            #expect((hold.explanation == nil) == row.held.isEmpty)
        }
    }

    @Test func networkManagersValues_andOnesItMayAddLater() {
        #expect(NetworkMetered.allCases.map { NetworkMetered(networkManagerValue: $0.rawValue) } == NetworkMetered.allCases)
        #expect(NetworkMetered.allCases.map(\.rawValue) == [0, 1, 2, 3, 4], "NMMetered, in NetworkManager's D-Bus API")
        #expect(NetworkMetered(networkManagerValue: 5) == .unknown && !NetworkMetered(networkManagerValue: .max).isMetered)
        #expect(NetworkMetered.allCases.map(\.name) == ["unknown", "yes", "no", "guess-yes", "guess-no"])
    }

    @Test func theExplanation_namesWhatWaitsAndTheSetting() {
        #expect(MeteredHold(mode: .pauseReceipts, link: .yes).explanation == "receipt uploads paused (metered = pause-receipts)")
        #expect(MeteredHold(mode: .pause, link: .guessYes).explanation == "all sending paused (metered = pause)")
        #expect(MeteredHold(mode: .ignore, link: .yes).explanation == nil)
        #expect(MeteredHold(mode: .pause, link: .yes, overridden: true).explanation == nil)
    }
}
