import ControlProtocol
import DaemonSupport
import ExpenseCore
import Posix
import SyncEngine

/// Whose expenses a caller's requests are: the control socket's peer uid
/// (`SO_PEERCRED`) or a spool file's owner, its login name, and the
/// account ``AccountTokens`` gives that name. Root and members of
/// `admin_group` may name another account, or every account.
struct CallerAccounts: Sendable {
    let tokens: AccountTokens
    let adminGroupID: UInt32?
    let adminGroupName: String?
    /// What earlier lookups found; nil without `accounts_dir`, where there is nothing to look up.
    let cache: AccountLookupCache<Resolution>?
    /// Where the user database is asked and `accounts_dir` looked in.
    let lookups = BlockingExecutor(label: "account-lookup", width: 2)

    init(tokens: AccountTokens, adminGroupID: UInt32?, adminGroupName: String?) {
        self.tokens = tokens
        self.adminGroupID = adminGroupID
        self.adminGroupName = adminGroupName
        cache = tokens.directory.map { AccountLookupCache(directory: $0) }
    }

    /// Who a uid is, for messages: "uid 1003 ('carol')".
    static func describe(uid: UInt32, name: String?) -> String {
        name.map { "uid \(uid) ('\($0.escapingControlCharacters())')" } ?? "uid \(uid) (no user name)"
    }

    /// What to configure for a user without an account.
    func missingAccount(name: String?) -> String {
        guard let directory = tokens.directory else { return "no token is configured" }
        let file = name.map { "'\(directory)/\($0.escapingControlCharacters())'" } ?? "a file in '\(directory)'"
        return "there is no token file \(file), and no token_file for callers without one; put the user's token in \(file) (mode 600, owned by expensed's user), or set token_file"
    }

    /// Why a caller resolved to no account has none ("uid 1003 ('carol') has no account: …").
    func reason(forCaller found: Resolution) -> String {
        found.problem.map { "\(found.who) has no account now: \($0)" } ?? "\(found.who) has no account: \(missingAccount(name: found.who.name))"
    }

    /// A spool file's owner's account, or nil with the reason its rejection
    /// gives ("is owned by " comes before it).
    func account(ofOwner uid: UInt32) -> (account: String?, reason: String) {
        let found = resolve(uid)
        return (found.account, found.problem.map { "\(found.who), whose account cannot be told now: \($0)" }
                    ?? "\(found.who), who has no account: \(missingAccount(name: found.who.name))")
    }

    /// Who a uid is and its account; a problem when that cannot be told
    /// now (the user database or the token file could not be asked): then
    /// no account, never the default one, which may not be theirs.
    struct Resolution: Sendable {
        let account: String?
        let who: Who
        let problem: String?
    }

    /// The resolution of `uid` known without asking anyone (the cache, or
    /// the single-account setup, which has no user database to ask).
    private func knownResolution(_ uid: UInt32) -> Resolution? {
        guard let cache else { return Resolution(account: AccountName.defaultName, who: Who(uid: uid, name: nil), problem: nil) }
        return cache.value(ofUID: uid)
    }

    /// The resolution of `uid`, asking the user database and looking in
    /// `accounts_dir` unless the cache knows it. Blocks: not on the socket's thread.
    func resolve(_ uid: UInt32) -> Resolution {
        if let known = knownResolution(uid) { return known }
        guard let cache else { preconditionFailure("known without a cache") }
        let generation = cache.generation()
        let found = lookup(uid)
        // What could not be told now is asked again next time.
        if found.problem == nil { cache.remember(found, uid: uid, generation: generation) }
        return found
    }

    private func lookup(_ uid: UInt32) -> Resolution {
        let name: String?
        switch Users.lookup(user: uid) {
        case .name(let found): name = found
        case .none: name = nil
        case .failed(let code):
            return Resolution(account: nil, who: Who(uid: uid, name: nil), problem: "the user database could not be asked (\(SystemCallError(call: "getpwuid_r", errno: code)))")
        }
        let who = Who(uid: uid, name: name)
        do {
            return Resolution(account: try tokens.account(ofUser: name), who: who, problem: nil)
        } catch {
            return Resolution(account: nil, who: who, problem: error.description)
        }
    }

    /// Whether account `name` exists, if that is known without looking in
    /// `accounts_dir` (the default account, or no `accounts_dir`).
    private func knownExistence(_ name: String) -> Bool? {
        if tokens.directory == nil || name == AccountName.defaultName { return try? tokens.exists(account: name) }
        return nil
    }

    /// Whether account `name` exists, looking in `accounts_dir` unless known.
    /// Blocks: only an admin's `--account` of another account asks, and not
    /// on the socket's thread.
    private func exists(_ name: String) throws(ControlFailure) -> Bool {
        if let known = knownExistence(name) { return known }
        do {
            return try tokens.exists(account: name)
        } catch {
            throw ControlFailure(.noAccount, "whether there is an account '\(name.escapingControlCharacters())' cannot be told now: \(error.description)")
        }
    }

    /// A uid and its name, as messages show them.
    struct Who: Sendable, CustomStringConvertible {
        let uid: UInt32
        let name: String?
        var description: String { CallerAccounts.describe(uid: uid, name: name) }
    }

    /// Root, or a member of `admin_group`.
    func isAdmin(_ peer: PeerCredentials) -> Bool {
        if peer.uid == 0 { return true }
        guard let adminGroupID else { return false }
        return peer.gid == adminGroupID || peer.groups.contains(adminGroupID)
    }

    /// The scope of a request from `peer`: the caller's own account, or
    /// what an admin asked for, which must be an account (the default one,
    /// when there is one, or a file of `accounts_dir`). An admin without
    /// an account of their own sees every account. Looks up what the cache
    /// does not know on ``lookups``, never on the caller's thread.
    /// - Throws: `no_account` for a caller without one or an account that
    ///   is not there, `permission_denied` for one who names an account not
    ///   theirs without being an admin.
    func scope(for peer: PeerCredentials, _ selection: ControlRequest.AccountSelection) async throws -> (scope: AccountScope, own: Resolution) {
        if let known = try knownScope(for: peer, selection) { return known }
        return try await lookups.run { [self] in try decide(peer, selection, looking: true)! }
    }

    /// The scope of a request from `peer` when it is known without asking
    /// the user database or looking in `accounts_dir` (for the socket's
    /// own thread), else nil.
    func knownScope(for peer: PeerCredentials, _ selection: ControlRequest.AccountSelection) throws(ControlFailure) -> (scope: AccountScope, own: Resolution)? {
        try decide(peer, selection, looking: false)
    }

    /// The scope; nil when something is not known and `looking` is false.
    private func decide(_ peer: PeerCredentials, _ selection: ControlRequest.AccountSelection, looking: Bool) throws(ControlFailure) -> (scope: AccountScope, own: Resolution)? {
        guard let own = looking ? resolve(peer.uid) : knownResolution(peer.uid) else { return nil }
        let admin = isAdmin(peer)
        switch selection {
        case .caller:
            if let account = own.account { return (.account(account), own) }
            if admin { return (.all, own) }
            throw ControlFailure(.noAccount, reason(forCaller: own))
        case .account(let name):
            guard name == own.account || admin else {
                throw ControlFailure(.permissionDenied, "only root\(adminGroupName.map { " and members of admin_group '\($0)'" } ?? "") may act on another account (--account, --all-accounts)")
            }
            if name != own.account {
                guard let found = looking ? try exists(name) : knownExistence(name) else { return nil }
                guard found else { throw ControlFailure(.noAccount, noSuchAccount(name)) }
            }
            return (.account(name), own)
        case .all:
            if admin { return (.all, own) }
            throw ControlFailure(.permissionDenied, "only root\(adminGroupName.map { " and members of admin_group '\($0)'" } ?? "") may act on every account (--all-accounts)")
        }
    }

    /// Why `--account NAME` names no account.
    private func noSuchAccount(_ name: String) -> String {
        if name == AccountName.defaultName { return "there is no default account: token_file is not set" }
        guard let directory = tokens.directory else {
            return "there is no account '\(name.escapingControlCharacters())': without accounts_dir there is only the default account (--account '')"
        }
        return "there is no account '\(name.escapingControlCharacters())': no token file '\(directory)/\(name.escapingControlCharacters())'; an account whose file was removed is seen with --all-accounts"
    }
}
