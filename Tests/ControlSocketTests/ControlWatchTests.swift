import ControlProtocol
import ControlSocket
import DaemonSupport
import ExpenseCore
import ExpenseTestSupport
import Foundation
import Posix
import Synchronization
import Testing

/// The socket thread's part of `watch`: every summary published after the
/// one a watcher was answered with reaches it, whenever it comes.
// Serialized: each test blocks a thread of the cooperative pool on its
// client's reads (the servers answer on the socket's own thread); one at
// a time, they hold one thread of it, not two.
@Suite(.serialized) struct ControlWatchTests {
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
        // Answered on the socket's own thread: nothing here waits for the
        // cooperative pool, which the other tests of the run share.
        server.start(direct: { incoming in
            guard case .watch = incoming.request.command else { return false }
            let seen = server.publishedVersion()
            var refused = QueueSummary()
            refused.queued = 3
            refused.server = .needsCredentials
            var before = refused
            before.server = .unknown
            server.publish(summary: refused)
            server.respond(to: incoming.connection, ControlResponse(id: incoming.request.id, before),
                           then: .watch(id: incoming.request.id, seenVersion: seen))
            return true
        })
        let client = try RawClient(path: path, timeout: 10)
        try client.send("{\"op\":\"watch\",\"id\":1}\n")
        let answer = try client.readJSONLine()
        #expect(answer["result"]?["server"] == "unknown")
        // A miss shows as a read that times out (10 s) instead of a line.
        let next = try? client.readJSONLine()
        #expect(next?["result"]?["server"] == "needs_credentials", "the summary published with the answer: \(next.map { $0.serialized() } ?? "none")")
        await server.shutdown()
    }
    /// A watch of changes refused (an account the caller may not see) left
    /// the connection counted as a watcher of changes, once per refusal, so
    /// the store went on making changes for nobody. Counted while it waits
    /// for its answer; not after a refusal; counted again when a watch on
    /// the same connection is answered; not after it closes.
    @Test func aRefusedWatchOfChanges_isNotCountedAsAWatcher() async throws {
        let path = temporary.at("refused.sock")
        let listener = try UnixSocket.listen(path: path, mode: 0o600)
        let access = AccessPolicy(daemonUID: Users.effectiveUserID, groupID: nil, groupName: nil)
        let server = try ControlServer(listener: listener, ownedSocketPath: path, limits: ControlLimits(), access: access,
                                       logger: Logger(target: .stderr))
        // Answered on the socket's own thread: nothing here waits for the cooperative pool.
        let counted = Mutex<[Bool]>([])
        server.start(direct: { incoming in
            guard case .watch = incoming.request.command else { return false }
            counted.withLock { $0.append(server.wantsChanges) }
            if incoming.request.id == 1 || incoming.request.id == 2 {
                server.respond(to: incoming.connection, .failure(ControlFailure(id: incoming.request.id, .permissionDenied, "not yours")))
            } else {
                server.respond(to: incoming.connection, ControlResponse(id: incoming.request.id, QueueSummary()),
                               then: .watch(id: incoming.request.id, seenVersion: server.publishedVersion(), changes: true))
            }
            return true
        })
        var client: RawClient? = try RawClient(path: path, timeout: 10)
        for id in [1, 2] {
            try client?.send(#"{"op":"watch","changes":true,"id":\#(id)}"# + "\n")
            #expect(try client?.readJSONLine()["ok"] == false)
            #expect(counted.withLock { $0.last } == true, "counted while its answer is made")
            #expect(!server.wantsChanges, "refused \(id) time(s): nobody watches changes")
        }
        try client?.send(#"{"op":"watch","changes":true,"id":3}"# + "\n")
        #expect(try client?.readJSONLine()["ok"] == true)
        #expect(counted.withLock { $0 } == [true, true, true])
        #expect(server.wantsChanges, "the watch answered is counted")
        client = nil
        try waitUntil(timeout: 10, "the closed watcher to go") { !server.wantsChanges }
        await server.shutdown()
    }
}
