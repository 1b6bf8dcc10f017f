import ExpenseTestSupport
import Foundation
import Postgres
import Testing

/// A server that went away before a statement was sent: libpq reports the
/// write that failed ("server closed the connection unexpectedly", no
/// SQLSTATE) while `PQstatus` still says the connection is fine, because
/// after a failed write it reads once, finds the last thing the server
/// sent (a notice), and stops before the end of the connection behind it.
/// That is what a PostgreSQL stopped at once (`SIGQUIT`) does to a
/// connection in use; the error is a lost connection all the same.
///
/// The server is gone whole before the statement starts, as a backend
/// that has exited is: a write fails only once its peer is closed, so the
/// end of the connection is always there to read behind the notice. (A
/// server that sent its notice while the statement waited, and closed
/// only later, would leave the end unread for as long as it was
/// descheduled: a race of the fake server's, not one a backend makes.)
@Suite struct PostgresLostWriteTests {
    @Test func statementWhoseWriteFailsAfterTheServersLastNotice_isALostConnection() throws {
        let directory = TemporaryDirectory()
        let server = try DyingServer(socket: "\(directory.path)/.s.PGSQL.5432")
        let db = try Connection("postgresql:///test?host=\(directory.path)&user=test&sslmode=disable&gssencmode=disable")
        server.goAway()
        server.waitUntilGone()
        do {
            _ = try db.scalarInt("SELECT 1")
            Issue.record("a server that went away answered")
        } catch {
            #expect(error.isConnectionLost, "\(error)")
            #expect(error.isUnavailable, "\(error)")
        }
        #expect(!db.isUsable)
    }
}

/// Speaks just enough of the protocol to let one client connect (no
/// password, no parameters); told to go away, it sends the warning a
/// backend sends as it is stopped at once, and closes the connection.
private final class DyingServer: @unchecked Sendable {
    private let listener: Int32
    private let go = DispatchSemaphore(value: 0)
    private let gone = DispatchSemaphore(value: 0)

    init(socket path: String) throws {
        listener = Glibc.socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard listener >= 0 else { throw TestFailure("socket: \(errno)") }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { sun in
            for (index, byte) in path.utf8.prefix(sun.count - 1).enumerated() { sun[index] = byte }
        }
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(listener, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        guard bound == 0, listen(listener, 4) == 0 else {
            close(listener)
            throw TestFailure("bind/listen on \(path): \(errno)")
        }
        Thread { [self] in serve() }.start()
    }

    deinit { close(listener) }

    /// The server sends its last notice and closes the connection.
    func goAway() { go.signal() }

    /// Returns once the connection is closed on the server's side.
    func waitUntilGone() {
        if gone.wait(timeout: .now() + 60) == .timedOut { Issue.record("the fake server never closed its connection") }
    }

    private func serve() {
        let client = accept(listener, nil, nil)
        guard client >= 0 else { gone.signal(); return }
        defer { gone.signal() }
        // The startup packet: its length, then the rest of it.
        var length = [UInt8](repeating: 0, count: 4)
        guard read(client, &length, 4) == 4 else { close(client); return }
        var rest = [UInt8](repeating: 0, count: Int(length.reduce(0) { $0 << 8 | Int($1) }) - 4)
        var got = 0
        while got < rest.count {
            let n = rest.withUnsafeMutableBytes { read(client, $0.baseAddress! + got, $0.count - got) }
            guard n > 0 else { close(client); return }
            got += n
        }
        // AuthenticationOk, then ReadyForQuery (idle).
        FaultProxy.sendAll(client, [0x52, 0, 0, 0, 8, 0, 0, 0, 0, 0x5A, 0, 0, 0, 5, 0x49])
        go.wait()
        let fields = "SWARNING\0VWARNING\0C57P01\0Mterminating connection due to immediate shutdown command\0\0"
        let notice = [UInt8(ascii: "N")] + Self.bigEndian(UInt32(4 + fields.utf8.count)) + Array(fields.utf8)
        FaultProxy.sendAll(client, notice)
        close(client)
    }

    private static func bigEndian(_ value: UInt32) -> [UInt8] {
        [UInt8(value >> 24), UInt8(value >> 16 & 0xFF), UInt8(value >> 8 & 0xFF), UInt8(value & 0xFF)]
    }
}
