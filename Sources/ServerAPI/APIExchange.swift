import ExpenseCore
import HTTPD
import Posix
import ServerStorage

/// One request through the API: fault injection, authentication, routing,
/// then the endpoint's own steps (``APIExchange+Endpoints``). Runs on the
/// connection's thread, where blocking on the store is fine.
final class APIExchange: HTTPExchange {
    let service: APIService
    let head: HTTPRequestHead
    let target: RequestTarget
    private let startNanoseconds = Clock.monotonicNanoseconds

    /// Faults drawn for this request.
    private var faults = FaultInjector.Decision()
    /// For the access log.
    var transactionID: String?
    var replayed = false
    private var note: String?
    private var intendedStatus: Int?

    /// The key this request holds as in progress until it is answered.
    private var claim: (user: Int64, key: String)?
    /// What receives the body, if the endpoint reads one.
    var receiver: Receiver?
    /// What the endpoint does once the body is complete.
    var completion: (() throws -> HTTPResponse)?

    enum Receiver {
        case json(JSONReceiver)
        case receipt(ReceiptUpload)
        case append(UploadAppend)
    }

    init(service: APIService, head: HTTPRequestHead) {
        self.service = service
        self.head = head
        target = RequestTarget(head.target)
    }

    // MARK: HTTPExchange

    func start() -> HTTPAction? {
        let route = Route(path: target.path)
        if route != .health {
            faults = service.faults.decide()
            if faults.dropRequest {
                note = "fault=drop-request"
                return .close
            }
            let delay = service.faults.options.delayMilliseconds
            if delay > 0 { CurrentProcess.sleep(milliseconds: delay) }
            if faults.error {
                note = "fault=error"
                return deliver(APIError.serviceUnavailable.response)
            }
        }
        do {
            try begin(route)
            return completion == nil || receiver != nil ? nil : finish()
        } catch {
            // Refused before its body: the key is free again before the
            // answer leaves, so the client's next request never finds it held.
            releaseClaim()
            return deliver(response(for: error))
        }
    }

    func receive(_ bytes: UnsafeRawBufferPointer) -> Bool {
        if Clock.monotonicNanoseconds - startNanoseconds > UInt64(service.settings.requestTimeoutSeconds) * 1_000_000_000 {
            note = "closed=request-timeout"
            return false
        }
        switch receiver {
        case .json(let json):
            if !json.receive(bytes) {
                note = "closed=body-too-large"
                return false
            }
        case .receipt(let upload):
            if !upload.receive(bytes) {
                note = "closed=body-too-large"
                return false
            }
        case .append(let append):
            if !append.receive(bytes) {
                note = "closed=body-too-large"
                return false
            }
        case nil:
            // A body nobody asked for (a DELETE with one, say) is ignored,
            // up to the JSON limit.
            let json = JSONReceiver(limit: service.settings.jsonMaxBytes)
            receiver = .json(json)
            return json.receive(bytes)
        }
        return true
    }

    func finish() -> HTTPAction {
        defer { releaseClaim() }
        guard let completion else { return deliver(APIError.internalError.response) }
        do {
            if case .json(let json) = receiver, json.isOverLimit {
                throw APIError.payloadTooLarge(limit: Int64(json.limit), what: "the request body")
            }
            return deliver(try completion())
        } catch {
            return deliver(response(for: error))
        }
    }

    func complete(status: Int?, termination: HTTPTermination) {
        // The bytes of an append that was cut are kept before its claim
        // goes: the next request on the upload starts after them.
        if case .append(let append) = receiver { keepCutAppend(append) }
        releaseClaim()
        if case .receipt(let upload) = receiver { upload.discard() }
        if status == nil && note == nil { note = termination.note }
        service.log.access(AccessEntry(
            method: head.method, path: target.path, status: status ?? intendedStatus,
            durationNanoseconds: Clock.monotonicNanoseconds - startNanoseconds,
            transactionID: transactionID, replayed: replayed, note: note))
    }

    // MARK: Steps

    /// Authenticates and routes; leaves `completion` (and `receiver` when a
    /// body is expected) set for the endpoint.
    private func begin(_ route: Route?) throws {
        // libmicrohttpd is told to be lenient here so that the answer is
        // ours, with a contract error body (RFC 9112 §3.2).
        if head.version == "HTTP/1.1" && head.values(of: "Host").count != 1 {
            throw APIError(400, "invalid_request", "an HTTP/1.1 request needs exactly one Host header")
        }
        if route == .health {
            guard head.method == "GET" || head.method == "HEAD" else {
                throw APIError.methodNotAllowed(head.method, allowed: Route.health.allowedMethods)
            }
            completion = { HTTPResponse(status: 200, headers: [jsonContentType], body: .bytes(Array(#"{"status":"ok"}"#.utf8))) }
            return
        }
        let user = try authenticate()
        guard let route else { throw APIError.notFound(AccessEntry.printable(target.path, limit: 200)) }
        guard route.allowedMethods.contains(head.method) else {
            throw APIError.methodNotAllowed(AccessEntry.printable(head.method, limit: 32), allowed: route.allowedMethods)
        }
        switch (route, head.method) {
        case (.expenses, "POST"): try beginCreate(user: user)
        case (.expenses, _): try beginList(user: user)
        case (.expense(let id), "PATCH"): try beginEdit(user: user, id: id)
        case (.expense(let id), "DELETE"): try beginDelete(user: user, id: id)
        case (.expense(let id), _): try beginRead(user: user, id: id)
        case (.receipt(let id), "PUT"): try beginUpload(user: user, id: id)
        case (.receipt(let id), "POST"): try beginUploadCreation(user: user, id: id)
        case (.upload(let id), "HEAD"): try beginUploadOffset(user: user, id: id)
        case (.upload(let id), "PATCH"): try beginUploadAppend(user: user, id: id)
        case (.upload(let id), _): try beginUploadCancel(user: user, id: id)
        case (.receipt(let id), _): try beginDownload(user: user, id: id)
        case (.health, _): break
        }
    }

    /// The user whose bearer token the request carries.
    /// - Throws: `401` for a missing, malformed or unknown token; the
    ///   store's error when it cannot be read (``response(for:)`` maps it).
    private func authenticate() throws -> Int64 {
        let values = head.values(of: "Authorization")
        guard let value = values.first else { throw APIError.unauthorized("this request needs Authorization: Bearer <token>") }
        guard values.count == 1 else { throw APIError.unauthorized("Authorization was sent more than once") }
        let parts = value.split(separator: " ", maxSplits: 1, omittingEmptySubsequences: true)
        guard parts.count == 2, parts[0].lowercased() == "bearer" else {
            throw APIError.unauthorized("Authorization must use the Bearer scheme")
        }
        let token = parts[1].trimmingCharacters(" \t")
        guard Self.isToken68(token) else { throw APIError.unauthorized("the bearer token is malformed") }
        guard let user = try service.accounts.user(forToken: String(token)) else { throw APIError.unauthorized("the bearer token is not valid") }
        return user
    }

    /// RFC 6750's `b64token`, at most 512 characters.
    static func isToken68(_ token: Substring) -> Bool {
        let bytes = Array(token.utf8)
        guard (1...512).contains(bytes.count) else { return false }
        var seenPadding = false
        for b in bytes {
            if b == UInt8(ascii: "=") { seenPadding = true; continue }
            if seenPadding { return false }
            let ok = (b >= 0x30 && b <= 0x39) || (b >= 0x41 && b <= 0x5A) || (b >= 0x61 && b <= 0x7A)
                || b == UInt8(ascii: "-") || b == UInt8(ascii: ".") || b == UInt8(ascii: "_")
                || b == UInt8(ascii: "~") || b == UInt8(ascii: "+") || b == UInt8(ascii: "/")
            if !ok { return false }
        }
        return true
    }

    /// Marks `key` as in progress for this request, for every server
    /// process on the database.
    /// - Throws: `409 request_in_progress` while another request holds it;
    ///   the storage's error when it cannot tell.
    func claim(user: Int64, key: String) throws {
        guard try service.storage.claim(user: user, key: key) else { throw APIError.requestInProgress }
        claim = (user, key)
    }

    private func releaseClaim() {
        if let claim { service.storage.release(user: claim.user, key: claim.key) }
        claim = nil
    }

    /// Sends `response`, unless a fault says to drop it.
    func deliver(_ response: HTTPResponse) -> HTTPAction {
        if faults.dropResponse {
            note = "fault=drop-response"
            intendedStatus = response.status
            return .close
        }
        return .respond(response)
    }

    /// The answer for an error: its own for an ``APIError``, the
    /// contract's for a storage answer (``APIError/init(_:)``); `503` for
    /// the storage being busy, full, unreachable or failing; `500` for
    /// anything else. The detail of those is logged, never sent.
    func response(for error: Error) -> HTTPResponse {
        if let api = error as? APIError { return api.response }
        if let storage = error as? StorageError, let api = APIError(storage) { return api.response }
        service.log.log(.error, "Failed to process \(AccessEntry.printable(head.method, limit: 32)) \(AccessEntry.printable(target.path, limit: 200))\(transactionID.map { " (\($0))" } ?? ""): \(error)")
        if let storage = error as? StorageError, storage.code == .unavailable { return APIError.storageUnavailable.response }
        return APIError.internalError.response
    }
}

extension Substring {
    func trimmingCharacters(_ set: String) -> Substring {
        var s = self
        while let c = s.first, set.contains(c) { s.removeFirst() }
        while let c = s.last, set.contains(c) { s.removeLast() }
        return s
    }
}
