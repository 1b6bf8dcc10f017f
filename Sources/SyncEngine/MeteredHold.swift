import ExpenseCore

/// What a metered link holds back, as `metered` in the configuration says
/// (docs/sync.md, "Metered links").
public enum MeteredMode: String, Sendable, CaseIterable {
    /// Receipt uploads wait; creates, edits and deletes (small) still go.
    case pauseReceipts = "pause-receipts"
    /// Nothing is sent or fetched.
    case pause
    /// A metered link changes nothing.
    case ignore
}

/// NetworkManager's `Metered` property of the whole machine (its `NMMetered`
/// values, from NetworkManager's D-Bus API documentation).
public enum NetworkMetered: UInt32, Sendable, CaseIterable {
    case unknown = 0
    case yes = 1
    case no = 2
    /// Metered, by NetworkManager's heuristics (a phone's hotspot, say).
    case guessYes = 3
    case guessNo = 4

    /// A value from the bus; one this code does not know counts as unknown.
    public init(networkManagerValue value: UInt32) {
        self = NetworkMetered(rawValue: value) ?? .unknown
    }

    /// Yes and "guess yes" count as metered, as NetworkManager's
    /// documentation advises; unknown and the two noes do not.
    public var isMetered: Bool { self == .yes || self == .guessYes }

    /// As logs and `status` name it: `yes`, `guess-yes`, …
    public var name: String {
        switch self {
        case .unknown: "unknown"
        case .yes: "yes"
        case .no: "no"
        case .guessYes: "guess-yes"
        case .guessNo: "guess-no"
        }
    }
}

/// Which jobs wait because the link is metered: the link's state, the
/// mode, and whether `sync --now` lifts the hold for the pass at hand. A
/// value; ``MeteredRecord`` holds the one copy. A job held is not a
/// failure: it counts no attempt and gets no backoff, it is only not
/// claimed.
public struct MeteredHold: Sendable, Equatable {
    public var mode: MeteredMode
    /// What NetworkManager says; nil when nobody says (no NetworkManager on
    /// the bus, or no bus): not metered.
    public var link: NetworkMetered?
    /// `sync --now` asked for a pass that sends everything, and it has not
    /// ended yet.
    public var overridden = false

    public init(mode: MeteredMode, link: NetworkMetered? = nil, overridden: Bool = false) {
        self.mode = mode
        self.link = link
        self.overridden = overridden
    }

    public var isMetered: Bool { link?.isMetered ?? false }

    /// Whether a job of `kind` waits now.
    public func holds(_ kind: JobKind) -> Bool {
        guard isMetered, !overridden else { return false }
        switch mode {
        case .ignore: return false
        case .pause: return true
        case .pauseReceipts: return kind == .receipt
        }
    }

    /// The kinds of job that wait now (none, the receipts, or every kind).
    public var heldKinds: Set<JobKind> { Set(JobKind.allCases.filter(holds)) }

    /// Every kind of job waits (`pause`).
    public var holdsEverything: Bool { heldKinds.count == JobKind.allCases.count }

    /// Whether the refresh (`GET /v1/expenses?since=`) waits too: only when
    /// everything does.
    public var holdsRefresh: Bool { holdsEverything }

    /// The same with the hold lifted or not.
    public func overridden(_ value: Bool) -> MeteredHold {
        var hold = self
        hold.overridden = value
        return hold
    }

    /// What waits, for `status` and the log: "receipt uploads paused
    /// (metered = pause-receipts)"; nil when nothing does.
    public var explanation: String? {
        let held = heldKinds
        guard !held.isEmpty else { return nil }
        return "\(held == [.receipt] ? "receipt uploads" : "all sending") paused (metered = \(mode.rawValue))"
    }
}
