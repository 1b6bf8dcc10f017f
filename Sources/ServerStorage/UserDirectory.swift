/// The users of a database: only their token's hash is stored.
public protocol UserDirectory: Sendable {
    /// Adds a user.
    /// - Returns: false when the name is taken.
    func insertUser(name: String, tokenHash: String, isAdmin: Bool, createdAt: String) throws -> Bool
    /// Every user, by name.
    func users() throws -> [UserRecord]
    /// The active user whose token has SHA-256 (hex) `tokenHash`; `nil`
    /// for an unknown token and for a revoked or deactivated user's.
    func account(forTokenHash tokenHash: String) throws -> Account?
    /// Gives the user `name` the token whose SHA-256 is `tokenHash` in place
    /// of its old one, which stops working with the commit; a revoked user
    /// is active again.
    func replaceToken(name: String, tokenHash: String) throws -> UserUpdate
    /// Revokes or deactivates the user `name`: its token stops working with
    /// the commit, its expenses stay.
    func setState(name: String, _ state: UserState) throws -> UserUpdate
}

/// Where a user stands.
public enum UserState: String, Sendable, CaseIterable {
    /// Its token works.
    case active
    /// Its token does not; `user rotate` gives it a new one.
    case revoked
    /// Gone for good: no token works, the expenses are kept for admins.
    case deactivated
}

/// What changing a user did.
public enum UserUpdate: Sendable, Equatable {
    case updated
    case noSuchUser
    /// Deactivation is final: nothing more is changed.
    case deactivated
}

/// A signed-in user, as requests see it.
public struct Account: Sendable, Equatable {
    public let id: Int64
    public let name: String
    /// An admin sees every user's expenses and manages users.
    public let isAdmin: Bool

    public init(id: Int64, name: String, isAdmin: Bool) {
        self.id = id
        self.name = name
        self.isAdmin = isAdmin
    }
}

/// A user as `user list` shows them.
public struct UserRecord: Sendable, Equatable {
    public let id: Int64
    public let name: String
    public let createdAt: String
    public let isAdmin: Bool
    public let state: UserState

    public init(id: Int64, name: String, createdAt: String, isAdmin: Bool, state: UserState) {
        self.id = id
        self.name = name
        self.createdAt = createdAt
        self.isAdmin = isAdmin
        self.state = state
    }

    /// The columns ``init(row:)`` reads, in order.
    public static let columns = "id, name, created_at, is_admin, state"

    public init(row: some StorageRow) {
        self.init(id: row.int64(0), name: row.string(1), createdAt: row.string(2), isAdmin: row.bool(3),
                  state: UserState(rawValue: row.string(4)) ?? .deactivated)
    }
}

/// Browser sessions of the web interface. A session is found only while
/// it has not expired, its user is active and the user's token is still
/// the one it was opened with: rotating, revoking or deactivating ends it.
public protocol SessionDirectory: Sendable {
    func insertSession(_ session: NewSession) throws
    /// The session whose id has SHA-256 (hex) `idHash`, while it holds.
    func session(idHash: String, nowMilliseconds: Int64) throws -> ActiveSession?
    func deleteSession(idHash: String) throws
    /// Forgets expired sessions. - Returns: how many.
    func purgeSessions(nowMilliseconds: Int64) throws -> Int
}

/// A session about to be stored.
public struct NewSession: Sendable {
    public let idHash: String
    public let user: Int64
    /// The hash of the token the user signed in with.
    public let tokenHash: String
    public let csrf: String
    public let expiresAtMilliseconds: Int64

    public init(idHash: String, user: Int64, tokenHash: String, csrf: String, expiresAtMilliseconds: Int64) {
        self.idHash = idHash
        self.user = user
        self.tokenHash = tokenHash
        self.csrf = csrf
        self.expiresAtMilliseconds = expiresAtMilliseconds
    }
}

/// A session that holds: who, and the token its forms must carry.
public struct ActiveSession: Sendable, Equatable {
    public let account: Account
    public let csrf: String
    public let expiresAtMilliseconds: Int64

    public init(account: Account, csrf: String, expiresAtMilliseconds: Int64) {
        self.account = account
        self.csrf = csrf
        self.expiresAtMilliseconds = expiresAtMilliseconds
    }
}
