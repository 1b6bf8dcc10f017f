import Digest
import ExpenseCore
import SQLite

/// Why a user could not be added.
enum UserError: Error, CustomStringConvertible {
    case invalidName(String)
    case exists(String)

    var description: String {
        switch self {
        case .invalidName(let name):
            "invalid user name \(CommandLineParser.quoted(name, limit: 64)): a user name is 1 to 64 of the ASCII letters A-Z and a-z, the digits 0-9, '.', '_', '-' and '@'"
        case .exists(let name): "user '\(name)' already exists"
        }
    }
}

extension ExpenseStore {
    /// Creates a user and returns its bearer token. Only the token's
    /// SHA-256 is stored: the token cannot be shown again.
    func addUser(named name: String) throws -> String {
        guard Self.isValidUserName(name) else { throw UserError.invalidName(name) }
        let token = Self.makeToken()
        let hash = SHA256.hexDigest(token)
        let created = Self.now().text
        try write { db in
            guard try db.scalarInt("SELECT count(*) FROM users WHERE name = ?", [.text(name)]) == 0 else {
                throw UserError.exists(name)
            }
            try db.execute("INSERT INTO users (name, token_hash, created_at) VALUES (?, ?, ?)",
                           [.text(name), .text(hash), .text(created)])
        }
        return token
    }

    /// Every user's name and creation time, by name.
    func users() throws -> [(name: String, createdAt: String)] {
        try read { db in
            try db.query("SELECT name, created_at FROM users ORDER BY name") { ($0.string(0), $0.string(1)) }
        }
    }

    /// The user a bearer token belongs to (``TokenCache`` spares the
    /// database for tokens seen in the last minute).
    func user(forToken token: String) throws -> Int64? {
        let hash = SHA256.hexDigest(token)
        if let user = tokens.user(forHash: hash) { return user }
        let user = try read { db in try db.scalarInt("SELECT id FROM users WHERE token_hash = ?", [.text(hash)]) }
        if let user { tokens.remember(hash: hash, user: user) }
        return user
    }

    static func isValidUserName(_ name: String) -> Bool {
        let bytes = Array(name.utf8)
        return (1...64).contains(bytes.count) && bytes.allSatisfy { b in
            (b >= 0x30 && b <= 0x39) || (b >= 0x41 && b <= 0x5A) || (b >= 0x61 && b <= 0x7A)
                || b == UInt8(ascii: ".") || b == UInt8(ascii: "_") || b == UInt8(ascii: "-") || b == UInt8(ascii: "@")
        }
    }

    /// `esk_` and 32 random bytes in unpadded base64url: 47 characters.
    static func makeToken() -> String {
        let text = Base64.encode(SecureRandom.bytes(32))
        return "esk_" + String(text.compactMap { c -> Character? in
            switch c {
            case "+": "-"
            case "/": "_"
            case "=": nil
            default: c
            }
        })
    }
}
