import ExpenseCore
import Posix

/// Decides which spool files are taken together, and when. A receipt
/// waits up to the settle time for a sidecar with its stem, and a sidecar
/// for its receipt; once both are there they are taken at once. Files of
/// any other kind are taken (to be rejected) at once.
///
/// A pure state machine: the watcher thread feeds it arrivals and the
/// clock, and hands out what it returns. A name being taken is *busy*: an
/// arrival for it (a new file dropped under the same name meanwhile) waits
/// until that take has finished, so one file is never taken twice at once.
/// So does a sidecar whose stem's receipt is being taken: once that take
/// has committed, the sidecar is a late one, an edit of the receipt's
/// expense; taken beside it, it would find no receipt taken and become an
/// expense of its own.
struct SpoolSchedule {
    /// What a spool file is, by its extension.
    enum Role: Equatable {
        case receipt, sidecar, other
    }

    /// Files to take in one go.
    enum Take: Equatable, Sendable {
        /// A receipt, its sidecar, or both: one expense.
        case expense(receipt: FileName?, sidecar: FileName?)
        /// A file that can only be rejected.
        case other(FileName)

        var names: [FileName] {
            switch self {
            case .expense(let receipt, let sidecar): [receipt, sidecar].compactMap { $0 }
            case .other(let name): [name]
            }
        }
    }

    static func role(of name: FileName) -> Role {
        guard let ext = name.lowercasedExtension else { return .other }
        if ReceiptKind(fileExtension: ext) != nil { return .receipt }
        return ext == "json" ? .sidecar : .other
    }

    let settleMilliseconds: Int64

    private struct Waiting {
        let name: FileName
        let due: Int64
    }

    /// The files waiting for a partner, by stem.
    private struct Group {
        var receipts: [Waiting] = []
        var sidecars: [Waiting] = []
        var isEmpty: Bool { receipts.isEmpty && sidecars.isEmpty }
    }

    private var groups: [[UInt8]: Group] = [:]
    /// Files of another kind waiting to be tried again.
    private var others: [Waiting] = []
    private var busy: Set<FileName> = []
    /// Names that arrived while busy, with the delay they arrived with
    /// (nil: the usual one), to arrive again once released.
    private var deferred: [FileName: Int64?] = [:]

    init(settleMilliseconds: Int64) {
        self.settleMilliseconds = settleMilliseconds
    }

    /// True when nothing waits and nothing is being taken.
    var isIdle: Bool { groups.isEmpty && others.isEmpty && busy.isEmpty }

    /// How many files wait for their time or their partner.
    var waitingCount: Int { groups.values.reduce(others.count) { $0 + $1.receipts.count + $1.sidecars.count } }

    /// True when `name` waits for its time or its partner.
    func isWaiting(_ name: FileName) -> Bool {
        guard let group = groups[name.stem] else { return false }
        return group.receipts.contains { $0.name == name } || group.sidecars.contains { $0.name == name }
    }

    /// True when `name` waits, is being taken, or arrived while it was:
    /// a periodic scan that finds it has nothing to add (its arrival would
    /// only make it wait anew, or be taken again after it is gone).
    func isKnown(_ name: FileName) -> Bool {
        busy.contains(name) || deferred.keys.contains(name) || isWaiting(name) || others.contains { $0.name == name }
    }

    /// When the earliest waiting file is due, if any waits.
    var nextDue: Int64? {
        (groups.values.flatMap { $0.receipts.map(\.due) + $0.sidecars.map(\.due) } + others.map(\.due)).min()
    }

    /// `name` was closed after writing, renamed in, or found by a scan.
    /// - Parameter delay: how long to wait before taking it: for a lone
    ///   receipt or sidecar the settle time unless given; for a file of
    ///   another kind none unless given (a retry delay).
    /// - Parameter settle: how long a lone receipt or sidecar waits for its
    ///   partner, when not the settle time: a file a periodic scan found
    ///   waits until the next scan could have found its partner. Unlike a
    ///   `delay`, a partner already there is taken with it at once.
    /// - Returns: what to take now.
    mutating func arrived(_ name: FileName, now: Int64, delay: Int64? = nil, settle: Int64? = nil) -> [Take] {
        if busy.contains(name) {
            let earlier = deferred[name] ?? nil
            deferred[name] = [earlier, delay].compactMap { $0 }.max()
            return []
        }
        let role = Self.role(of: name)
        if role == .sidecar, receiptBeingTaken(stem: name.stem) != nil {
            let earlier = deferred[name] ?? nil
            deferred[name] = [earlier, delay].compactMap { $0 }.max()
            return []
        }
        if role == .other {
            if let delay {
                if !others.contains(where: { $0.name == name }) { others.append(Waiting(name: name, due: now + delay)) }
                return []
            }
            others.removeAll { $0.name == name }
            busy.insert(name)
            return [.other(name)]
        }
        let wait = delay ?? settle ?? settleMilliseconds
        let stem = name.stem
        var group = groups[stem] ?? Group()
        let entry = Waiting(name: name, due: now + wait)
        // A waiting file written again (a scanner appending page after
        // page, closing it each time) keeps its place among its stem's
        // files but waits anew: it is taken once left alone that long.
        switch role {
        case .receipt:
            if let index = group.receipts.firstIndex(where: { $0.name == name }) { group.receipts[index] = entry } else { group.receipts.append(entry) }
        case .sidecar:
            if let index = group.sidecars.firstIndex(where: { $0.name == name }) { group.sidecars[index] = entry } else { group.sidecars.append(entry) }
        case .other:
            break
        }
        var takes: [Take] = []
        // A file tried again after a delay (its take failed) waits that
        // long even when its partner is there: a pair whose take fails
        // again at once would be taken over and over.
        while delay == nil && !group.receipts.isEmpty && !group.sidecars.isEmpty {
            takes.append(takePair(&group))
        }
        groups[stem] = group.isEmpty ? nil : group
        return takes
    }

    /// The receipt with this stem that is being taken, if one is.
    private func receiptBeingTaken(stem: [UInt8]) -> FileName? {
        busy.first { $0.stem == stem && Self.role(of: $0) == .receipt }
    }

    /// The receipt `name`, a sidecar, waits for: it is being taken, and
    /// the sidecar arrives again once that take has finished.
    func receiptHolding(_ name: FileName) -> FileName? {
        guard Self.role(of: name) == .sidecar, deferred[name] != nil, !busy.contains(name) else { return nil }
        return receiptBeingTaken(stem: name.stem)
    }

    /// Takes the first receipt and the first sidecar of `group` together.
    private mutating func takePair(_ group: inout Group) -> Take {
        let receipt = group.receipts.removeFirst().name, sidecar = group.sidecars.removeFirst().name
        busy.insert(receipt)
        busy.insert(sidecar)
        return .expense(receipt: receipt, sidecar: sidecar)
    }

    /// Takes every file whose wait is over, earliest first: with its
    /// partner when it has one (a pair tried again waits as a pair), else alone.
    mutating func takeDue(now: Int64) -> [Take] {
        var due: [(Int64, Take)] = []
        for (stem, var group) in groups {
            while let receipt = group.receipts.first, let sidecar = group.sidecars.first, min(receipt.due, sidecar.due) <= now {
                due.append((min(receipt.due, sidecar.due), takePair(&group)))
            }
            for entry in group.receipts where entry.due <= now {
                due.append((entry.due, .expense(receipt: entry.name, sidecar: nil)))
                busy.insert(entry.name)
            }
            for entry in group.sidecars where entry.due <= now {
                due.append((entry.due, .expense(receipt: nil, sidecar: entry.name)))
                busy.insert(entry.name)
            }
            group.receipts.removeAll { $0.due <= now }
            group.sidecars.removeAll { $0.due <= now }
            groups[stem] = group.isEmpty ? nil : group
        }
        for entry in others where entry.due <= now {
            due.append((entry.due, .other(entry.name)))
            busy.insert(entry.name)
        }
        others.removeAll { $0.due <= now }
        return due.sorted { ($0.0, $0.1.names.first!) < ($1.0, $1.1.names.first!) }.map(\.1)
    }

    /// Brings forward to `due` the time of the waiting files among `names`
    /// (files left in the spool for room, when room may have freed); a
    /// file due sooner, or not waiting (being taken, gone), is left alone.
    mutating func hurry(_ names: Set<FileName>, due: Int64) {
        func sooner(_ entries: inout [Waiting]) {
            for index in entries.indices where names.contains(entries[index].name) && entries[index].due > due {
                entries[index] = Waiting(name: entries[index].name, due: due)
            }
        }
        for stem in groups.keys {
            sooner(&groups[stem]!.receipts)
            sooner(&groups[stem]!.sidecars)
        }
        sooner(&others)
    }

    /// `take` is done (its files were queued, rejected, or left in place):
    /// its names are free again, and any that arrived meanwhile arrive now.
    /// - Parameter retryAfter: when the take failed and its files are to
    ///   be tried again after this many milliseconds.
    mutating func finished(_ take: Take, now: Int64, retryAfter: Int64? = nil) -> [Take] {
        var takes: [Take] = []
        for name in take.names {
            busy.remove(name)
            let again = deferred.removeValue(forKey: name)
            if let retryAfter {
                takes += arrived(name, now: now, delay: max(retryAfter, (again ?? nil) ?? 0))
            } else if let again {
                takes += arrived(name, now: now, delay: again)
            }
        }
        // Sidecars that waited for this take's receipt: after a take tried
        // again later, they wait as long, to be taken with it as a pair.
        for stem in Set(take.names.filter { Self.role(of: $0) == .receipt }.map(\.stem)) where receiptBeingTaken(stem: stem) == nil {
            let waiting = deferred.keys.filter { $0.stem == stem && Self.role(of: $0) == .sidecar && !busy.contains($0) }
            for sidecar in waiting.sorted() {
                let again = deferred.removeValue(forKey: sidecar) ?? nil
                takes += arrived(sidecar, now: now, delay: retryAfter.map { max($0, again ?? 0) } ?? again)
            }
        }
        return takes
    }
}
