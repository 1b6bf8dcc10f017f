import HTTPD
import Posix
import ServerAPI
import ServerStorage

/// One request to the web interface, on its connection's thread: reads a
/// form body (at most ``WebSettings/formMaxBytes``), finds the session,
/// answers through ``WebPages``, and logs the access line.
final class WebExchange: HTTPExchange {
    private let service: WebService
    private var request: WebRequest
    private var body: [UInt8] = []
    private var isOverLimit = false
    private let startNanoseconds = Clock.monotonicNanoseconds
    private var transactionID: String?

    init(service: WebService, head: HTTPRequestHead) {
        self.service = service
        request = WebRequest(head: head)
    }

    func start() -> HTTPAction? {
        guard request.head.method == "POST" else {
            guard !request.head.hasBody else { return .respond(errorResponse(WebError(400, "Only a form (POST) may carry a body."))) }
            return finish()
        }
        if let length = request.head.contentLength, length > Int64(service.settings.formMaxBytes) {
            return .respond(errorResponse(WebError(413, "The form is too large.")))
        }
        return nil
    }

    func receive(_ bytes: UnsafeRawBufferPointer) -> Bool {
        guard body.count + bytes.count <= service.settings.formMaxBytes else {
            isOverLimit = true
            return false
        }
        body.append(contentsOf: bytes)
        return true
    }

    func finish() -> HTTPAction {
        do {
            if request.head.method == "POST" {
                let type = request.head.value(of: "Content-Type")?.split(separator: ";").first?.lowercased()
                guard type?.trimmingPrefix(" ") == "application/x-www-form-urlencoded" else {
                    throw WebError(415, "A form must be sent as application/x-www-form-urlencoded.")
                }
                guard let form = RequestTarget.parseQuery(Substring(String(decoding: body, as: UTF8.self))),
                      String(validating: body, as: UTF8.self) != nil else {
                    throw WebError(400, "The form is not valid percent-encoded UTF-8.")
                }
                request.form = form
            }
            if let id = request.cookie(WebPages.sessionCookie) {
                request.sessionID = id
                request.session = try service.sessions.session(id: id)
            }
            var pages = WebPages(service: service, request: request)
            var response = try pages.respond()
            transactionID = pages.transactionID
            if request.head.method == "HEAD" { response.body = .bytes([]) }
            return .respond(Self.secured(response))
        } catch let web as WebError {
            return .respond(errorResponse(web))
        } catch let storage as StorageError where storage.code == .unavailable {
            service.log.log(.error, "Failed to serve \(AccessEntry.printable(request.target.path, limit: 200)): \(storage)")
            return .respond(errorResponse(WebError(503, "The database is unavailable. Try again in a moment.")))
        } catch {
            service.log.log(.error, "Failed to serve \(AccessEntry.printable(request.target.path, limit: 200)): \(error)")
            return .respond(errorResponse(WebError(500, "Something went wrong on the server; it was logged.")))
        }
    }

    func complete(status: Int?, termination: HTTPTermination) {
        service.log.access(AccessEntry(method: request.head.method, path: request.target.path, status: status,
                                       durationNanoseconds: Clock.monotonicNanoseconds - startNanoseconds,
                                       transactionID: transactionID,
                                       note: isOverLimit ? "closed=body-too-large" : (status == nil ? termination.accessNote : nil)))
    }

    private func errorResponse(_ error: WebError) -> HTTPResponse {
        Self.secured(WebPages(service: service, request: request).errorPage(error))
    }

    /// The headers every answer of the web interface carries: no script
    /// at all, nothing framed, no referrer, nothing sniffed, nothing kept
    /// in a cache (so the back button after signing out shows nothing).
    /// A receipt's own policy (a sandbox) is kept.
    static func secured(_ response: HTTPResponse) -> HTTPResponse {
        var response = response
        if !response.headers.contains(where: { $0.name == "Content-Security-Policy" }) {
            response.headers.append(HTTPHeader("Content-Security-Policy", contentSecurityPolicy))
        }
        response.headers += [
            HTTPHeader("X-Content-Type-Options", "nosniff"),
            HTTPHeader("X-Frame-Options", "DENY"),
            HTTPHeader("Referrer-Policy", "no-referrer"),
            HTTPHeader("Cache-Control", "no-store"),
            HTTPHeader("Cross-Origin-Opener-Policy", "same-origin"),
        ]
        return response
    }

    static let contentSecurityPolicy =
        "default-src 'none'; img-src 'self'; style-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
}
