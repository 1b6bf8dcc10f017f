import Foundation

/// The power-loss model of LazyFS and ALICE, replayed over a syscall trace:
/// when the power goes, every write not yet fsynced is lost, and so is
/// every directory entry (a file created, renamed in or out, removed; a
/// directory made) whose directory was not fsynced since. ``losses(at:dependingOn:)``
/// answers, for an acknowledgement, what it depends on that a power cut at
/// that moment would take away.
///
/// An `fsync` or `fdatasync` counts once it returned, and covers the writes
/// to its file (or the entries of its directory) that returned before it
/// was called; a write counts from the moment it was called. Paths that
/// existed before the trace began are taken as durable; a directory made
/// during the trace must itself be durable in its parent, up to one that
/// existed before.
public struct PowerLossModel: Sendable {
    private let calls: [TracedCall]
    private let existedBefore: Set<String>
    private let workingDirectory: String

    /// - Parameters:
    ///   - calls: the trace, as ``SyscallTrace/parse(_:)`` gives it.
    ///   - existedBefore: every path that existed before the traced program started.
    ///   - workingDirectory: the traced program's, for relative paths.
    public init(_ calls: [TracedCall], existedBefore: Set<String>, workingDirectory: String) {
        self.calls = calls
        self.existedBefore = existedBefore
        self.workingDirectory = workingDirectory
    }

    /// What a power cut just before `acknowledgement` entered would lose of
    /// `paths` (files whose bytes, and whose names, it depends on), one
    /// sentence each; empty when all of it would survive.
    public func losses(at acknowledgement: TracedCall, dependingOn paths: [String]) -> [String] {
        var state = State(existing: existedBefore)
        for event in events() where event.line < acknowledgement.entryLine { state.apply(event) }
        var seen: Set<String> = []
        return paths.flatMap { state.losses(of: $0) }.filter { seen.insert($0).inserted }
    }

    /// Calls that reply on a socket with `needle` in the bytes written.
    public func replies(containing needle: String) -> [TracedCall] {
        calls.filter { call in
            ["write", "writev", "sendmsg", "sendto"].contains(call.name) && call.succeeded
                && (call.argumentList.first?.contains("<socket:") ?? false) && call.arguments.contains(needle)
        }
    }

    /// Calls that took `path` away from its name: a rename from it or its removal.
    public func removals(of path: String) -> [TracedCall] {
        calls.filter { call in
            guard call.succeeded else { return false }
            switch event(for: call)?.kind {
            case .rename(let from, _)?: return from == path
            case .remove(let removed)?: return removed == path
            default: return false
            }
        }
    }

    /// Every successful data write to a path (its name at the time) that `matches`.
    public func writes(where matches: (String) -> Bool) -> [TracedCall] {
        calls.filter { call in
            guard case .write(let path)? = event(for: call)?.kind else { return false }
            return matches(path)
        }
    }

    // MARK: Events

    enum Kind: Equatable {
        case write(String)
        /// An fsync or fdatasync of `path`; `called` is its entry line.
        case sync(String, called: Int)
        case create(String)
        case rename(String, String)
        case remove(String)
    }

    struct Event {
        let line: Int
        let kind: Kind
        let call: TracedCall
    }

    private func events() -> [Event] {
        calls.compactMap(event(for:)).sorted { $0.line < $1.line }
    }

    /// What `call` does in the model, at the line where it takes effect.
    private func event(for call: TracedCall) -> Event? {
        guard call.succeeded else { return nil }
        func at(_ kind: Kind, entry: Bool = false) -> Event { Event(line: entry ? call.entryLine : call.exitLine, kind: kind, call: call) }
        switch call.name {
        case "write", "pwrite64", "writev", "pwritev", "pwritev2", "sendfile", "ftruncate", "fallocate":
            return call.descriptorPath(0).map { at(.write($0), entry: true) }
        case "copy_file_range":
            return call.descriptorPath(2).map { at(.write($0), entry: true) }
        case "fsync", "fdatasync":
            return call.descriptorPath(0).map { at(.sync($0, called: call.entryLine)) }
        case "openat", "open", "creat":
            let flags = call.argumentList.count > 2 ? call.argumentList[2] : call.argumentList.dropFirst().first ?? ""
            guard call.name == "creat" || flags.contains("O_CREAT"), let path = call.resultPath else { return nil }
            return at(.create(path))
        case "mkdir":
            return path(call, directory: nil, name: 0).map { at(.create($0)) }
        case "mkdirat":
            return path(call, directory: 0, name: 1).map { at(.create($0)) }
        case "rename":
            guard let from = path(call, directory: nil, name: 0), let to = path(call, directory: nil, name: 1) else { return nil }
            return at(.rename(from, to))
        case "renameat", "renameat2":
            guard let from = path(call, directory: 0, name: 1), let to = path(call, directory: 2, name: 3) else { return nil }
            return at(.rename(from, to))
        case "unlink":
            return path(call, directory: nil, name: 0).map { at(.remove($0)) }
        case "unlinkat":
            return path(call, directory: 0, name: 1).map { at(.remove($0)) }
        default:
            return nil
        }
    }

    /// The absolute path a call names: its string argument `name`, relative
    /// to the directory descriptor at `directory` (or the working directory).
    private func path(_ call: TracedCall, directory: Int?, name: Int) -> String? {
        guard let relative = call.stringArgument(name) else { return nil }
        if relative.hasPrefix("/") { return Self.normalize(relative) }
        let base = directory.flatMap { call.descriptorPath($0) } ?? workingDirectory
        return Self.normalize("\(base)/\(relative)")
    }

    /// `path` with `.`, `..` and repeated slashes resolved (no links followed).
    public static func normalize(_ path: String) -> String {
        var parts: [Substring] = []
        for part in path.split(separator: "/") where part != "." {
            if part == ".." { _ = parts.popLast() } else { parts.append(part) }
        }
        return "/" + parts.joined(separator: "/")
    }

    public static func parent(_ path: String) -> String { normalize(path + "/..") }
    static func name(_ path: String) -> String { String(path.split(separator: "/").last ?? "") }

    // MARK: Replay

    private struct State {
        var existing: Set<String>
        /// Paths created during the trace (their names must become durable).
        var created: Set<String> = []
        /// Per path: writes that no sync covers yet.
        var unsyncedWrites: [String: [TracedCall]] = [:]
        /// Per directory: names changed, and by which call, that no sync of it covers yet.
        var unsyncedEntries: [String: [String: TracedCall]] = [:]

        mutating func apply(_ event: Event) {
            switch event.kind {
            case .write(let path):
                unsyncedWrites[path, default: []].append(event.call)
            case .sync(let path, let called):
                unsyncedWrites[path]?.removeAll { $0.exitLine < called }
                unsyncedEntries[path] = unsyncedEntries[path]?.filter { $0.value.exitLine >= called }
            case .create(let path):
                // O_CREAT on a file that is already there changes no directory.
                guard !existing.contains(path) else { return }
                existing.insert(path)
                created.insert(path)
                changedEntry(path, by: event.call)
            case .rename(let from, let to):
                existing.remove(from)
                existing.insert(to)
                if created.remove(from) != nil { created.insert(to) }
                if let writes = unsyncedWrites.removeValue(forKey: from) { unsyncedWrites[to, default: []] += writes }
                changedEntry(from, by: event.call)
                changedEntry(to, by: event.call)
            case .remove(let path):
                existing.remove(path)
                created.remove(path)
                unsyncedWrites[path] = nil
                changedEntry(path, by: event.call)
            }
        }

        mutating func changedEntry(_ path: String, by call: TracedCall) {
            unsyncedEntries[PowerLossModel.parent(path), default: [:]][PowerLossModel.name(path)] = call
        }

        /// Why `path` would not survive, if it would not: writes not synced,
        /// its name not durable, or the name of a directory made above it.
        func losses(of path: String) -> [String] {
            guard existing.contains(path) else { return ["'\(path)' does not exist"] }
            var found: [String] = []
            if let writes = unsyncedWrites[path], let last = writes.last {
                found.append("'\(path)' has \(writes.count) write(s) not fsynced (the last \(last.name) at line \(last.entryLine), \(last.entryTime), thread \(last.thread))")
            }
            var current = path
            repeat {
                let directory = PowerLossModel.parent(current)
                if let change = unsyncedEntries[directory]?[PowerLossModel.name(current)] {
                    found.append("the name '\(PowerLossModel.name(current))' in '\(directory)' is not durable: \(change.name) at line \(change.exitLine) (\(change.exitTime)) was not followed by an fsync of '\(directory)'")
                }
                current = directory
            } while created.contains(current)
            return found
        }
    }
}
