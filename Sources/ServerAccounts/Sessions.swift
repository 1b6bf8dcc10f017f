import Digest
import ExpenseCore
import Posix
import ServerStorage

/// Browser sessions: signing in with a token opens one, named by a random
/// id that only the browser holds (its cookie); the database keeps the
/// id's SHA-256. Every request reads the session again, so one whose user
/// was rotated, revoked or deactivated stops at the next request.
public final class Sessions: Sendable {
    private let store: any UserDirectory & SessionDirectory
    /// How long a session lasts from sign-in.
    public let lifetimeSeconds: Int64

    public init(_ store: any UserDirectory & SessionDirectory, lifetimeSeconds: Int64 = 8 * 3600) {
        self.store = store
        self.lifetimeSeconds = lifetimeSeconds
    }

    /// Opens a session for the active user of `token`.
    /// - Returns: the session's id (the cookie's value) and the session;
    ///   `nil` for a token that is not valid.
    public func signIn(token: String) throws -> (id: String, session: ActiveSession)? {
        let tokenHash = SHA256.hexDigest(token)
        guard let account = try store.account(forTokenHash: tokenHash) else { return nil }
        let id = Accounts.base64URL(SecureRandom.bytes(32))
        let csrf = Accounts.base64URL(SecureRandom.bytes(32))
        let expires = Clock.wallMilliseconds + lifetimeSeconds * 1000
        try store.insertSession(NewSession(idHash: SHA256.hexDigest(id), user: account.id, tokenHash: tokenHash, csrf: csrf,
                                           expiresAtMilliseconds: expires))
        return (id, ActiveSession(account: account, csrf: csrf, expiresAtMilliseconds: expires))
    }

    /// The session of cookie value `id`, while it holds.
    public func session(id: String) throws -> ActiveSession? {
        guard Self.isSessionID(id) else { return nil }
        return try store.session(idHash: SHA256.hexDigest(id), nowMilliseconds: Clock.wallMilliseconds)
    }

    public func signOut(id: String) throws {
        guard Self.isSessionID(id) else { return }
        try store.deleteSession(idHash: SHA256.hexDigest(id))
    }

    /// 43 characters of base64url: what ``signIn(token:)`` makes.
    public static func isSessionID(_ id: String) -> Bool {
        id.utf8.count == 43 && id.utf8.allSatisfy { b in
            (b >= 0x30 && b <= 0x39) || (b >= 0x41 && b <= 0x5A) || (b >= 0x61 && b <= 0x7A) || b == UInt8(ascii: "-") || b == UInt8(ascii: "_")
        }
    }

    /// Compares two secrets in time that does not depend on where they differ.
    public static func secretsMatch(_ a: String, _ b: String) -> Bool {
        let x = Array(a.utf8), y = Array(b.utf8)
        guard x.count == y.count, !x.isEmpty else { return false }
        var difference: UInt8 = 0
        for i in 0..<x.count { difference |= x[i] ^ y[i] }
        return difference == 0
    }
}
