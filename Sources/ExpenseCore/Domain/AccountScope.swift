/// The account an expense belongs to: a local user's name, from a file of
/// `accounts_dir`, or the default account (``defaultName``), whose token is
/// `token_file`'s. Every job and cached expense carries one.
public enum AccountName {
    /// The default account: `token_file`'s, and that of every expense made
    /// before accounts existed. No user name is empty, so it never clashes.
    public static let defaultName = ""

    /// How an account is named to people: the user name, or `(default)`.
    public static func displayName(_ account: String) -> String {
        account == defaultName ? "(default)" : account
    }
}

/// Whose expenses a request sees and changes: one account's (a caller's
/// own, or one root or an `admin_group` member named), or every account's.
public enum AccountScope: Sendable, Equatable, Hashable {
    case account(String)
    case all

    /// Whether an expense of `account` is in this scope.
    public func contains(_ account: String) -> Bool {
        switch self {
        case .all: true
        case .account(let name): name == account
        }
    }
}
