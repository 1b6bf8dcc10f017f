import ControlProtocol
import ExpenseCore
import Posix

/// Why talking to the daemon failed, with the exit status it maps to.
struct ClientError: Error, CustomStringConvertible {
    let status: ExitStatus
    let message: String
    /// The request went out and no answer came: it may have been carried out.
    var unanswered = false
    var description: String { message }
}

/// One connection to expensed's control socket: JSON lines each way.
final class ControlClient {
    let socketPath: String
    /// Whose expenses every request asks for (`--account`, `--all-accounts`).
    let accounts: ControlRequest.AccountSelection
    private var socket: FileDescriptor
    private var buffer: [UInt8] = []
    /// Descriptors the daemon sent (`receipt`'s answer carries one).
    private var received: [FileDescriptor] = []
    private var nextID: Int64 = 1

    init(socketPath: String, accounts: ControlRequest.AccountSelection = .caller) throws {
        self.socketPath = socketPath
        self.accounts = accounts
        socket = try Self.connect(socketPath)
    }

    static func connect(_ path: String) throws -> FileDescriptor {
        do {
            return try UnixSocket.connect(path: path)
        } catch {
            if error.isNotFound || error.isConnectionRefused {
                throw ClientError(status: .unavailable, message: """
                    cannot connect to expensed at '\(path)': \(error.reason)
                    Is the daemon running? Start it with 'systemctl start expensed' (or 'expensed' in a shell),
                    or point --socket (or EXPENSED_SOCKET) at its socket.
                    """)
            } else if error.isNameTooLong {
                throw ClientError(status: .usage, message: "cannot connect to expensed at '\(path)': the path is \(path.utf8.count) bytes; a Unix socket's path holds at most \(UnixSocket.maximumPathBytes)")
            } else if error.isPermissionDenied {
                throw ClientError(status: .noPermission, message: "cannot connect to expensed at '\(path)': \(error.reason); \(SocketRefusal.observe(path).explanation)")
            }
            throw ClientError(status: .unavailable, message: "cannot connect to expensed at '\(path)': \(error.reason)")
        }
    }

    /// Sends one request (with `descriptor` attached, for a receipt) and
    /// returns the daemon's `result` as `type`.
    /// - Throws: ``ClientError`` for an error answer, an answer that is not
    ///   `type`, or a broken connection.
    /// - Parameter atLeast: the least time the answer is waited for
    ///   (milliseconds), for a request that takes long by nature.
    func call<Result: ControlResult>(_ command: ControlRequest.Command, expecting type: Result.Type,
                                     passing descriptor: FileDescriptor? = nil, atLeast: Int32 = 0) throws -> Result {
        let limit = max(try Self.answerTimeoutMilliseconds(), atLeast)
        try send(command, passing: descriptor)
        guard let answer = try readLine(timeoutMilliseconds: limit) else {
            throw ClientError(status: .tempFailure, message: """
                no answer from expensed at '\(socketPath)' within \(Double(limit) / 1000) s; it may be starting, stuck, \
                or failing to start (see 'systemctl status expensed' and 'journalctl -u expensed')
                """, unanswered: true)
        }
        return try result(of: answer, as: type)
    }

    /// Sends one request and returns its `result` as `type` with the one
    /// descriptor that came with the answer.
    /// - Throws: ``ClientError`` as ``call(_:expecting:passing:)``, and
    ///   when a successful answer came without exactly one descriptor.
    func callReceivingDescriptor<Result: ControlResult>(_ command: ControlRequest.Command, expecting type: Result.Type) throws
        -> (Result, FileDescriptor) {
        received = []
        let result = try call(command, expecting: type)
        defer { received = [] }
        guard received.count == 1 else {
            throw ClientError(status: .software, message: "expensed answered with \(received.count) descriptors, not the one the answer needs; are both the same version?")
        }
        return (result, received[0])
    }

    /// How long one answer may take: `EXPENSECTL_ANSWER_TIMEOUT` seconds,
    /// else 30. A daemon answers in milliseconds; only one that is stuck,
    /// or a socket whose daemon keeps failing to start, takes this long.
    static func answerTimeoutMilliseconds() throws -> Int32 {
        guard let text = Environment["EXPENSECTL_ANSWER_TIMEOUT"] else { return 30_000 }
        let range = "from 0.1 to 86400 (or unset, for 30)"
        guard !text.isEmpty else {
            throw ClientError(status: .usage, message: "EXPENSECTL_ANSWER_TIMEOUT is set but empty; it must be a number of seconds \(range)")
        }
        guard let milliseconds = DurationText.milliseconds(text), (100...86_400_000).contains(milliseconds) else {
            throw ClientError(status: .usage, message: "EXPENSECTL_ANSWER_TIMEOUT must be a number of seconds \(range), not '\(text.prefix(64).description.escapingControlCharacters())'")
        }
        return Int32(milliseconds)
    }

    /// Sends one request without waiting for the answer.
    func send(_ command: ControlRequest.Command, passing descriptor: FileDescriptor? = nil) throws {
        let request = ControlRequest(id: .integer(nextID), command: command, accounts: accounts)
        nextID += 1
        var line = request.json.serializedBytes()
        line.append(0x0A)
        do {
            try UnixSocket.send(socket, line, passing: descriptor)
        } catch {
            // A refused peer gets one error line and the connection closes,
            // possibly before our request was written: that line is the reason.
            if let refusal = try? readLine(), case .failure(let failure)? = try? ControlResponse(json: refusal) {
                throw Self.clientError(failure)
            }
            throw ClientError(status: .ioError, message: "lost the connection to expensed: \(error.reason)")
        }
    }

    /// The next line, or nil when none is complete within `timeoutMilliseconds`.
    func readLine(timeoutMilliseconds: Int32) throws -> JSONValue? {
        try readLine(until: Clock.monotonicNanoseconds + UInt64(timeoutMilliseconds) * 1_000_000)
    }

    /// The next line from the daemon, parsed; waits as long as it takes.
    func readLine() throws -> JSONValue {
        // Only nil at the deadline, and there is none.
        try readLine(until: nil)!
    }

    private func readLine(until deadline: UInt64?) throws -> JSONValue? {
        while true {
            if let newline = buffer.firstIndex(of: 0x0A) {
                let line = Array(buffer[..<newline])
                buffer.removeFirst(newline + 1)
                do {
                    return try JSONValue.parse(line)
                } catch {
                    throw ClientError(status: .software, message: "expensed sent a line that is not JSON: \(error.message)")
                }
            }
            if let deadline {
                let now = Clock.monotonicNanoseconds
                guard now < deadline else { return nil }
                let wait = Int32(min((deadline - now) / 1_000_000 + 1, 60_000))
                let ready = (try? Poll.wait([(socket, .readable)], timeoutMilliseconds: wait)) ?? []
                if ready.first?.isEmpty ?? true { continue }
            }
            var chunk = [UInt8](repeating: 0, count: 65536)
            let n: Int
            do {
                let got = try UnixSocket.receive(socket, into: &chunk)
                n = got.count
                received += got.descriptors
            } catch {
                throw ClientError(status: .ioError, message: "lost the connection to expensed: \(error.reason)")
            }
            if n == 0 {
                throw ClientError(status: .ioError, message: "expensed closed the connection before answering")
            }
            buffer.append(contentsOf: chunk[0..<n])
        }
    }

    /// The `result` of a response line as `type`, or its error as a ``ClientError``.
    func result<Result: ControlResult>(of response: JSONValue, as type: Result.Type) throws -> Result {
        do {
            return try ControlResponse(json: response).result(as: type)
        } catch let failure as ControlFailure {
            throw Self.clientError(failure)
        } catch {
            throw ClientError(status: .software, message: "expensed sent an answer this expensectl does not understand (\(error)); are both the same version?")
        }
    }

    /// What an error answer means to the person who ran the command.
    static func clientError(_ failure: ControlFailure) -> ClientError {
        if failure.code == .invalidField && failure.field == "ref" {
            // An id no expense can have: to a person, simply no such expense.
            return ClientError(status: .refused, message: "that is not an expense id: use a transaction id (cp-…), a client UUID, or a prefix of one")
        }
        return ClientError(status: ExitStatus(errorCode: failure.code), message: failure.message)
    }
}
