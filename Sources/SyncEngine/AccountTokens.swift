#if canImport(Glibc)
import Glibc
#endif
import ExpenseCore
import Posix
import Synchronization

/// The token of every account: the default account's in `token_file` (or
/// systemd's `$CREDENTIALS_DIRECTORY/token`), and each local user's in
/// `accounts_dir/NAME`, a file of mode 600 owned by the daemon's user. Each
/// file is read again whenever it changes (``TokenSource``).
///
/// Without `accounts_dir` there is one account, the default one, as before
/// accounts existed. With it, a user with a file has that account; one
/// without has the default account only when `token_file` is given too.
public final class AccountTokens: Sendable {
    /// `accounts_dir`, or nil for the single-account setup.
    public let directory: String?
    /// The default account's token, when there is a default account.
    let fallback: TokenSource?
    /// The uid that must own every file of `accounts_dir`.
    let owner: UInt32
    /// The name of `token_file` when it lies in `accounts_dir` (systemd's
    /// credentials directory holds both): the default account's file, not
    /// a user's account.
    let defaultFileName: String?
    private let sources = Mutex<[String: TokenSource]>([:])

    /// - Parameters:
    ///   - tokenFile: `token_file`; nil for `$CREDENTIALS_DIRECTORY/token` without `accounts_dir`, none with it.
    ///   - accountsDirectory: `accounts_dir`.
    public init(tokenFile: String?, accountsDirectory: String?, owner: UInt32 = Users.effectiveUserID) {
        directory = accountsDirectory
        self.owner = owner
        fallback = accountsDirectory == nil || tokenFile != nil ? TokenSource(configuredPath: tokenFile) : nil
        defaultFileName = tokenFile.flatMap { file in
            guard let directory = accountsDirectory, let slash = file.lastIndex(of: "/") else { return nil }
            return Self.trimmed(String(file[..<slash])) == Self.trimmed(directory) ? String(file[file.index(after: slash)...]) : nil
        }
    }

    /// A directory's path without trailing slashes, to compare two spellings.
    static func trimmed(_ path: String) -> String {
        var path = path
        while path.count > 1 && path.hasSuffix("/") { path.removeLast() }
        return path
    }

    /// Why the account of a user cannot be told now: their file could not
    /// be looked at (not "it is not there"), so filing their work under the
    /// default account could hand it to the wrong one.
    public struct Unknown: Error, Sendable, CustomStringConvertible {
        public let description: String
    }

    /// Whether callers without a file of their own have the default account.
    public var hasDefaultAccount: Bool { fallback != nil }

    /// No token file from anywhere: no `accounts_dir`, and the default
    /// account's file is neither `token_file` nor in `$CREDENTIALS_DIRECTORY`.
    public var namesNoTokenFile: Bool { directory == nil && fallback?.path == nil }

    /// Whether a missing or unusable token holds an account's jobs back
    /// (with accounts, and for any account but the default one) rather
    /// than sending them without credentials (the single-account setup, as
    /// it always was).
    func holdsWithoutToken(_ account: String) -> Bool { directory != nil || account != AccountName.defaultName }

    /// The account of the local user `name` (nil: a uid without a name):
    /// their own when `accounts_dir` has their file, else the default
    /// account when there is one, else none.
    /// - Throws: ``Unknown`` when the file could not be looked at for a
    ///   reason other than its absence.
    public func account(ofUser name: String?) throws(Unknown) -> String? {
        guard directory != nil else { return AccountName.defaultName }
        if let name, name != AccountName.defaultName, try exists(account: name) { return name }
        return hasDefaultAccount ? AccountName.defaultName : nil
    }

    /// Whether `account` is an account: the default one when there is
    /// one, or a name with a file in `accounts_dir` (usable or not: its
    /// token problem is for `status` to show). Without `accounts_dir`
    /// there is only the default account.
    /// - Throws: ``Unknown`` when the file could not be looked at for a
    ///   reason other than its absence.
    public func exists(account: String) throws(Unknown) -> Bool {
        if account == AccountName.defaultName { return hasDefaultAccount }
        guard let directory, isAccountFileName(account) else { return false }
        do {
            _ = try FileSystem.status("\(directory)/\(account)", followLinks: false)
            return true
        } catch where error.errno == ENOENT {
            return false
        } catch {
            throw Unknown(description: "cannot look at its token file: \(error)")
        }
    }

    /// Why `account`'s token cannot be used now (its file missing,
    /// unreadable, empty, or not private), or nil when it can; for `status`.
    public func tokenProblem(of account: String) -> String? {
        let (token, problem, _) = source(for: account).current()
        return token == nil ? (problem ?? "no token") : nil
    }

    /// The accounts that have a token file now (the default one first, when there is one).
    public func configuredAccounts() -> [String] { accountsToRefresh() }

    /// The token source of `account`, made when first asked for.
    func source(for account: String) -> TokenSource {
        if account == AccountName.defaultName, let fallback { return fallback }
        return sources.withLock { sources in
            if let known = sources[account] { return known }
            let made: TokenSource
            if let directory, isAccountFileName(account) {
                made = TokenSource(accountFile: "\(directory)/\(account)", owner: owner)
            } else {
                made = TokenSource(missing: "no token_file is configured for the default account")
            }
            sources[account] = made
            return made
        }
    }

    /// The accounts to fetch the server's changes for: the default one
    /// when there is one, and every file of `accounts_dir`.
    func accountsToRefresh() -> [String] {
        var accounts = hasDefaultAccount ? [AccountName.defaultName] : []
        if let directory, let names = try? FileSystem.contents(of: directory) {
            accounts += names.compactMap(\.string).filter(isAccountFileName).sorted()
        }
        return accounts
    }

    /// A user name that can be a file of `accounts_dir`: not empty, no
    /// slash, not hidden (systemd's credential directories hold none, and
    /// editors leave `.NAME.swp`).
    public static func isFileName(_ name: String) -> Bool {
        !name.isEmpty && !name.hasPrefix(".") && !name.contains("/") && name.utf8.count <= 255
    }

    /// Whether `name` can be a user's account file in `accounts_dir`: a
    /// file name (``isFileName(_:)``) other than `token_file`'s when that
    /// lies there, which is the default account's, nobody's own. (The
    /// default account's name is empty, so it is never one.)
    func isAccountFileName(_ name: String) -> Bool {
        Self.isFileName(name) && name != defaultFileName
    }
}
