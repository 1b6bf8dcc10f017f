import Digest
import ExpenseCore
import Posix
import ServerStorage

/// The server's users and their bearer tokens. Only a token's SHA-256 is
/// stored: a token cannot be shown again.
///
/// Every request looks its token up in the database (one indexed read):
/// a token rotated, revoked or deactivated by any process, the command
/// line included, is refused from the next request on. (A cache of recent
/// lookups kept a revoked token working for its lifetime.)
public final class Accounts: Sendable {
    private let directory: any UserDirectory

    public init(_ directory: any UserDirectory) {
        self.directory = directory
    }

    /// Creates a user and returns its bearer token.
    /// - Parameter isAdmin: an admin sees every user's expenses and manages users.
    /// - Throws: ``UserError`` for a bad or taken name; the storage's error otherwise.
    public func add(named name: String, isAdmin: Bool = false) throws -> String {
        guard Self.isValidName(name) else { throw UserError.invalidName(name) }
        let token = Self.makeToken()
        guard try directory.insertUser(name: name, tokenHash: SHA256.hexDigest(token), isAdmin: isAdmin, createdAt: ExpenseRules.now().text) else {
            throw UserError.exists(name)
        }
        return token
    }

    /// Gives `name` a new token and returns it; the old one stops working
    /// at once, and so do the sessions opened with it. A revoked user is
    /// active again.
    /// - Throws: ``UserError`` for an unknown or deactivated user.
    public func rotate(named name: String) throws -> String {
        let token = Self.makeToken()
        try check(try directory.replaceToken(name: name, tokenHash: SHA256.hexDigest(token)), name)
        return token
    }

    /// Refuses `name`'s token (and its sessions) from now on; `rotate` gives it a new one.
    /// - Throws: ``UserError`` for an unknown or deactivated user.
    public func revoke(named name: String) throws {
        try check(try directory.setState(name: name, .revoked), name)
    }

    /// Retires `name` for good: no token of it works again; its expenses
    /// stay, and admins still see them.
    /// - Throws: ``UserError`` for an unknown or already deactivated user.
    public func deactivate(named name: String) throws {
        try check(try directory.setState(name: name, .deactivated), name)
    }

    private func check(_ update: UserUpdate, _ name: String) throws(UserError) {
        switch update {
        case .updated: return
        case .noSuchUser: throw UserError.notFound(name)
        case .deactivated: throw UserError.deactivated(name)
        }
    }

    /// Every user, by name.
    public func list() throws -> [UserRecord] {
        try directory.users()
    }

    /// The user a bearer token belongs to, while it is active.
    public func user(forToken token: String) throws -> Int64? {
        try account(forToken: token)?.id
    }

    /// The active user a bearer token belongs to, with its role.
    public func account(forToken token: String) throws -> Account? {
        try directory.account(forTokenHash: SHA256.hexDigest(token))
    }

    /// 1 to 64 of `A-Z a-z 0-9 . _ - @`, and not `.` or `..`: a name is a
    /// segment of the users page's form actions, and a browser resolves
    /// those two (even percent-encoded) before sending the form.
    public static func isValidName(_ name: String) -> Bool {
        let bytes = Array(name.utf8)
        return (1...64).contains(bytes.count) && name != "." && name != ".." && bytes.allSatisfy { b in
            (b >= 0x30 && b <= 0x39) || (b >= 0x41 && b <= 0x5A) || (b >= 0x61 && b <= 0x7A)
                || b == UInt8(ascii: ".") || b == UInt8(ascii: "_") || b == UInt8(ascii: "-") || b == UInt8(ascii: "@")
        }
    }

    /// `esk_` and 32 random bytes in unpadded base64url: 47 characters.
    static func makeToken() -> String {
        "esk_" + Self.base64URL(SecureRandom.bytes(32))
    }

    /// Unpadded base64url of `bytes` (RFC 4648 §5): safe in a cookie and a URL.
    public static func base64URL(_ bytes: [UInt8]) -> String {
        String(Base64.encode(bytes).compactMap { c -> Character? in
            switch c {
            case "+": "-"
            case "/": "_"
            case "=": nil
            default: c
            }
        })
    }
}
