import Foundation

/// A `multipart/form-data` body (RFC 7578): what fava's `add_document` reads.
public struct MultipartBody: Sendable {
    public let boundary = "expensed-\(UUID().uuidString)"
    private var parts: [UInt8] = []

    public init() {}

    /// `Content-Type: multipart/form-data; boundary=…`.
    public var contentType: (String, String) { ("Content-Type", "multipart/form-data; boundary=\(boundary)") }

    /// Adds a text field.
    public mutating func add(_ name: String, _ value: String) {
        parts += Array("--\(boundary)\r\nContent-Disposition: form-data; name=\"\(name)\"\r\n\r\n\(value)\r\n".utf8)
    }

    /// Adds a file field with the name the server stores it under.
    public mutating func addFile(_ name: String, filename: String, contentType: String, bytes: [UInt8]) {
        parts += Array("--\(boundary)\r\nContent-Disposition: form-data; name=\"\(name)\"; filename=\"\(filename)\"\r\nContent-Type: \(contentType)\r\n\r\n".utf8)
        parts += bytes + Array("\r\n".utf8)
    }

    public var bytes: [UInt8] { parts + Array("--\(boundary)--\r\n".utf8) }
}
