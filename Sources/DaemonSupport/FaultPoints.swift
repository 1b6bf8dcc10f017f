import Posix
#if canImport(Glibc)
import Glibc
#endif
import Synchronization

/// Named places where a test can make the daemon crash (`SIGKILL` to
/// itself) or hang, to prove every crash window converges. Inert unless
/// `EXPENSED_FAULT` is set, e.g. `EXPENSED_FAULT=after-receipt-staged`,
/// `EXPENSED_FAULT=before-send:kill@3` (on the third hit),
/// `EXPENSED_FAULT=store-probe:hang`, `EXPENSED_FAULT=before-ready:sleep=3000`
/// (pause 3 s), or `EXPENSED_FAULT=spool-after-stage:hold` (wait until a
/// byte is written to the FIFO `EXPENSED_FAULT_RELEASE` names: a test
/// holds the daemon at the point while it acts, then lets it go on).
/// docs/testing.md lists the points.
public enum FaultPoints {
    enum Action: Equatable {
        case kill, hang, hold
        case sleep(milliseconds: UInt32)

        init?(_ text: Substring) {
            switch text {
            case "kill": self = .kill
            case "hang": self = .hang
            case "hold": self = .hold
            default:
                guard text.hasPrefix("sleep="), let ms = number(text.dropFirst(6), 0...600_000) else { return nil }
                self = .sleep(milliseconds: UInt32(ms))
            }
        }
    }
    struct Armed: Equatable {
        let action: Action
        let onHit: Int
    }

    static let parsed = parse(Environment["EXPENSED_FAULT"] ?? "")
    static let armed: [String: Armed] = (try? parsed.get()) ?? [:]
    static let hits = Mutex<[String: Int]>([:])

    /// Why `EXPENSED_FAULT` cannot be used, if it cannot: the daemon then
    /// refuses to start, rather than run with a fault other than the one
    /// asked for (a misspelt action once meant `kill`).
    public static var problem: String? {
        switch parsed {
        case .failure(let problem):
            return problem.message
        case .success(let armed):
            guard armed.values.contains(where: { $0.action == .hold }) else { return nil }
            var status = stat()
            guard let path = releasePath, !path.isEmpty, stat(path, &status) == 0, status.st_mode & S_IFMT == S_IFIFO else {
                return "':hold' needs EXPENSED_FAULT_RELEASE, the path of a FIFO (mkfifo) a byte is written to for the release"
            }
            return nil
        }
    }

    /// The FIFO a held point reads one byte from to go on.
    static let releasePath = Environment["EXPENSED_FAULT_RELEASE"]

    struct Problem: Error, Equatable {
        let message: String
    }

    /// Parses `point[:kill|hang|sleep=MS][@HIT],…`; HIT from 1 to 1000000, MS at most 600000.
    static func parse(_ text: String) -> Result<[String: Armed], Problem> {
        var result: [String: Armed] = [:]
        for spec in text.split(separator: ",") {
            var name = Substring(spec)
            var onHit = 1
            if let at = name.firstIndex(of: "@") {
                guard let n = number(name[name.index(after: at)...], 1...1_000_000) else {
                    return .failure(Problem(message: "'\(spec)': the hit after '@' must be a whole number from 1 to 1000000"))
                }
                onHit = n
                name = name[..<at]
            }
            var action = Action.kill
            if let colon = name.firstIndex(of: ":") {
                guard let parsed = Action(name[name.index(after: colon)...]) else {
                    return .failure(Problem(message: "'\(spec)': the action must be kill, hang, hold or sleep=MS (MS at most 600000)"))
                }
                action = parsed
                name = name[..<colon]
            }
            guard !name.isEmpty else { return .failure(Problem(message: "'\(spec)' names no fault point")) }
            result[String(name)] = Armed(action: action, onHit: onHit)
        }
        return .success(result)
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
        case .hold:
            StandardStreams.writeErrorLine("<4>fault point \(point): holding until released")
            // Released by one byte; a writer that closes without writing
            // releases nothing. A FIFO that cannot be opened is a test
            // gone wrong: the process dies rather than go on unheld.
            var byte: UInt8 = 0
            var released = false
            while !released {
                let fifo = open(releasePath ?? "", O_RDONLY | O_CLOEXEC)
                guard fifo >= 0 else {
                    if errno == EINTR { continue }
                    StandardStreams.writeErrorLine("<3>fault point \(point): cannot open EXPENSED_FAULT_RELEASE (errno \(errno)); killing the process")
                    Glibc.kill(getpid(), SIGKILL)
                    while true { pause() }
                }
                var n = 0
                repeat { n = read(fifo, &byte, 1) } while n < 0 && errno == EINTR
                released = n == 1
                close(fifo)
            }
            StandardStreams.writeErrorLine("<4>fault point \(point): released")
        case .sleep(let milliseconds):
            StandardStreams.writeErrorLine("<4>fault point \(point): pausing \(milliseconds) ms")
            usleep(milliseconds * 1000)
        }
    }
}

/// Digits only, within `range`.
private func number(_ text: Substring, _ range: ClosedRange<Int>) -> Int? {
    guard !text.isEmpty, text.count <= 9, text.allSatisfy({ $0 >= "0" && $0 <= "9" }), let n = Int(text), range.contains(n) else { return nil }
    return n
}
