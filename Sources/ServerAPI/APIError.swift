import ExpenseCore
import HTTPD
import ServerStorage

/// An error answer (contract.md, "General"): a status, a snake_case code,
/// a message for people, and the field concerned when there is one.
struct APIError: Error, Sendable, CustomStringConvertible {
    let status: Int
    let code: String
    let message: String
    var field: String?
    var headers: [HTTPHeader] = []
    /// Numbers the client acts on (`expected_offset`), beside the message.
    var numbers: [(name: String, value: Int64)] = []

    init(_ status: Int, _ code: String, _ message: String, field: String? = nil, headers: [HTTPHeader] = []) {
        self.status = status
        self.code = code
        self.message = message
        self.field = field
        self.headers = headers
    }

    var description: String { "\(status) \(code): \(message)" }

    /// The contract's answer for what storage said, or `nil` when storage
    /// failed (``StorageError/Code/unavailable``, ``StorageError/Code/failed``):
    /// those are logged and answered `503` or `500`.
    init?(_ error: StorageError) {
        switch error.code {
        case .idempotencyKeyReused: self = .idempotencyKeyReused
        case .expenseNotFound: self = .expenseNotFound
        case .expenseDeleted: self = .expenseDeleted
        case .receiptNotFound: self = .receiptNotFound
        case .invalidField: self = .invalidField(error.field ?? "-", error.message)
        default: return nil
        }
    }

    /// The response that carries this error.
    var response: HTTPResponse {
        var writer = JSONWriter()
        writer.beginObject()
        writer.key("error")
        writer.beginObject()
        writer.member("code", code)
        writer.member("message", message)
        if let field { writer.member("field", field) }
        for number in numbers { writer.key(number.name); writer.integer(number.value) }
        writer.endObject()
        writer.endObject()
        return HTTPResponse(status: status, headers: [jsonContentType] + headers, body: .bytes(writer.bytes))
    }

    // MARK: The vocabulary (docs/server.md lists every code)

    static func unauthorized(_ message: String) -> APIError {
        APIError(401, "unauthorized", message, headers: [HTTPHeader("WWW-Authenticate", "Bearer realm=\"expense-server\"")])
    }
    static func notFound(_ path: String) -> APIError {
        APIError(404, "not_found", "no resource at \(path)")
    }
    static func methodNotAllowed(_ method: String, allowed: [String]) -> APIError {
        APIError(405, "method_not_allowed", "\(method) is not allowed here; allowed: \(allowed.joined(separator: ", "))",
                 headers: [HTTPHeader("Allow", allowed.joined(separator: ", "))])
    }
    static func idempotencyKeyRequired(_ message: String) -> APIError {
        APIError(400, "idempotency_key_required", message)
    }
    static let idempotencyKeyReused = APIError(422, "idempotency_key_reused",
        "this Idempotency-Key was already used for a different request")
    static let requestInProgress = APIError(409, "request_in_progress",
        "a request with this Idempotency-Key is still being processed; retry later")
    static let expenseNotFound = APIError(404, "expense_not_found", "no such expense")
    static let expenseDeleted = APIError(410, "expense_deleted", "the expense was deleted")
    static let receiptNotFound = APIError(404, "receipt_not_found", "the expense has no receipt")
    static func invalidField(_ field: String, _ reason: String) -> APIError {
        APIError(400, "invalid_field", "\(field): \(reason)", field: field)
    }
    static func invalidJSON(_ message: String) -> APIError {
        APIError(400, "invalid_json", message)
    }
    static func invalidParameter(_ name: String, _ reason: String) -> APIError {
        APIError(400, "invalid_parameter", "\(name): \(reason)", field: name)
    }
    static func payloadTooLarge(limit: Int64, what: String) -> APIError {
        let human = ByteCount.describe(limit)
        return APIError(413, "payload_too_large", "\(what) is larger than the limit of \(limit) bytes" + (human.hasSuffix(" bytes") ? "" : " (\(human))"))
    }
    static func unsupportedMediaType(_ message: String) -> APIError {
        APIError(415, "unsupported_media_type", message)
    }
    static let lengthRequired = APIError(411, "length_required", "a receipt upload needs a Content-Length header")
    static func digestInvalid(_ message: String) -> APIError {
        APIError(400, "digest_required", message)
    }
    /// The body is not the receipt kind its `Content-Type` names (a `PUT`'s,
    /// or a resumable upload's whole).
    static func receiptTypeMismatch(_ kind: ReceiptKind) -> APIError {
        APIError(415, "receipt_type_mismatch", "the bytes are not \(kind.contentType): their magic number does not match the Content-Type")
    }
    static let digestMismatch = APIError(400, "digest_mismatch", "the body does not match its Repr-Digest")
    static let uploadNotFound = APIError(404, "upload_not_found", "no such upload: it was completed, cancelled or expired")
    static func uploadFieldInvalid(_ name: String, _ reason: String) -> APIError {
        APIError(400, "invalid_upload_field", "\(name) \(reason)", field: name)
    }
    static func inconsistentUploadLength(_ message: String) -> APIError {
        APIError(400, "inconsistent_upload_length", message)
    }
    /// The draft's `mismatching-upload-offset` problem: the offset the
    /// server holds is in `Upload-Offset` and `expected_offset`.
    static func mismatchingUploadOffset(expected: Int64, provided: Int64) -> APIError {
        var error = APIError(409, "mismatching_upload_offset",
                             "the upload holds \(expected) bytes; this append starts at \(provided)",
                             headers: [HTTPHeader("Upload-Offset", String(expected))])
        error.numbers = [("expected_offset", expected), ("provided_offset", provided)]
        return error
    }
    static let serviceUnavailable = APIError(503, "service_unavailable", "the server is unavailable; retry later",
                                             headers: [HTTPHeader("Retry-After", "1")])
    static let storageUnavailable = APIError(503, "storage_unavailable", "the server could not store the request; retry later",
                                             headers: [HTTPHeader("Retry-After", "5")])
    static let internalError = APIError(500, "internal_error", "the server failed to process the request")
}

let jsonContentType = HTTPHeader("Content-Type", "application/json; charset=utf-8")

/// Sizes for people: "25 MiB", "64 KiB", "512 bytes".
enum ByteCount {
    static func describe(_ bytes: Int64) -> String {
        if bytes >= 1 << 20, bytes % (1 << 20) == 0 { return "\(bytes >> 20) MiB" }
        if bytes >= 1 << 10, bytes % (1 << 10) == 0 { return "\(bytes >> 10) KiB" }
        return "\(bytes) bytes"
    }
}
