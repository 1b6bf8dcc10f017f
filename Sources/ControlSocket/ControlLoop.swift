import ControlProtocol
import ExpenseCore
import Posix

/// The socket thread's state: touched only by that thread.
final class ControlLoop {
    let server: ControlServer
    var connections: [ConnectionID: Connection] = [:]
    var nextID: ConnectionID = 1
    var listening = true
    var receiveBuffer = [UInt8](repeating: 0, count: 64 * 1024)
    /// Stop reading from a client whose unread answers pass this (backpressure).
    static let outputHighWater = 1 << 20
    /// Descriptors one connection may have waiting for their lines.
    static let maxPendingDescriptors = 8
    /// After `accept` ran out of descriptors, the listener rests until then.
    var acceptPausedUntil: UInt64 = 0
    /// The newest summary published for watchers, and its version.
    var newestSummary: (summaries: [AccountScope: QueueSummary], version: Int)?
    /// The recent changes, for watchers of changes.
    var ring = ChangeRing()
    /// A watcher of changes gets more only while less than this waits for it:
    /// the rest stays in the ring, so its buffer stays small.
    static let changeOutputLimit = 64 * 1024

    final class Connection {
        let id: ConnectionID
        let socket: FileDescriptor
        let peer: PeerCredentials
        /// Bytes received and not yet framed; `inputStart` is the stream
        /// offset of `input[0]`, so descriptors can be matched to lines.
        var input: [UInt8] = []
        var inputStart: Int64 = 0
        /// Descriptors received, each with the stream offset of the byte it came with.
        var descriptors: [(offset: Int64, fd: FileDescriptor)] = []
        /// Skipping the rest of a line that was too long.
        var discarding = false
        var output: [UInt8] = []
        /// Descriptors to send, each with the first byte of its answer's
        /// line (an offset into `output`): `sendmsg` attaches it there.
        var outgoing: [(offset: Int, fd: FileDescriptor)] = []
        var inFlight = false
        var watchID: JSONValue?
        /// Whose queue a watcher follows.
        var watchScope = AccountScope.all
        /// Asked to watch; counted as a watcher from then on, so no change
        /// goes unpublished while its first answer is being made.
        var watchPending = false
        var sentSummaryVersion = 0
        /// For a watcher of changes: the sequence number of the next change
        /// it is owed (set when its request was framed, so none made while
        /// it was answered is lost).
        var changeCursor: Int64?
        /// How many changes in its scope it was given or told it missed
        /// (``ChangeRing/Counts/last(in:)`` when it began): what it is told
        /// it missed is the rest, its own account's alone for one account.
        var changesCounted: Int64 = 0
        /// The counts when its request was framed, until its scope is known.
        var countsAtRequest = ChangeRing.Counts()
        var watchesChanges = false
        var peerClosed = false
        var closeWhenFlushed = false
        /// When the last complete request arrived or answer went out: the
        /// idle timeout counts from here, so dribbling bytes does not keep
        /// a connection open.
        var lastActivity = Clock.monotonicNanoseconds
        /// When waiting output last shrank, or began to wait: a peer that
        /// reads none of it for the idle timeout is dropped, so one that
        /// only writes cannot hold the connection (and its buffers) forever.
        var lastWriteProgress = Clock.monotonicNanoseconds

        init(id: ConnectionID, socket: FileDescriptor, peer: PeerCredentials) {
            self.id = id
            self.socket = socket
            self.peer = peer
        }

        var isWatching: Bool { watchID != nil }

        func send(_ value: JSONValue) {
            var line = value.serializedBytes()
            line.append(0x0A)
            queue(line)
        }

        func queue(_ line: [UInt8]) {
            if output.isEmpty { lastWriteProgress = Clock.monotonicNanoseconds }
            output.append(contentsOf: line)
        }
    }

    /// Takes a request without the hop to the handlers' tasks, when it can.
    let direct: (@Sendable (IncomingRequest) -> Bool)?

    init(server: ControlServer, direct: (@Sendable (IncomingRequest) -> Bool)?) {
        self.server = server
        self.direct = direct
    }

    func run() {
        while true {
            if !handleWakeup() { return }
            if !listening && connections.isEmpty { return }
            var entries: [(FileDescriptor, Poll.Events)] = [(server.wakeup.descriptor, .readable)]
            var ids: [ConnectionID?] = [nil]
            let accepting = listening && Clock.monotonicNanoseconds >= acceptPausedUntil
            if accepting {
                entries.append((server.listener, .readable))
                ids.append(nil)
            }
            for connection in connections.values {
                var events: Poll.Events = []
                let wantsInput = connection.isWatching || (!connection.inFlight && !connection.closeWhenFlushed && connection.output.count < Self.outputHighWater)
                if wantsInput && !connection.peerClosed { events.insert(.readable) }
                if !connection.output.isEmpty { events.insert(.writable) }
                // A hung-up peer is reported whatever is asked: once seen,
                // leave it out until there is something to write.
                if events.isEmpty && connection.peerClosed { continue }
                entries.append((connection.socket, events))
                ids.append(connection.id)
            }
            let ready: [Poll.Events]
            do {
                ready = try Poll.wait(entries, timeoutMilliseconds: pollTimeout())
            } catch {
                server.logger.error("Failed to poll control sockets: \(error)")
                return
            }
            if accepting && ready[1].contains(.readable) { acceptConnections() }
            for (index, events) in ready.enumerated() where !events.isEmpty {
                guard let id = ids[index], let connection = connections[id] else { continue }
                if events.contains(.writable) { flush(connection) }
                if !events.intersection([.readable, .hangUp, .error]).isEmpty { receive(connection) }
            }
            enforceTimeouts()
            for connection in Array(connections.values) { processLines(connection); closeIfDone(connection) }
            offerNewestSummary()
            offerChanges()
        }
    }

    /// Takes the handlers' answers, new summaries and pings. Returns false
    /// when the loop should end right away.
    private func handleWakeup() -> Bool {
        server.wakeup.drain()
        let (responses, summaries, version, stopping, pings, changes, lastAccountSeq) = server.shared.withLock { s in
            defer { s.responses = []; s.pings = []; s.changes = [] }
            return (s.responses, s.summaries, s.summaryVersion, s.stopping, s.pings, s.changes, s.changes.isEmpty ? nil : s.lastAccountSeq)
        }
        if let lastAccountSeq { ring.append(changes, byAccount: lastAccountSeq) }
        for (id, line, action, descriptor) in responses {
            guard let connection = connections[id] else { continue }
            if let descriptor { connection.outgoing.append((connection.output.count, descriptor)) }
            connection.queue(line)
            connection.inFlight = false
            connection.lastActivity = Clock.monotonicNanoseconds
            if case .watch(let watchID, let seen, let scope, let changes) = action {
                connection.watchID = watchID
                connection.watchScope = scope
                connection.watchPending = false
                connection.sentSummaryVersion = seen
                connection.watchesChanges = changes
                if changes { connection.changesCounted = connection.countsAtRequest.last(in: scope) }
            } else if connection.watchPending {
                // Its watch was refused (an account it may not see): it
                // watches nothing, and the store need not make changes for it.
                connection.watchPending = false
                stopCounting(connection)
            }
        }
        if version > 0 { newestSummary = (summaries, version) }
        for ping in pings { ping() }
        // Lines that arrived while a request was in flight are waiting in
        // the buffer; no poll event will announce them again.
        for (id, _, _, _) in responses {
            if let connection = connections[id] { processLines(connection) }
        }
        if stopping && listening {
            listening = false
            for connection in Array(connections.values) {
                if connection.isWatching || !connection.inFlight { close(connection) }
                else { connection.closeWhenFlushed = true }
            }
        }
        for connection in Array(connections.values) { flush(connection); closeIfDone(connection) }
        offerNewestSummary()
        offerChanges()
        return true
    }

    /// Sends each watcher of changes those after its cursor that are in its
    /// scope, while little waits for it; one the ring lapped first gets a
    /// line saying how many it missed. Never more than a ring is kept.
    /// Nothing at all while earlier output waits, not even a count of what
    /// it missed: that would grow with every change.
    private func offerChanges() {
        for connection in connections.values where connection.isWatching && connection.watchesChanges {
            // Until the socket takes no more: with its output all written,
            // no poll event would come back for the rest.
            while connections[connection.id] != nil && connection.output.isEmpty && connection.changeCursor.map({ $0 < ring.nextSeq }) == true {
                offerChanges(to: connection)
            }
        }
    }

    /// Up to ``changeOutputLimit`` of them, written as far as the socket takes.
    private func offerChanges(to connection: Connection) {
        guard var cursor = connection.changeCursor else { return }
        let scope = connection.watchScope
        func tellMissed(upTo ordinal: Int64) {
            let missed = ordinal - connection.changesCounted
            guard missed > 0 else { return }
            connection.send(ControlResponse.success(id: connection.watchID ?? .null, result: ["missed": .integer(missed)]).json)
            connection.changesCounted = ordinal
        }
        // What the ring lapped, or never held, shows as a gap in the count.
        cursor = max(cursor, ring.firstSeq)
        while cursor < ring.nextSeq && connection.output.count < Self.changeOutputLimit {
            defer { cursor += 1 }
            guard let change = ring.change(cursor), scope.contains(change.account) else { continue }
            let ordinal = ChangeRing.ordinal(of: change, in: scope)
            tellMissed(upTo: ordinal - 1)
            // Numbered within its scope: a watcher of one account learns nothing of others'.
            var numbered = change
            numbered.seq = ordinal
            connection.send(ControlResponse.success(id: connection.watchID ?? .null, result: numbered.json).json)
            connection.changesCounted = ordinal
        }
        if cursor == ring.nextSeq { tellMissed(upTo: ring.counts.last(in: scope)) }
        connection.changeCursor = cursor
        flush(connection)
    }

    /// Sends the newest summary to each watcher that lacks it and has
    /// nothing left to write: one still writing skips to whatever is newest
    /// once its output drains. So this runs after every flush (the end of a
    /// wakeup, the end of a poll round), not only when a summary is
    /// published: a watcher whose first answer was still being written when
    /// the last summary came would otherwise never get it (`sync --wait`
    /// missed a refusal that way and waited out its timeout).
    private func offerNewestSummary() {
        guard let (summaries, version) = newestSummary else { return }
        for connection in connections.values where connection.isWatching && !connection.watchesChanges && connection.sentSummaryVersion < version
            && connection.output.isEmpty {
            // A version without this watcher's scope (published before it
            // was first watched) has nothing for it: the next one will.
            guard let summary = summaries[connection.watchScope] else { continue }
            connection.send(ControlResponse(id: connection.watchID ?? .null, summary).json)
            connection.sentSummaryVersion = version
            flush(connection)
        }
    }

    /// Until the next deadline `enforceTimeouts` acts on; each one it
    /// acts on is gone afterwards, so the loop never spins on a past one.
    private func pollTimeout() -> Int32 {
        var earliest: UInt64?
        for connection in connections.values {
            // With a request in a handler, a stalled write waits for its answer.
            let deadlines = [connection.inFlight ? nil : writeDeadline(connection), requestDeadline(connection)]
            for case let deadline? in deadlines { earliest = min(earliest ?? deadline, deadline) }
        }
        let now = Clock.monotonicNanoseconds
        if listening && acceptPausedUntil > now {
            earliest = min(earliest ?? acceptPausedUntil, acceptPausedUntil)
        }
        guard let earliest else { return -1 }
        return earliest <= now ? 0 : Int32(min((earliest - now) / 1_000_000 + 1, 60_000))
    }

    private func acceptConnections() {
        while true {
            let socket: FileDescriptor
            do {
                guard let accepted = try UnixSocket.accept(server.listener) else { return }
                socket = accepted
            } catch {
                // Out of descriptors (EMFILE, ENFILE) or memory: the listener
                // stays readable, so rest it a second instead of spinning.
                server.logger.warning("Failed to accept control connection: \(error); pausing new connections for 1 s")
                acceptPausedUntil = Clock.monotonicNanoseconds + 1_000_000_000
                return
            }
            guard let peer = try? UnixSocket.peerCredentials(socket) else { continue }
            if !server.access.allows(peer) {
                server.logger.notice("Refused control connection from uid \(peer.uid) pid \(peer.pid): not allowed")
                refuse(socket, ControlFailure(.permissionDenied, server.access.refusal(peer)))
                continue
            }
            if connections.count >= server.limits.maxConnections {
                server.logger.warning("Refused control connection from pid \(peer.pid): \(connections.count) connections open (limit \(server.limits.maxConnections))")
                refuse(socket, ControlFailure(.tooManyConnections, "too many connections (limit \(server.limits.maxConnections)); try again later"))
                continue
            }
            let connection = Connection(id: nextID, socket: socket, peer: peer)
            nextID += 1
            connections[connection.id] = connection
        }
    }

    /// Writes one error line (best effort, never blocking) and drops the connection.
    private func refuse(_ socket: FileDescriptor, _ failure: ControlFailure) {
        var line = failure.json.serializedBytes()
        line.append(0x0A)
        _ = try? UnixSocket.sendSome(socket, line)
    }

    private func receive(_ connection: Connection) {
        let result: (count: Int, descriptors: [FileDescriptor])
        do {
            result = try UnixSocket.receive(connection.socket, into: &receiveBuffer)
        } catch {
            if error.wouldBlock { return }
            close(connection)
            return
        }
        if result.count == 0 {
            connection.peerClosed = true
            return
        }
        if connection.isWatching { return }
        // A read returns at most one sendmsg's descriptors, with the last
        // bytes it returns (earlier data without descriptors may come in
        // the same read): they belong to the line holding the last byte.
        let offset = connection.inputStart + Int64(connection.input.count + result.count - 1)
        for fd in result.descriptors { connection.descriptors.append((offset, fd)) }
        connection.input.append(contentsOf: receiveBuffer[0..<result.count])
        if connection.descriptors.count > Self.maxPendingDescriptors {
            connection.descriptors = []
            connection.send(ControlFailure(.unexpectedDescriptor, "more than \(Self.maxPendingDescriptors) descriptors waiting for their requests; closing").json)
            connection.closeWhenFlushed = true
        }
    }

    /// Frames complete lines and hands the next request to the handlers;
    /// malformed lines are answered here.
    private func processLines(_ connection: Connection) {
        while !connection.inFlight && !connection.isWatching && !connection.closeWhenFlushed && listening {
            guard let newline = connection.input.firstIndex(of: 0x0A) else {
                if connection.input.count > server.limits.lineMaxBytes {
                    if !connection.discarding {
                        connection.send(ControlFailure(.lineTooLong, "request line is longer than the limit of \(server.limits.lineMaxBytes) bytes").json)
                    }
                    connection.discarding = true
                    consume(connection, count: connection.input.count)
                } else if connection.discarding {
                    consume(connection, count: connection.input.count)
                }
                return
            }
            let lineStart = connection.inputStart
            let lineEnd = lineStart + Int64(newline) + 1
            var line = Array(connection.input[0..<newline])
            let attached = connection.descriptors.filter { $0.offset < lineEnd }.map(\.fd)
            connection.descriptors.removeAll { $0.offset < lineEnd }
            consume(connection, count: newline + 1)
            connection.lastActivity = Clock.monotonicNanoseconds
            if connection.discarding || line.count > server.limits.lineMaxBytes {
                if !connection.discarding {
                    connection.send(ControlFailure(.lineTooLong, "request line is longer than the limit of \(server.limits.lineMaxBytes) bytes").json)
                }
                connection.discarding = false
                continue
            }
            if line.last == 0x0D { line.removeLast() }
            if line.allSatisfy({ $0 == 0x20 || $0 == 0x09 }) { continue }
            switch ControlRequest.parse(line) {
            case .failure(let failure):
                connection.send(failure.json)
            case .success(let request):
                var receipt: FileDescriptor?
                if request.command.takesDescriptor {
                    guard attached.count == 1 else {
                        connection.send(ControlFailure(id: request.id, .receiptMissing, attached.isEmpty
                            ? "\"receipt\": true needs the file's descriptor sent with the line (SCM_RIGHTS)"
                            : "one receipt descriptor expected, \(attached.count) received").json)
                        continue
                    }
                    receipt = attached[0]
                } else if !attached.isEmpty {
                    connection.send(ControlFailure(id: request.id, .unexpectedDescriptor, "a descriptor came with a request that takes none").json)
                    continue
                }
                connection.inFlight = true
                if case .watch(let changes) = request.command, !connection.watchPending {
                    // Counted once: summaries are made while anyone watches
                    // them, changes while anyone watches changes.
                    connection.watchPending = true
                    if changes {
                        connection.changeCursor = ring.nextSeq
                        connection.countsAtRequest = ring.counts
                        server.changeWatcherCount.add(1, ordering: .relaxed)
                    } else {
                        server.watcherCount.add(1, ordering: .relaxed)
                    }
                }
                let incoming = IncomingRequest(connection: connection.id, request: request, receipt: receipt, peer: connection.peer)
                if direct?(incoming) != true { server.continuation.yield(incoming) }
            }
        }
    }

    private func consume(_ connection: Connection, count: Int) {
        connection.input.removeFirst(count)
        connection.inputStart += Int64(count)
        // Descriptors that came with bytes now gone (a skipped over-long
        // line) go with them.
        connection.descriptors.removeAll { $0.offset < connection.inputStart }
    }

    /// What the next write of a connection's output carries: its bytes up
    /// to `end`, and the first waiting descriptor when `passing` (its line
    /// starts the output). A write never goes past the start of a line
    /// that has a descriptor of its own: that descriptor must go with the
    /// write that carries the line's first byte.
    /// - Parameter descriptorOffsets: where the lines with a descriptor
    ///   start in the output, in order.
    static func nextWrite(outputCount: Int, descriptorOffsets: [Int]) -> (end: Int, passing: Bool) {
        guard let first = descriptorOffsets.first else { return (outputCount, false) }
        if first == 0 { return (descriptorOffsets.dropFirst().first ?? outputCount, true) }
        return (first, false)
    }

    private func flush(_ connection: Connection) {
        while !connection.output.isEmpty {
            do {
                let n: Int
                let (end, passing) = Self.nextWrite(outputCount: connection.output.count, descriptorOffsets: connection.outgoing.map(\.offset))
                let bytes = end == connection.output.count ? connection.output : Array(connection.output[..<end])
                if passing, let next = connection.outgoing.first {
                    n = try UnixSocket.sendSome(connection.socket, bytes, passing: next.fd)
                    connection.outgoing.removeFirst()
                } else {
                    n = try UnixSocket.sendSome(connection.socket, bytes)
                }
                for index in connection.outgoing.indices { connection.outgoing[index].offset -= n }
                connection.output.removeFirst(n)
                if n > 0 { connection.lastWriteProgress = Clock.monotonicNanoseconds }
            } catch {
                if error.wouldBlock { return }
                close(connection)
                return
            }
        }
    }

    /// When waiting answers that the peer reads none of make the
    /// connection stalled: the idle timeout after the last write progress.
    private func writeDeadline(_ connection: Connection) -> UInt64? {
        connection.output.isEmpty ? nil : connection.lastWriteProgress + UInt64(server.limits.idleTimeoutMilliseconds) * 1_000_000
    }

    /// When a connection that owes us its next request has idled too long
    /// (none while a request is handled, for a watcher, or once closing).
    private func requestDeadline(_ connection: Connection) -> UInt64? {
        guard !connection.inFlight && !connection.isWatching && !connection.closeWhenFlushed else { return nil }
        return connection.lastActivity + UInt64(server.limits.idleTimeoutMilliseconds) * 1_000_000
    }

    /// Closes connections whose peer read none of their waiting answers for
    /// the idle timeout (no last word: it would not be read either), once
    /// no request of theirs is in a handler's hands; and tells connections
    /// without a complete request for as long that they are closing.
    private func enforceTimeouts() {
        let now = Clock.monotonicNanoseconds
        for connection in Array(connections.values) {
            if let deadline = writeDeadline(connection), now >= deadline {
                // Read no more; closed when the handler's answer is in.
                connection.closeWhenFlushed = true
                if connection.inFlight { continue }
                server.logger.notice("Closed control connection from pid \(connection.peer.pid): it read none of \(connection.output.count) bytes of answers for \(server.limits.idleTimeoutMilliseconds) ms")
                close(connection)
                continue
            }
            if let deadline = requestDeadline(connection), now >= deadline {
                connection.send(ControlFailure(.idleTimeout, "no complete request for \(server.limits.idleTimeoutMilliseconds) ms; closing").json)
                connection.closeWhenFlushed = true
                flush(connection)
            }
        }
    }

    private func closeIfDone(_ connection: Connection) {
        guard connections[connection.id] != nil, connection.output.isEmpty, !connection.inFlight else { return }
        if connection.closeWhenFlushed || (connection.peerClosed && (connection.isWatching || connection.input.firstIndex(of: 0x0A) == nil)) {
            close(connection)
        }
    }

    private func close(_ connection: Connection) {
        guard connections.removeValue(forKey: connection.id) != nil else { return }
        if connection.isWatching || connection.watchPending { stopCounting(connection) }
    }

    /// Takes a connection that watches, or asked to, out of the counts.
    private func stopCounting(_ connection: Connection) {
        if connection.changeCursor != nil {
            connection.changeCursor = nil
            server.changeWatcherCount.subtract(1, ordering: .relaxed)
        } else {
            server.watcherCount.subtract(1, ordering: .relaxed)
        }
    }
}
