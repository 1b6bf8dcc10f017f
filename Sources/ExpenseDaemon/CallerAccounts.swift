import ControlProtocol
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

    /// The account of `uid`, or nil with why not ("uid 1003 ('carol') has no account: …").
    func account(ofUID uid: UInt32) -> (account: String?, reason: String) {
        let (account, who, problem) = lookup(uid)
        return (account, problem.map { "\(who) has no account now: \($0)" } ?? "\(who) has no account: \(missingAccount(name: who.name))")
    }

    /// A spool file's owner's account, or nil with the reason its rejection
    /// gives ("is owned by " comes before it).
    func account(ofOwner uid: UInt32) -> (account: String?, reason: String) {
        let (account, who, problem) = lookup(uid)
        return (account, problem.map { "\(who), whose account cannot be told now: \($0)" }
                    ?? "\(who), who has no account: \(missingAccount(name: who.name))")
    }

    /// Who `uid` is and its account; a problem when that cannot be told
    /// now (the user database or the token file could not be asked): then
    /// no account, never the default one, which may not be theirs.
    private func lookup(_ uid: UInt32) -> (account: String?, who: Who, problem: String?) {
        // One account: no user database to ask.
        if tokens.directory == nil { return (AccountName.defaultName, Who(uid: uid, name: nil), nil) }
        let name: String?
        switch Users.lookup(user: uid) {
        case .name(let found): name = found
        case .none: name = nil
        case .failed(let code):
            return (nil, Who(uid: uid, name: nil), "the user database could not be asked (\(SystemCallError(call: "getpwuid_r", errno: code)))")
        }
        let who = Who(uid: uid, name: name)
        do {
            guard let account = try tokens.account(ofUser: name) else { return (nil, who, nil) }
            return (account, who, nil)
        } catch {
            return (nil, who, error.description)
        }
    }

    /// A uid and its name, as messages show them.
    struct Who: CustomStringConvertible {
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
    /// what an admin asked for. An admin without an account of their own
    /// sees every account.
    /// - Throws: `no_account` for a caller without one, `permission_denied`
    ///   for one who names an account not theirs without being an admin.
    func scope(for peer: PeerCredentials, _ selection: ControlRequest.AccountSelection) throws(ControlFailure) -> AccountScope {
        let (own, reason) = account(ofUID: peer.uid)
        let admin = isAdmin(peer)
        switch selection {
        case .caller:
            if let own { return .account(own) }
            if admin { return .all }
            throw ControlFailure(.noAccount, reason)
        case .account(let name):
            if name == own || admin { return .account(name) }
            throw ControlFailure(.permissionDenied, "only root\(adminGroupName.map { " and members of admin_group '\($0)'" } ?? "") may act on another account (--account, --all-accounts)")
        case .all:
            if admin { return .all }
            throw ControlFailure(.permissionDenied, "only root\(adminGroupName.map { " and members of admin_group '\($0)'" } ?? "") may act on every account (--all-accounts)")
        }
    }
}
