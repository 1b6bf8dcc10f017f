import Foundation
import Posix
import TestProcess

/// Where `swift build` put the package's executables.
public enum BuiltProducts {
    /// The package root, found from this file's location.
    public static let packageRoot: String = {
        var url = URL(fileURLWithPath: #filePath)
        for _ in 0..<3 { url.deleteLastPathComponent() }
        return url.path
    }()

    /// The directory holding the product executables (`expensed`,
    /// `expensed-decode`, `expensectl`, `expense-server`):
    /// `$EXPENSED_BIN_DIR` (scripts/test sets the static release build's
    /// there, the binaries the packages ship), or ``buildDirectory``.
    public static let directory: String =
        ProcessInfo.processInfo.environment["EXPENSED_BIN_DIR"] ?? buildDirectory

    /// The directory of the running test bundle, which `swift build
    /// --build-tests` fills beside it with every executable of the package,
    /// the benchmark programs among them.
    public static let buildDirectory: String = {
        let executable = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath()
        var dir = executable.deletingLastPathComponent()
        // xctest bundles live in <bin>/<Package>PackageTests.xctest/...; walk up to the folder that has expensed.
        for _ in 0..<4 {
            if FileManager.default.isExecutableFile(atPath: dir.appendingPathComponent("expensed").path) { return dir.path }
            dir.deleteLastPathComponent()
        }
        return "\(packageRoot)/.build/debug"
    }()

    public static func path(_ name: String) -> String { "\(directory)/\(name)" }

    /// A benchmark program (`bench-daemon`, …): the debug build's, which
    /// a release build of the products does not make.
    public static func benchmark(_ name: String) -> String { "\(buildDirectory)/\(name)" }
}

/// A child process started from a built executable, with its output going
/// to files (a pipe that fills up would block it). Stopped by pid.
///
/// Started with the Posix module's `Subprocess` (`posix_spawn(3)`), not
/// Foundation's `Process`: on Swift 6.3.1 `Process.run()` over-reads a
/// `dirent` while it lists `/proc/self/fd`, and crashed the test process
/// (SIGSEGV in `memcpy`) when tests started commands in parallel.
public final class ChildProcess: Sendable {
    public let subprocess: Subprocess
    public let stdoutPath: String
    public let stderrPath: String
    public let name: String

    /// Starts `executable` with `arguments`; `environment` adds to (and
    /// overrides) the test's own environment, less the variables through
    /// which systemd would talk to a service (a test may itself run under
    /// systemd). Standard input is `stdinPath`, or `/dev/null`.
    public init(_ executable: String, _ arguments: [String], environment: [String: String] = [:],
                outputDirectory: String, name: String? = nil, stdinPath: String? = nil) throws {
        self.name = name ?? URL(fileURLWithPath: executable).lastPathComponent
        let stamp = UUID().uuidString.prefix(8)
        stdoutPath = "\(outputDirectory)/\(self.name)-\(stamp).out"
        stderrPath = "\(outputDirectory)/\(self.name)-\(stamp).err"
        let output = try FileDescriptor.open(stdoutPath, [.writeOnly, .create, .truncate], mode: 0o644)
        let errors = try FileDescriptor.open(stderrPath, [.writeOnly, .create, .truncate], mode: 0o644)
        let input: Subprocess.Redirection = try stdinPath.map { .descriptor(try FileDescriptor.open($0, [.readOnly])) } ?? .nullDevice
        var env = ProcessInfo.processInfo.environment
        for name in ["NOTIFY_SOCKET", "JOURNAL_STREAM", "LISTEN_FDS", "LISTEN_PID", "WATCHDOG_USEC", "CREDENTIALS_DIRECTORY"] { env.removeValue(forKey: name) }
        for (k, v) in environment { env[k] = v }
        subprocess = try Subprocess(executable, arguments: arguments, environment: env, standardInput: input,
                                    standardOutput: .descriptor(output), standardError: .descriptor(errors))
    }

    public var pid: Int32 { subprocess.pid }
    public var isRunning: Bool { subprocess.isRunning }
    /// How it ended, or `nil` while it runs.
    public var termination: Termination? { subprocess.termination }

    /// Sends `signal` to this process only (never once it has been reaped).
    public func signal(_ signal: Int32) {
        subprocess.signal(signal)
    }

    /// `SIGSTOP`, and back once every thread of the process is stopped. The
    /// kernel wakes one thread to take the signal and stops the others only
    /// when that one runs: until then, under load, a thread that was
    /// waiting (for inotify events, a socket, a timer) runs on and does its
    /// work, so a test that needs the process still must wait for this.
    public func freeze() throws {
        signal(SIGSTOP)
        try waitUntil("\(name) (pid \(pid)) to be stopped, every thread") {
            guard isRunning else { throw TestFailure("\(name) exited while being stopped: \(standardError.suffix(2000))") }
            let states = try threadStates()
            return !states.isEmpty && states.allSatisfy { $0 == "T" }
        }
    }

    /// `SIGCONT`: the process frozen by `freeze()` goes on.
    public func thaw() {
        signal(SIGCONT)
    }

    /// The state letter of each thread (`/proc/PID/task/*/stat`: R, S, D, T…).
    func threadStates() throws -> [Character] {
        try FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task").compactMap { task in
            // A thread that ended between the listing and the read is no thread.
            guard let stat = try? String(contentsOfFile: "/proc/\(pid)/task/\(task)/stat", encoding: .utf8) else { return nil }
            // The state is the first field after the command name, which is in parentheses.
            guard let close = stat.lastIndex(of: ")") else { throw TestFailure("cannot read /proc/\(pid)/task/\(task)/stat: \(stat)") }
            return stat[stat.index(after: close)...].first { $0 != " " }
        }
    }

    /// `kill -9`: the crash every durability test relies on.
    public func crash() {
        subprocess.signal(SIGKILL)
        subprocess.wait()
    }

    /// Waits for the process to exit, up to `timeout` seconds.
    /// - Returns: its exit status (128 plus the signal's number when a
    ///   signal killed it, as a shell says), or `nil` when it still runs.
    @discardableResult
    public func waitForExit(timeout: Double = 10) -> Int32? {
        subprocess.wait(timeout: .milliseconds(Int64(timeout * 1000)))?.shellStatus
    }

    /// SIGTERM, then SIGKILL if it has not gone after `timeout` seconds.
    public func stop(timeout: Double = 10) {
        guard isRunning else { return }
        signal(SIGTERM)
        if waitForExit(timeout: timeout) == nil { crash() }
    }

    public var standardOutput: String { (try? String(contentsOfFile: stdoutPath, encoding: .utf8)) ?? "" }
    public var standardError: String { (try? String(contentsOfFile: stderrPath, encoding: .utf8)) ?? "" }
}

/// The result of running a command to completion.
public struct CommandResult: Sendable {
    /// The exit status; 128 plus the signal's number when a signal killed it.
    public let status: Int32
    public let stdout: String
    public let stderr: String
}

/// Runs `executable` to completion (up to `timeout` seconds) and returns
/// its exit status and output.
public func runCommand(_ executable: String, _ arguments: [String], environment: [String: String] = [:],
                       stdin: String? = nil, timeout: Double = 60) throws -> CommandResult {
    let scratch = TemporaryDirectory(prefix: "cmd")
    var stdinPath: String?
    if let stdin {
        stdinPath = scratch.at("stdin")
        _ = FileManager.default.createFile(atPath: stdinPath!, contents: Data(stdin.utf8))
    }
    let child = try ChildProcess(executable, arguments, environment: environment, outputDirectory: scratch.path, stdinPath: stdinPath)
    guard let status = child.waitForExit(timeout: timeout) else {
        child.crash()
        throw TestFailure("\(executable) \(arguments.joined(separator: " ")) did not finish in \(timeout)s")
    }
    return CommandResult(status: status, stdout: child.standardOutput, stderr: child.standardError)
}

/// A failure raised by test helpers, with a message for the test log.
public struct TestFailure: Error, CustomStringConvertible {
    public let description: String
    public init(_ description: String) { self.description = description }
}

/// Waits until `condition` holds, for up to `timeout` seconds. Tests wait
/// on observable state; they never sleep a fixed time and hope.
///
/// Checked 5 ms after the first look, then twice as long after each,
/// up to every 50 ms: most events come within milliseconds, and a wait of
/// seconds (a daemon's log read whole, a request it answers) then costs a
/// check 20 times a second, not 100, on a machine whose cores the tests
/// and the processes they start keep busy.
public func waitUntil(timeout: Double = 10, _ what: String = "condition", _ condition: () throws -> Bool) throws {
    let timeout = timeout * TestPatience.factor
    let deadline = Date().addingTimeInterval(timeout)
    var pause: UInt32 = 5_000
    while Date() < deadline {
        if try condition() { return }
        usleep(pause)
        pause = min(pause * 2, 50_000)
    }
    if try condition() { return }
    throw TestFailure("timed out after \(timeout)s waiting for \(what)")
}

/// User plus system CPU seconds process `pid` has used, from `/proc/PID/stat`.
public func cpuSeconds(_ pid: Int32) throws -> Double {
    let stat = try String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8)
    // Fields after the command name (which is in parentheses); utime and
    // stime are the 14th and 15th fields of the whole line.
    guard let fields = stat.split(separator: ")").last?.split(separator: " "), fields.count > 12,
          let user = Double(fields[11]), let system = Double(fields[12]) else {
        throw TestFailure("cannot read CPU times from /proc/\(pid)/stat")
    }
    return (user + system) / Double(sysconf(Int32(_SC_CLK_TCK)))
}

/// How many times longer than written every wait of a test may take
/// before it fails: `EXPENSED_TEST_PATIENCE` (a number from 1 to 100),
/// else 3. A deadline only decides when a test that will fail gives up:
/// tests run side by side and beside other work, and a passing test never
/// waits for its deadline, so deadlines are generous.
public enum TestPatience {
    public static let factor: Double = {
        guard let text = ProcessInfo.processInfo.environment["EXPENSED_TEST_PATIENCE"], let value = Double(text), (1...100).contains(value) else { return 3 }
        return value
    }()
}

/// The test process's own set-up (Tests/TestProcess): SIGPIPE ignored
/// before any test runs, so that a write to a peer gone is `EPIPE`.
public enum TestProcessSetup {
    public static var isSigpipeIgnored: Bool { test_process_sigpipe_ignored() != 0 }
}

