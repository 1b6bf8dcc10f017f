import HTTPD
import Posix
import ServerAPI

/// The HTTP server in service, and those it replaced: on SIGHUP a new one
/// starts on the same listening socket with the certificate and key read
/// again, and the old one stops accepting but serves its open connections
/// on (a request in progress is not cut); it is stopped once it has none
/// left, at a later reload or upkeep, or at shutdown, and at the first
/// upkeep ten minutes after its retirement whatever it still serves (a
/// keep-alive connection in constant use would otherwise keep the old
/// certificate for ever).
final class ServingServers {
    private(set) var current: HTTPServer
    private var retired: [(server: HTTPServer, sinceNanoseconds: UInt64)] = []
    private let listener: FileDescriptor
    private var options: HTTPServer.Options
    private let service: any HTTPService

    init(listener: FileDescriptor, options: HTTPServer.Options, service: any HTTPService) throws {
        self.listener = listener
        self.options = options
        self.service = service
        current = try HTTPServer(listening: listener, options: options, service: service)
    }

    /// Reads `files` again and serves with them from now on. When they
    /// cannot be read or are refused, the server in service stays as it is.
    func reload(_ files: TLSFiles, log: ServerLog) {
        do {
            var next = options
            next.tls = try files.read()
            let replacement = try HTTPServer(listening: listener, options: next, service: service)
            current.quiesce()
            retired.append((current, Clock.monotonicNanoseconds))
            current = replacement
            options = next
            log.log(.notice, "reloaded the TLS certificate \(files.certificate) and its key")
        } catch {
            log.log(.error, "Failed to reload the TLS certificate: \(error); serving with the previous one")
        }
        stopIdleRetired()
    }

    /// Stops the replaced servers that have no connection left, or were
    /// replaced more than ten minutes ago.
    func stopIdleRetired() {
        let now = Clock.monotonicNanoseconds
        retired.removeAll { retired in
            guard retired.server.connectionCount == 0 || now - retired.sinceNanoseconds > 600 * 1_000_000_000 else { return false }
            retired.server.stop()
            return true
        }
    }

    /// Stops every server, the current one last.
    func stop() {
        for (server, _) in retired { server.stop() }
        retired = []
        current.stop()
    }
}
