import Synchronization

/// The one copy of the ``MeteredHold``: written by the sync engine (the
/// link's state as the daemon hears it, and `sync --now`), read by whatever
/// reports it (the status publisher, the `status` op).
public final class MeteredRecord: Sendable {
    private let hold: Mutex<MeteredHold>
    /// Finished once whoever tells the link's state (the bus watch) first did.
    private let firstWord: AsyncStream<Void>
    private let heard: AsyncStream<Void>.Continuation
    private let expecting = Mutex(false)

    public init(mode: MeteredMode) {
        hold = Mutex(MeteredHold(mode: mode))
        (firstWord, heard) = AsyncStream.makeStream(of: Void.self)
    }

    /// The hold as it is now.
    public var current: MeteredHold { hold.withLock { $0 } }

    /// Something will tell the link's state soon (the bus watch started):
    /// the engine's first pass waits for that word, up to a bound, so that
    /// a start on a metered link sends nothing the link should hold.
    public func expectWord() {
        expecting.withLock { $0 = true }
    }

    /// The link's state was told (or cannot be: no bus).
    func markHeard() {
        heard.finish()
    }

    /// Returns once the expected word came, or after `milliseconds`; at
    /// once when none is expected.
    func waitForFirstWord(milliseconds: Int64) async {
        guard expecting.withLock({ $0 }) else { return }
        let stream = firstWord
        await withTaskGroup(of: Void.self) { group in
            group.addTask { for await _ in stream {} }
            group.addTask { try? await Task.sleep(for: .milliseconds(milliseconds)) }
            await group.next()
            group.cancelAll()
        }
    }

    /// Applies `change`.
    /// - Returns: the hold before and after.
    func update(_ change: (inout MeteredHold) -> Void) -> (before: MeteredHold, after: MeteredHold) {
        hold.withLock { hold in
            let before = hold
            change(&hold)
            return (before, hold)
        }
    }
}
