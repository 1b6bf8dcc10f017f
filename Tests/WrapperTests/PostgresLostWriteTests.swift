import ExpenseTestSupport
import Foundation
import Postgres
import Testing

/// A server that goes away as a statement is sent: libpq reports the
/// write that failed ("server closed the connection unexpectedly", no
/// SQLSTATE) while `PQstatus` still says the connection is fine, when the
/// last thing the server sent, a notice, is read before the end of the
/// connection. That is what a PostgreSQL stopped at once (`SIGQUIT`) does
/// to a connection in use; the error is a lost connection all the same.
@Suite struct PostgresLostWriteTests {
    @Test func statementWhoseWriteFailsAfterTheServersLastNotice_isALostConnection() throws {
        let directory = TemporaryDirectory()
        let server = try DyingServer(socket: "\(directory.path)/.s.PGSQL.5432")
        let db = try Connection("postgresql:///test?host=\(directory.path)&user=test&sslmode=disable&gssencmode=disable")
        server.goAway()
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
/// password, no parameters), then stops reading (the client's next write
/// fails); told to go away, it sends a warning a moment later and closes.
private final class DyingServer: @unchecked Sendable {
    private let listener: Int32
    private let go = DispatchSemaphore(value: 0)

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

    /// The client's next statement meets a server on its way out.
    func goAway() { go.signal() }

    private func serve() {
        let client = accept(listener, nil, nil)
        guard client >= 0 else { return }
        defer { close(client) }
        // The startup packet: its length, then the rest of it.
        var length = [UInt8](repeating: 0, count: 4)
        guard read(client, &length, 4) == 4 else { return }
        var rest = [UInt8](repeating: 0, count: Int(length.reduce(0) { $0 << 8 | Int($1) }) - 4)
        var got = 0
        while got < rest.count {
            let n = rest.withUnsafeMutableBytes { read(client, $0.baseAddress! + got, $0.count - got) }
            guard n > 0 else { return }
            got += n
        }
        // AuthenticationOk, then ReadyForQuery (idle).
        FaultProxy.sendAll(client, [0x52, 0, 0, 0, 8, 0, 0, 0, 0, 0x5A, 0, 0, 0, 5, 0x49])
        // The client's next write fails (EPIPE), whenever it comes.
        shutdown(client, Int32(SHUT_RD))
        go.wait()
        // Time for the client's statement to be refused first.
        usleep(300_000)
        let fields = "SWARNING\0VWARNING\0C57P01\0Mterminating connection due to immediate shutdown command\0\0"
        let notice = [UInt8(ascii: "N")] + Self.bigEndian(UInt32(4 + fields.utf8.count)) + Array(fields.utf8)
        FaultProxy.sendAll(client, notice)
    }

    private static func bigEndian(_ value: UInt32) -> [UInt8] {
        [UInt8(value >> 24), UInt8(value >> 16 & 0xFF), UInt8(value >> 8 & 0xFF), UInt8(value & 0xFF)]
    }
}
