import ExpenseCore
import Foundation

/// An `expensed` child process with its own state directory, socket and
/// (empty) configuration file, and helpers to talk to it.
public final class DaemonHarness: @unchecked Sendable {
    public let directory: TemporaryDirectory
    public let stateDirectory: String
    public let socketPath: String
    public let spoolDirectory: String
    public var arguments: [String]
    public var environment: [String: String]
    public private(set) var process: ChildProcess?
    /// A program the daemon runs under (`strace …`): the command line is
    /// `launcher + [expensed] + arguments`, and ``process`` is the launcher.
    public var launcher: [String] = []
    /// The `expensed` to run; nil: the one built beside the tests
    /// (`EXPENSED_BIN_DIR`). A benchmark sets another build's here.
    public var executable: String?
    /// The standard error of every daemon started so far, in order.
    public private(set) var logPaths: [String] = []

    /// - Parameters:
    ///   - arguments: extra flags for `expensed`.
    ///   - spool: whether to watch a spool directory (`spool/` in the harness folder).
    public init(arguments: [String] = [], environment: [String: String] = [:], spool: Bool = false, directory: TemporaryDirectory? = nil) {
        self.directory = directory ?? TemporaryDirectory(prefix: "expensed")
        stateDirectory = self.directory.at("state")
        socketPath = self.directory.at("control.sock")
        spoolDirectory = self.directory.at("spool")
        let configPath = self.directory.at("expensed.conf")
        // A small reserve: the default (5 % of the file system, at most
        // 1 GiB) would refuse adds on a machine whose temporary folder has
        // little free space; a test of the reserve sets its own.
        if !FileManager.default.fileExists(atPath: configPath) {
            _ = FileManager.default.createFile(atPath: configPath, contents: Data("disk_reserve = 16M\n".utf8))
        }
        self.arguments = ["--config", configPath, "--state-dir", stateDirectory, "--socket", socketPath,
                          "--spool-dir", spool ? spoolDirectory : "none", "--log-target", "stderr",
                          // Receipts are not read unless a test asks (`--reading on`, a flag given later wins):
                          // a reading is a Tesseract run per receipt, which the other tests have no use for.
                          "--reading", "off"] + arguments
        // Never the machine's own system bus (its NetworkManager could hold
        // uploads): a test that wants one passes a bus of its own (FakeSystemBus).
        self.environment = environment.merging(["DBUS_SYSTEM_BUS_ADDRESS": "unix:path=\(self.directory.at("no-system-bus"))"]) { given, _ in given }
        if spool { try? FileManager.default.createDirectory(atPath: spoolDirectory, withIntermediateDirectories: true) }
    }

    /// Starts the daemon and waits until its socket answers.
    public func start(timeout: Double = 20) throws {
        try waitUntilAnswering(launch(), timeout: timeout)
    }

    /// Starts the daemon without waiting for it: for a kill during start-up.
    @discardableResult
    public func launch() throws -> ChildProcess {
        let expensed = executable ?? BuiltProducts.path("expensed")
        let command = launcher.isEmpty ? [expensed] + arguments : launcher + [expensed] + arguments
        let child = try ChildProcess(command[0], Array(command.dropFirst()), environment: environment,
                                     outputDirectory: directory.path, name: "expensed")
        process = child
        logPaths.append(child.stderrPath)
        return child
    }

    /// Waits until `child`'s socket answers a `status`; fails when it exits first.
    public func waitUntilAnswering(_ child: ChildProcess, timeout: Double = 20) throws {
        try waitUntil(timeout: timeout, "expensed to answer on \(socketPath)") {
            guard child.isRunning else {
                throw TestFailure("expensed \(child.termination?.description ?? "exited"): \(child.standardError)")
            }
            return (try? request(["op": "status"])) != nil
        }
    }

    /// The pid of the process answering on the socket (`SO_PEERCRED`): the
    /// daemon's own, also when it runs under a ``launcher``.
    public func daemonPID() throws -> Int32 {
        let client = try RawClient(path: socketPath)
        return try UnixSocket.peerCredentials(FileDescriptor(owning: dup(client.fd))).pid
    }

    /// SIGTERM and wait; returns the exit status.
    @discardableResult
    public func stop(timeout: Double = 20) -> Int32? {
        guard let process else { return nil }
        process.signal(SIGTERM)
        let status = process.waitForExit(timeout: timeout)
        if status == nil { process.crash() }
        return status
    }

    /// `kill -9`.
    public func crash() {
        process?.crash()
    }

    public var log: String { process?.standardError ?? "" }

    /// Waits until fault point `point` hangs a thread of the daemon and its
    /// watchdog withholds the pings for it. A daemon starved of CPU may
    /// withhold them earlier and resume: the last of the two words counts.
    /// Once the thread hangs, no tick is healthy again.
    public func waitForWithheldPings(hangingAt point: String) throws {
        try waitUntil(timeout: 30, "fault point \(point) to hang and the watchdog pings to be withheld") {
            let log = self.log
            guard log.contains("fault point \(point): hanging this thread"),
                  let withheld = log.range(of: "withholding watchdog pings", options: .backwards) else { return false }
            guard let resumed = log.range(of: "watchdog pings resumed", options: .backwards) else { return true }
            return resumed.lowerBound < withheld.lowerBound
        }
    }

    /// The number of drain passes this daemon's log says have ended (its
    /// debug lines "Drain pass N ended": start it with `EXPENSED_DEBUG`).
    public var passesEnded: Int {
        log.split(separator: "\n").reversed().lazy.compactMap { line -> Int? in
            guard let range = line.range(of: "Drain pass ") else { return nil }
            let rest = line[range.upperBound...]
            guard rest.contains(" ended") else { return nil }
            return Int(rest.prefix { $0.isNumber })
        }.first ?? 0
    }

    /// Waits until `count` more drain passes than `after` have ended: what
    /// a test that shows nothing happens waits for, instead of a time.
    public func waitForPasses(after: Int, count: Int = 2, timeout: Double = 20) throws {
        try waitUntil(timeout: timeout, "\(count) more drain passes to end (EXPENSED_DEBUG must be set)") { passesEnded >= after + count }
    }

    /// Waits until `status` (every account's, with `allAccounts`) says
    /// `queued` jobs queued and none sending, with the server in state
    /// `server` when given: the outbox drained (0 queued), or paused with
    /// every job back in the queue (jobs claimed beside a refused one are
    /// `sending` until their own answer or the pass's end).
    public func waitForQueue(queued: Int64 = 0, server: String? = nil, allAccounts: Bool = false, timeout: Double = 60,
                             _ what: String = "the outbox to drain") throws {
        try waitUntil(timeout: timeout, what) {
            let status = try request(allAccounts ? ["op": "status", "all_accounts": true] : ["op": "status"])["result"]
            return status?["queued"] == .integer(queued) && status?["sending"] == 0 && (server.map { status?["server"] == .string($0) } ?? true)
        }
    }

    /// Runs `expensectl` against this daemon.
    public func ctl(_ arguments: [String], environment: [String: String] = [:], timeout: Double = 60) throws -> CommandResult {
        try runCommand(BuiltProducts.path("expensectl"), ["--socket", socketPath] + arguments, environment: environment, timeout: timeout)
    }

    /// Runs `expensectl … --json` and parses its output.
    public func ctlJSON(_ arguments: [String]) throws -> JSONValue {
        let result = try ctl(arguments + ["--json"])
        guard result.status == 0 else {
            throw TestFailure("expensectl \(arguments.joined(separator: " ")) exited \(result.status): \(result.stderr)")
        }
        return try JSONValue.parse(Array(result.stdout.utf8))
    }

    /// One request over a fresh connection; returns the whole response line.
    public func request(_ object: JSONValue, timeout: Double = 30) throws -> JSONValue {
        let client = try RawClient(path: socketPath, timeout: timeout)
        try client.send(object.serialized() + "\n")
        return try client.readJSONLine()
    }

    /// The expenses `list` shows.
    /// `retry` for every expense held as the same receipt as another's
    /// (docs/receipts.md): what a person does who meant both.
    /// - Returns: how many were held.
    @discardableResult
    public func retrySameReceipts() throws -> Int {
        var held = 0
        for expense in try list() where expense["state"] == "needs_attention" {
            guard let id = expense["transaction_id"]?.stringValue,
                  try ctlJSON(["show", id])["jobs"]?.arrayValue?.contains(where: { $0["last_error_class"] == "same_receipt" }) == true
            else { continue }
            let retried = try ctl(["retry", id])
            guard retried.status == 0 else { throw TestFailure("retry \(id) exited \(retried.status): \(retried.stderr)") }
            held += 1
        }
        return held
    }

    public func list() throws -> [JSONValue] {
        let response = try request(["op": "list"])
        guard let expenses = response["result"]?["expenses"]?.arrayValue else {
            throw TestFailure("list failed: \(response.serialized())")
        }
        return expenses
    }

    /// Files in the receipts directory.
    public func receiptFiles() -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: "\(stateDirectory)/receipts")) ?? []).sorted()
    }

    /// Waits until the receipts directory is empty, and fails naming the
    /// files still there after `timeout` seconds. A sent receipt's file
    /// (or a dropped chain's) is removed just after the commit that removed
    /// its job (docs/sync.md), so an outbox seen empty, or a status saying
    /// nothing is queued, can come a moment before the file goes: a test
    /// that wants no receipt file waits for the removal itself.
    public func waitUntilNoReceiptFiles(timeout: Double = 10) throws {
        do {
            try waitUntil(timeout: timeout, "the receipt files to be removed") { receiptFiles().isEmpty }
        } catch {
            throw TestFailure("receipt files still present \(timeout)s after their jobs went: \(receiptFiles())")
        }
    }
}

/// A control socket client that sends raw bytes: for testing what the
/// daemon does with input `expensectl` would never send.
public final class RawClient: @unchecked Sendable {
    public let fd: Int32
    private var buffer: [UInt8] = []

    public init(path: String, timeout: Double = 30) throws {
        fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw TestFailure("socket: \(errno)") }
        let rc = try withUnixAddress(path) { connect(fd, $0, $1) }
        guard rc == 0 else {
            // deinit closes fd (the object is fully initialized, so it runs
            // even though init throws); closing it here too would close
            // whatever descriptor took its number in between.
            throw TestFailure("connect \(path): \(String(cString: strerror(errno)))")
        }
        var tv = timeval(tv_sec: Int(timeout), tv_usec: Int((timeout - Double(Int(timeout))) * 1e6))
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
    }

    deinit { Glibc.close(fd) }

    public func send(_ text: String) throws { try send(Array(text.utf8)) }

    public func send(_ bytes: [UInt8]) throws {
        var offset = 0
        while offset < bytes.count {
            let n = bytes.withUnsafeBytes { Glibc.send(fd, $0.baseAddress! + offset, $0.count - offset, Int32(MSG_NOSIGNAL)) }
            guard n > 0 else { throw TestFailure("send: \(String(cString: strerror(errno)))") }
            offset += n
        }
    }

    /// Closes the writing half: the daemon sees end of input.
    public func shutdownWrite() { shutdown(fd, Int32(SHUT_WR)) }

    /// The next line, without its newline; `nil` at end of stream.
    public func readLine() throws -> [UInt8]? {
        while true {
            if let newline = buffer.firstIndex(of: 0x0A) {
                let line = Array(buffer[..<newline])
                buffer.removeFirst(newline + 1)
                return line
            }
            var chunk = [UInt8](repeating: 0, count: 65536)
            let n = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if n == 0 { return nil }
            if n < 0 { throw TestFailure("recv: \(String(cString: strerror(errno)))") }
            buffer.append(contentsOf: chunk[0..<n])
        }
    }

    public func readJSONLine() throws -> JSONValue {
        guard let line = try readLine() else { throw TestFailure("connection closed before a response") }
        return try JSONValue.parse(line)
    }

    /// True when the daemon has closed the connection: end of stream, or a
    /// reset (Linux reports a close with our data still unread as one).
    public func isClosedByPeer() -> Bool {
        var byte: UInt8 = 0
        let n = recv(fd, &byte, 1, 0)
        return n == 0 || (n < 0 && errno == ECONNRESET)
    }
}

import Posix

extension RawClient {
    /// Sends `text` with the file at `path` attached as a descriptor
    /// (`SCM_RIGHTS`), the way `expensectl add --receipt` does.
    public func send(_ text: String, passingFileAt path: String) throws {
        let file = try FileDescriptor.open(path, [.readOnly, .nonBlocking])
        try send(text, passing: file)
    }

    /// Sends `text` with `descriptor` attached.
    public func send(_ text: String, passing descriptor: FileDescriptor) throws {
        let socket = FileDescriptor(owning: dup(fd))
        try UnixSocket.send(socket, Array(text.utf8), passing: descriptor)
    }
}

/// Receipt files for tests: whole JPEG, PNG and PDF files of the size
/// asked for (``ReceiptBytes``), each seed giving other bytes.
public enum SampleReceipt {
    public static func jpeg(size: Int = 2048, seed: UInt8 = 1) -> [UInt8] {
        ReceiptBytes.make(.jpeg, size: size) { UInt8(truncatingIfNeeded: $0 &* 7 &+ Int(seed)) }
    }

    public static func png(size: Int = 2048) -> [UInt8] {
        ReceiptBytes.make(.png, size: size) { _ in 0x42 }
    }

    public static func pdf(size: Int = 2048) -> [UInt8] {
        ReceiptBytes.make(.pdf, size: size) { _ in 0x20 }
    }

    /// `count` receipt files in `directory`, each of bytes of its own (by
    /// default JPEGs of growing size): one for each expense, as the same
    /// bytes twice would be held as the same receipt (docs/receipts.md).
    /// - Returns: their paths, by index.
    public static func distinctFiles(_ count: Int, in directory: TemporaryDirectory, extension ext: String = "jpg",
                                     _ bytes: (Int) -> [UInt8] = { jpeg(size: 2048 + $0) }) -> [String] {
        (0..<count).map { n in
            let path = directory.at("receipt-\(n).\(ext)")
            write(bytes(n), to: path)
            return path
        }
    }

    /// Writes `bytes` to `path`.
    public static func write(_ bytes: [UInt8], to path: String) {
        _ = FileManager.default.createFile(atPath: path, contents: Data(bytes))
    }
}
