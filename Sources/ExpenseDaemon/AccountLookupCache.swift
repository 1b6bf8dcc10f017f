import Posix
import Synchronization

/// What earlier requests learnt of callers, so that the control socket's
/// thread need not ask the user database (`getpwuid_r(3)`, which a slow
/// name service can stall) nor look in `accounts_dir` for each request:
/// the account of each uid.
///
/// Everything is forgotten when `accounts_dir` changes (a file made,
/// removed or renamed there): an inotify watch read without waiting at
/// each look, so the next request after the change looks again. An entry
/// is also kept no longer than ``lifetimeNanoseconds`` (a user renamed or
/// removed in the user database changes nothing in `accounts_dir`). When
/// the watch cannot be made or is lost (the directory removed), nothing is
/// kept: every request looks, off the socket's thread.
final class AccountLookupCache<Value: Sendable>: Sendable {
    /// How long an answer is reused.
    static var lifetimeNanoseconds: UInt64 { 60_000_000_000 }

    private let inotify: Inotify?
    private let state: Mutex<State>

    private struct State {
        var uids: [UInt32: Entry] = [:]
        /// Counts the changes seen: a lookup that started before one may
        /// have seen the directory as it was, and is not kept.
        var generation = 0
        var watching: Bool
    }

    private struct Entry {
        let value: Value
        let at: UInt64
    }

    init(directory: String) {
        let inotify = try? Inotify()
        let watching = (try? inotify?.addWatch(directory, [.create, .delete, .movedTo, .movedFrom, .deleteSelf, .moveSelf, .onlyDirectory])) != nil
        self.inotify = inotify
        state = Mutex(State(watching: watching))
    }

    /// The generation to pass to ``remember(_:uid:generation:)``, taken
    /// before the lookup whose answer it is.
    func generation() -> Int {
        state.withLock { state in
            forgetIfChanged(&state)
            return state.generation
        }
    }

    /// The answer for `uid`, if one is known and fresh.
    func value(ofUID uid: UInt32) -> Value? {
        state.withLock { state in
            forgetIfChanged(&state)
            guard let entry = state.uids[uid], Clock.monotonicNanoseconds - entry.at < Self.lifetimeNanoseconds else { return nil }
            return entry.value
        }
    }

    func remember(_ value: Value, uid: UInt32, generation: Int) {
        state.withLock { state in
            forgetIfChanged(&state)
            guard state.watching, state.generation == generation else { return }
            state.uids[uid] = Entry(value: value, at: Clock.monotonicNanoseconds)
        }
    }

    /// Reads the watch's events (it never waits: the descriptor is
    /// non-blocking) and forgets everything after any.
    private func forgetIfChanged(_ state: inout State) {
        guard state.watching, let inotify else { return }
        let events: [Inotify.Event]
        do {
            events = try inotify.readEvents()
        } catch {
            state.watching = false
            events = []
        }
        guard !events.isEmpty || !state.watching else { return }
        if events.contains(where: { !$0.mask.isDisjoint(with: [.ignored, .deleteSelf, .moveSelf, .unmount]) }) { state.watching = false }
        state.uids = [:]
        state.generation += 1
    }
}
