import Digest
import ExpenseCore
import Posix
import ServerStorage

/// The server's users and their bearer tokens. Only a token's SHA-256 is
/// stored: a token cannot be shown again.
public final class Accounts: Sendable {
    private let directory: any UserDirectory
    private let tokens = TokenCache()

    public init(_ directory: any UserDirectory) {
        self.directory = directory
    }

    /// Creates a user and returns its bearer token.
    /// - Throws: ``UserError`` for a bad or taken name; the storage's error otherwise.
    public func add(named name: String) throws -> String {
        guard Self.isValidName(name) else { throw UserError.invalidName(name) }
        let token = Self.makeToken()
        guard try directory.insertUser(name: name, tokenHash: SHA256.hexDigest(token), createdAt: ExpenseRules.now().text) else {
            throw UserError.exists(name)
        }
        return token
    }

    /// Every user's name and creation time, by name.
    public func list() throws -> [UserRecord] {
        try directory.users()
    }

    /// The user a bearer token belongs to (``TokenCache`` spares the
    /// database for tokens seen in the last minute).
    public func user(forToken token: String) throws -> Int64? {
        let hash = SHA256.hexDigest(token)
        if let user = tokens.user(forHash: hash) { return user }
        let user = try directory.userID(forTokenHash: hash)
        if let user { tokens.remember(hash: hash, user: user) }
        return user
    }

    /// 1 to 64 of `A-Z a-z 0-9 . _ - @`.
    public static func isValidName(_ name: String) -> Bool {
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
