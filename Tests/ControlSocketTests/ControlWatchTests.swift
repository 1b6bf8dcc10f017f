import ControlProtocol
import ControlSocket
import DaemonSupport
import ExpenseCore
import ExpenseTestSupport
import Foundation
import Posix
import Testing

/// The socket thread's part of `watch`: every summary published after the
/// one a watcher was answered with reaches it, whenever it comes.
@Suite struct ControlWatchTests {
    let temporary = TemporaryDirectory(prefix: "control-watch")

    /// A summary published while the watch's answer is still waiting to
    /// be written used to be skipped (a watcher with output pending skips
    /// to the newest) and then forgotten once that output was written, so
    /// the watcher never heard of it: `sync --wait` missed a refusal that
    /// way. Published just before the answer is handed over, it races the
    /// answer inside the socket thread every time.
    @Test func summaryPublishedAsTheWatchIsAnswered_reachesTheWatcher() async throws {
        let path = temporary.at("control.sock")
        let listener = try UnixSocket.listen(path: path, mode: 0o600)
        let access = AccessPolicy(daemonUID: Users.effectiveUserID, groupID: nil, groupName: nil)
        let server = try ControlServer(listener: listener, ownedSocketPath: path, limits: ControlLimits(), access: access,
                                       logger: Logger(target: .stderr))
        server.start()
        let handler = Task {
            for await incoming in server.requests {
                guard case .watch = incoming.request.command else { continue }
                let seen = server.publishedVersion()
                var refused = QueueSummary()
                refused.queued = 3
                refused.server = .needsCredentials
                var before = refused
                before.server = .unknown
                server.publish(summary: refused)
                server.respond(to: incoming.connection, ControlResponse(id: incoming.request.id, before),
                               then: .watch(id: incoming.request.id, seenVersion: seen))
            }
        }
        let client = try RawClient(path: path, timeout: 10)
        try client.send("{\"op\":\"watch\",\"id\":1}\n")
        let answer = try client.readJSONLine()
        #expect(answer["result"]?["server"] == "unknown")
        // A miss shows as a read that times out (10 s) instead of a line.
        let next = try? client.readJSONLine()
        #expect(next?["result"]?["server"] == "needs_credentials", "the summary published with the answer: \(next.map { $0.serialized() } ?? "none")")
        await server.shutdown()
        handler.cancel()
    }
}
