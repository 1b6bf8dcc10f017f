import ExpenseTestSupport
import Foundation
import Testing
@testable import ExpenseServer
@testable import ServerAPI

/// The executable's interface: subcommands, exit statuses, signals,
/// socket activation.
@Suite struct CommandLineTests {
    let binary = BuiltProducts.path("expense-server")

    @Test func help_describesEveryOption_andExits0() throws {
        let result = try runCommand(binary, ["--help"])
        #expect(result.status == 0)
        #expect(result.stdout.hasPrefix("OVERVIEW: "))
        for section in ["USAGE:", "SUBCOMMANDS:", "OPTIONS (serve):", "FAULT INJECTION"] {
            #expect(result.stdout.contains(section))
        }
        for option in CommandLineParser.serveOptions {
            #expect(result.stdout.contains(option), "\(option) is not in --help")
        }
        #expect(try runCommand(binary, ["serve", "-h"]).stdout == result.stdout)
    }

    @Test(arguments: [
        [], ["frobnicate"], ["serve"], ["serve", "--data-dir"], ["serve", "--data-dir", "/tmp/x", "--bogus", "1"],
        ["serve", "--data-dir", "/tmp/x", "--listen", "localhost"], ["serve", "--data-dir", "/tmp/x", "--listen", "999.1.1.1:80"],
        ["serve", "--data-dir", "/tmp/x", "--fault-drop-request", "1.5"], ["serve", "--data-dir", "/tmp/x", "--receipt-max-bytes", "-1"],
        ["serve", "--data-dir", "/tmp/x", "--idempotency-retention-hours", "1"], ["serve", "--data-dir", "/tmp/x", "extra"],
        ["user"], ["user", "add", "bob"], ["user", "add", "--data-dir", "/tmp/x"], ["user", "remove", "bob", "--data-dir", "/tmp/x"],
    ])
    func unusableCommandLine_exits64WithAReason(_ arguments: [String]) throws {
        let result = try runCommand(binary, arguments)
        #expect(result.status == 64, "\(arguments)")
        #expect(result.stderr.hasPrefix("expense-server: "), "\(arguments)")
        #expect(result.stderr.contains("Run 'expense-server --help' for usage."))
        #expect(result.stdout.isEmpty)
    }

    @Test func userAdd_printsOnlyTheToken_andStoresOnlyItsHash() throws {
        let directory = TemporaryDirectory()
        let data = directory.at("data")
        let result = try runCommand(binary, ["user", "add", "carol@example.com", "--data-dir", data])
        #expect(result.status == 0)
        let lines = result.stdout.split(separator: "\n", omittingEmptySubsequences: false)
        #expect(lines.count == 2 && lines[1].isEmpty)
        let token = String(lines[0])
        #expect(token.hasPrefix("esk_"))
        #expect(token.count == 47)
        #expect(result.stderr.isEmpty)
        // Nowhere in the database files.
        for file in try FileManager.default.contentsOfDirectory(atPath: data) where file.hasPrefix("expense-server.db") {
            let bytes = try #require(FileManager.default.contents(atPath: "\(data)/\(file)"))
            #expect(bytes.range(of: Data(token.utf8)) == nil, "token found in \(file)")
        }
        // Each user gets a token of their own.
        let other = try runCommand(binary, ["user", "add", "dave", "--data-dir", data])
        #expect(other.status == 0)
        #expect(other.stdout != result.stdout)
        let list = try runCommand(binary, ["user", "list", "--data-dir", data])
        #expect(list.stdout.split(separator: "\n").map { $0.split(separator: "\t")[0] } == ["carol@example.com", "dave"])
    }

    @Test func userAdd_refusesADuplicateOrABadName() throws {
        let directory = TemporaryDirectory()
        let data = directory.at("data")
        #expect(try runCommand(binary, ["user", "add", "erin", "--data-dir", data]).status == 0)
        let again = try runCommand(binary, ["user", "add", "erin", "--data-dir", data])
        #expect(again.status == 1)
        #expect(again.stderr == "expense-server: user 'erin' already exists\n")
        #expect(again.stdout.isEmpty)
        let bad = try runCommand(binary, ["user", "add", "no spaces\nplease", "--data-dir", data])
        #expect(bad.status == 1)
        #expect(bad.stderr.contains("invalid user name"))
        #expect(!bad.stderr.contains("\nplease"))
    }

    @Test(arguments: StorageEngine.allCases, [SIGTERM, SIGINT]) func signal_stopsGracefullyWithExit0(_ engine: StorageEngine, _ signal: Int32) throws {
        let server = try TestServer(engine)
        #expect(try server.create(key: TestServer.key()).status == 201)
        server.process.child.signal(signal)
        #expect(server.process.child.waitForExit(timeout: 20) == 0)
        let log = server.process.child.standardError
        #expect(log.contains("expense-server: stopping"))
        #expect(log.hasSuffix("expense-server: stopped\n"))
    }

    @Test(arguments: StorageEngine.allCases)
    func listeningLine_isExactlyAsDocumented(_ engine: StorageEngine) throws {
        let server = try TestServer(engine)
        let lines = server.process.child.standardError.split(separator: "\n")
        #expect(lines.contains("expense-server: listening on 127.0.0.1:\(server.port)"))
    }

    @Test(arguments: StorageEngine.allCases)
    func portInUse_exits1WithTheReason(_ engine: StorageEngine) throws {
        let first = try TestServer(engine)
        let directory = TemporaryDirectory()
        let result = try runCommand(binary, ["serve", "--listen", "127.0.0.1:\(first.port)", "--data-dir", directory.at("data")])
        #expect(result.status == 1)
        #expect(result.stderr.contains("Failed to listen on 127.0.0.1:\(first.port): bind"))
        #expect(result.stderr.contains("Address already in use"))
    }

    @Test func unusableDataDirectory_exits1WithTheReason() throws {
        let directory = TemporaryDirectory()
        #expect(FileManager.default.createFile(atPath: directory.at("file"), contents: Data("x".utf8)))
        let result = try runCommand(binary, ["serve", "--listen", "127.0.0.1:0", "--data-dir", directory.at("file/data")])
        #expect(result.status == 1)
        #expect(result.stderr.hasPrefix("expense-server: Failed to open data directory '\(directory.at("file/data"))': mkdir"))
    }

    @Test func socketActivation_servesThePassedSocket_andSendsReady() throws {
        let directory = TemporaryDirectory()
        let data = directory.at("data")
        let token = try ServerProcess.addUser("alice", dataDirectory: data)
        let notify = try NotifySocket(path: directory.at("notify"))
        // A listening socket on fd 3, LISTEN_PID = the server's own pid (exec keeps it).
        let launcher = """
            import os, socket, sys
            s = socket.socket(); s.bind(("127.0.0.1", 0)); s.listen(16)
            os.dup2(s.fileno(), 3); os.set_inheritable(3, True)
            os.environ["LISTEN_FDS"] = "1"; os.environ["LISTEN_PID"] = str(os.getpid())
            sys.stderr.write("launcher: port %d\\n" % s.getsockname()[1]); sys.stderr.flush()
            os.execv(sys.argv[1], [sys.argv[1], "serve", "--listen", "127.0.0.1:1", "--data-dir", sys.argv[2]])
            """
        let child = try ChildProcess("/usr/bin/python3", ["-c", launcher, binary, data],
                                     environment: ["NOTIFY_SOCKET": notify.path], outputDirectory: directory.path)
        defer { child.stop() }
        var port: UInt16?
        try waitUntil(timeout: 20, "the server to listen") {
            port = ServerProcess.listeningPort(in: child.standardError)
            return port != nil || !child.isRunning
        }
        let launcherPort = child.standardError.split(separator: "\n").first { $0.hasPrefix("launcher: port ") }.flatMap { UInt16($0.split(separator: " ").last!) }
        #expect(port != nil)
        #expect(port == launcherPort)
        #expect(try notify.receive(timeout: 10).contains("READY=1"))
        let response = try HTTPConnection(port: try #require(port)).request("GET", "/v1/expenses", headers: [("Authorization", "Bearer \(token)")])
        #expect(response.status == 200)
        child.signal(SIGTERM)
        #expect(child.waitForExit(timeout: 20) == 0)
        #expect(try notify.receive(timeout: 5).contains("STOPPING=1"))
    }
}

/// An `AF_UNIX` datagram socket where `sd_notify` messages arrive.
final class NotifySocket {
    let path: String
    private let descriptor: Int32

    init(path: String) throws {
        self.path = path
        descriptor = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            raw.copyBytes(from: Array(path.utf8))
            raw[path.utf8.count] = 0
        }
        let rc = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(descriptor, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        guard rc == 0 else { throw TestFailure("bind \(path): \(errno)") }
    }

    deinit { close(descriptor) }

    /// The next message, waiting up to `timeout` seconds.
    func receive(timeout: Double) throws -> String {
        var fds = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
        guard poll(&fds, 1, Int32(timeout * 1000)) == 1 else { throw TestFailure("no notification within \(timeout)s") }
        var buffer = [UInt8](repeating: 0, count: 4096)
        let n = recv(descriptor, &buffer, buffer.count, 0)
        return String(decoding: buffer.prefix(max(0, n)), as: UTF8.self)
    }
}
