import Foundation

/// `application/x-www-form-urlencoded` fields in a stable order.
public struct FormBody: Sendable {
    public var fields: [(String, String)]

    public init(_ fields: [(String, String)]) { self.fields = fields }
    public init(_ fields: [String: String]) { self.fields = fields.sorted { $0.key < $1.key } }

    public var bytes: [UInt8] {
        // RFC 3986's unreserved characters stay; every other byte is %XX.
        let allowed = CharacterSet(charactersIn: "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")
        let encode = { (s: String) in s.addingPercentEncoding(withAllowedCharacters: allowed) ?? "" }
        return Array(fields.map { "\(encode($0.0))=\(encode($0.1))" }.joined(separator: "&").utf8)
    }
}
