import Posix
#if canImport(Glibc)
import Glibc
#endif
import Synchronization

/// Named places where a test can make the daemon crash (`SIGKILL` to
/// itself) or hang, to prove every crash window converges. Inert unless
/// `EXPENSED_FAULT` is set, e.g. `EXPENSED_FAULT=after-receipt-staged`,
/// `EXPENSED_FAULT=before-send:kill@3` (on the third hit),
/// `EXPENSED_FAULT=store-probe:hang`, or `EXPENSED_FAULT=before-ready:sleep=3000`
/// (pause 3 s). docs/testing.md lists the points.
public enum FaultPoints {
    enum Action: Equatable {
        case kill, hang
        case sleep(milliseconds: UInt32)

        init?(_ text: Substring) {
            switch text {
            case "kill": self = .kill
            case "hang": self = .hang
            default:
                guard text.hasPrefix("sleep="), let ms = UInt32(text.dropFirst(6)) else { return nil }
                self = .sleep(milliseconds: ms)
            }
        }
    }
    struct Armed {
        let action: Action
        let onHit: Int
    }

    static let armed: [String: Armed] = parse(Environment["EXPENSED_FAULT"] ?? "")
    static let hits = Mutex<[String: Int]>([:])

    static func parse(_ text: String) -> [String: Armed] {
        var result: [String: Armed] = [:]
        for spec in text.split(separator: ",") {
            var name = Substring(spec)
            var onHit = 1
            if let at = name.firstIndex(of: "@") {
                onHit = Int(name[name.index(after: at)...]) ?? 1
                name = name[..<at]
            }
            var action = Action.kill
            if let colon = name.firstIndex(of: ":") {
                action = Action(name[name.index(after: colon)...]) ?? .kill
                name = name[..<colon]
            }
            result[String(name)] = Armed(action: action, onHit: onHit)
        }
        return result
    }

    /// Marks that execution reached `point`; crashes or hangs here when armed.
    public static func hit(_ point: String) {
        guard !armed.isEmpty, let fault = armed[point] else { return }
        let count = hits.withLock { counts -> Int in
            counts[point, default: 0] += 1
            return counts[point]!
        }
        guard count == fault.onHit else { return }
        switch fault.action {
        case .kill:
            StandardStreams.writeErrorLine("<3>fault point \(point): killing the process")
            Glibc.kill(getpid(), SIGKILL)
            // SIGKILL cannot be caught; wait for it to land.
            while true { pause() }
        case .hang:
            StandardStreams.writeErrorLine("<3>fault point \(point): hanging this thread")
            while true { pause() }
        case .sleep(let milliseconds):
            StandardStreams.writeErrorLine("<4>fault point \(point): pausing \(milliseconds) ms")
            usleep(milliseconds * 1000)
        }
    }
}
