import ExpenseTestSupport
import Foundation

/// scripts/browser-check.py in a process of its own, and the chromedriver
/// and Chromium it starts. The script stops them itself when it ends or
/// gets SIGTERM; ``stop()`` also stops them by the pids the script printed,
/// for a script that was killed before it could.
final class BrowserCheck {
    let process: ChildProcess

    init(base: String, work: String, facts: String) throws {
        let python = "\(BuiltProducts.packageRoot)/.build/venv/bin/python"
        process = try ChildProcess(python, ["\(BuiltProducts.packageRoot)/scripts/browser-check.py", base, work],
                                   outputDirectory: work, name: "browser-check", stdinPath: facts)
    }

    /// chromedriver's and Chromium's pids, from the script's `pids:` line;
    /// empty until it printed it.
    var printedPIDs: [Int32] {
        guard let line = process.standardOutput.split(separator: "\n").first(where: { $0.hasPrefix("pids: ") }) else { return [] }
        return line.split(separator: " ").dropFirst().compactMap { Int32($0.split(separator: "=").last ?? "") }
    }

    /// The printed pids and every live process under them (Chromium's
    /// zygotes and renderers).
    var browserPIDs: [Int32] {
        var found = printedPIDs.filter(Self.isLive)
        var index = 0
        while index < found.count {
            found += Self.children(of: found[index]).filter { !found.contains($0) }
            index += 1
        }
        return found
    }

    /// SIGTERM to the script (SIGKILL after 10 s), then SIGKILL to each of
    /// the browser's processes it left, by pid, if that pid still runs
    /// chromedriver or Chromium (and not a process that reused it).
    func stop() {
        let pids = browserPIDs
        process.stop()
        for pid in pids where Self.isLive(pid) && Self.isBrowser(pid) { kill(pid, SIGKILL) }
    }

    /// A process with this pid exists and is not a zombie.
    static func isLive(_ pid: Int32) -> Bool {
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
              let close = stat.range(of: ")", options: .backwards) else { return false }
        return stat[close.upperBound...].split(separator: " ").first != "Z"
    }

    static func isBrowser(_ pid: Int32) -> Bool {
        guard let command = FileManager.default.contents(atPath: "/proc/\(pid)/cmdline") else { return false }
        let program = String(decoding: command.prefix { $0 != 0 }, as: UTF8.self)
        return program.hasSuffix("/chromedriver") || program.contains("chromium")
    }

    /// The pids whose parent is `pid`, from /proc.
    static func children(of pid: Int32) -> [Int32] {
        let entries = (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []
        return entries.compactMap(Int32.init).filter { candidate in
            guard let stat = try? String(contentsOfFile: "/proc/\(candidate)/stat", encoding: .utf8),
                  let close = stat.range(of: ")", options: .backwards) else { return false }
            let fields = stat[close.upperBound...].split(separator: " ")
            return fields.count > 1 && Int32(fields[1]) == pid
        }
    }
}
