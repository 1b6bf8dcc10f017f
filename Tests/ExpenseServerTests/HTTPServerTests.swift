import ExpenseTestSupport
import Foundation
import HTTPD
import Posix
import Synchronization
import Testing

/// The libmicrohttpd wrapper in process, on loopback, with a service of the
/// test's own.
@Suite struct HTTPServerTests {
    /// Answers `/early` from the headers, `/close` by closing, anything else
    /// after reading the body, echoing the number of body bytes.
    final class EchoService: HTTPService {
        let events = Mutex<[String]>([])

        final class Exchange: HTTPExchange {
            let head: HTTPRequestHead
            let service: EchoService
            var received = 0
            init(head: HTTPRequestHead, service: EchoService) {
                self.head = head
                self.service = service
            }
            func start() -> HTTPAction? {
                switch head.target {
                case "/early": .respond(HTTPResponse(status: 413, body: .bytes(Array("early".utf8))))
                case "/close": .close
                default: nil
                }
            }
            func receive(_ bytes: UnsafeRawBufferPointer) -> Bool {
                received += bytes.count
                return true
            }
            func finish() -> HTTPAction {
                .respond(HTTPResponse(status: 200, headers: [HTTPHeader("X-Method", head.method)],
                                      body: .bytes(Array("\(received)".utf8))))
            }
            func complete(status: Int?, termination: HTTPTermination) {
                service.events.withLock { $0.append("\(head.target) \(status.map(String.init) ?? "-") \(termination)") }
            }
        }

        func makeExchange(for head: HTTPRequestHead) -> any HTTPExchange { Exchange(head: head, service: self) }
        func requestAbandoned(target: String, termination: HTTPTermination, durationNanoseconds: UInt64) {
            events.withLock { $0.append("abandoned \(target) \(termination)") }
        }
        func libraryMessage(_ message: String) {}
    }

    private func start(_ service: EchoService) throws -> (HTTPServer, UInt16, FileDescriptor) {
        let socket = try TCPSocket.listen(SocketAddress(family: .ipv4, host: "127.0.0.1", port: 0))
        let port = try TCPSocket.localAddress(socket).port
        let server = try HTTPServer(listening: socket, options: HTTPServer.Options(), service: service)
        return (server, port, socket)
    }

    @Test func keepAlive_servesManyRequestsOnOneConnection_andBodiesArriveWhole() throws {
        let service = EchoService()
        let (server, port, socket) = try start(service)
        defer { server.stop(); _ = socket }
        let connection = try HTTPConnection(port: port)
        for size in [0, 1, 70_000, 3] {
            let response = try connection.request("POST", "/echo", body: [UInt8](repeating: 0x61, count: size))
            #expect(response.status == 200)
            #expect(response.text == "\(size)")
            #expect(response.header("X-Method") == "POST")
        }
        // A chunked body arrives whole too.
        try connection.send(HTTPConnection.encode("PUT", "/echo", headers: [("Transfer-Encoding", "chunked")])
                            + Array("5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n".utf8))
        #expect(try connection.readResponse().text == "11")
        #expect(try connection.request("GET", "/echo").text == "0")
        #expect(server.connectionCount == 1)
    }

    @Test func earlyAnswer_isSentWithoutTheBody_andClosesTheConnection() throws {
        let service = EchoService()
        let (server, port, socket) = try start(service)
        defer { server.stop(); _ = socket }
        let connection = try HTTPConnection(port: port)
        try connection.send(HTTPConnection.encode("POST", "/early", headers: [("Content-Length", "1000000")]))
        let response = try connection.readResponse()
        #expect(response.status == 413)
        #expect(response.text == "early")
        #expect(connection.waitForClose(timeout: 5))
        // Without a body, an early answer keeps the connection.
        let second = try HTTPConnection(port: port)
        #expect(try second.request("GET", "/early").status == 413)
        #expect(try second.request("GET", "/early").status == 413)
    }

    @Test func close_dropsTheConnectionUnanswered_andCompletionSeesEveryExchange() throws {
        let service = EchoService()
        let (server, port, socket) = try start(service)
        let connection = try HTTPConnection(port: port)
        #expect(throws: HTTPConnectionError.self) { _ = try connection.request("GET", "/close") }
        let big = try HTTPConnection(port: port)
        try big.send("GET /x HTTP/1.1\r\nHost: x\r\nX-Big: \(String(repeating: "b", count: 40_000))\r\n\r\n")
        #expect(try big.readResponse().status == 431)
        #expect(try HTTPConnection(port: port).request("GET", "/ok").status == 200)
        server.stop()
        _ = socket
        let events = service.events.withLock { $0 }
        #expect(events.contains("/close - error"))
        #expect(events.contains("/ok 200 completed"))
        #expect(events.contains { $0.hasPrefix("abandoned /x ") })
    }
}
