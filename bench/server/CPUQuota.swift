import Foundation

/// `--server-cpu FRACTION`: each server process gets a CPU budget of its
/// own (a cgroup v1 `cpu` group with a CFS quota of FRACTION of one core),
/// standing for a machine of its own. On two shared cores every process
/// count gives the same creates/s, because the servers, PostgreSQL and the
/// load generator all share them; with each server held to a small budget,
/// the servers are the bottleneck, and the rows show what adding processes
/// gains until PostgreSQL (or the cores left to it) bounds the rate.
final class CPUQuota {
    static let hierarchy = "/sys/fs/cgroup/cpu"
    let fraction: Double
    private var groups: [String] = []

    init(fraction: Double) throws {
        guard fraction > 0, fraction <= Double(ProcessInfo.processInfo.activeProcessorCount) else {
            throw QuotaError("--server-cpu must be a fraction of a core above 0 and at most the number of cores, not \(fraction)")
        }
        guard FileManager.default.isWritableFile(atPath: Self.hierarchy) else {
            throw QuotaError("--server-cpu needs the cgroup v1 cpu hierarchy writable at \(Self.hierarchy) (run as root)")
        }
        self.fraction = fraction
    }

    /// Moves the process (all its threads: `cgroup.procs`) into a group of
    /// its own with the budget.
    func confine(_ pid: Int32) throws {
        let group = "\(Self.hierarchy)/bench-server-\(getpid())-\(groups.count)"
        try FileManager.default.createDirectory(atPath: group, withIntermediateDirectories: false)
        groups.append(group)
        let period = 100_000
        try write("\(period)", to: "\(group)/cpu.cfs_period_us")
        try write("\(Int((fraction * Double(period)).rounded()))", to: "\(group)/cpu.cfs_quota_us")
        try write("\(pid)", to: "\(group)/cgroup.procs")
    }

    /// Moves what is left in the groups back to the root and removes them.
    func release() {
        for group in groups {
            let members = (try? String(contentsOfFile: "\(group)/cgroup.procs", encoding: .utf8)) ?? ""
            for pid in members.split(separator: "\n") { try? write(String(pid), to: "\(Self.hierarchy)/cgroup.procs") }
            if rmdir(group) != 0 { print("bench-server: could not remove \(group): \(String(cString: strerror(errno)))") }
        }
        groups.removeAll()
    }

    private func write(_ value: String, to path: String) throws {
        do { try value.write(toFile: path, atomically: false, encoding: .utf8) } catch {
            throw QuotaError("could not write \(value) to \(path): \(error)")
        }
    }
}

struct QuotaError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
