import ExpenseCore
import SyncEngine

/// Which expense backend `server` names, and each backend's own keys
/// (docs/backends.md).
public enum BackendKind: String, Sendable, Equatable, CaseIterable {
    /// The reference server's contract (docs/contract.md): the default.
    case expenseServer = "expense-server"
    /// An ihatemoney project's bills, `…/api/projects/<project>`.
    case ihatemoney
    /// A beancount ledger served by fava, `…/<ledger slug>`.
    case fava

    /// Whether a create sent before with an unknown outcome is sent again
    /// only after a lookup of its marker (no idempotency keys): then a
    /// create whose request was cut off waits until that request can no
    /// longer be committing (``SyncSettings/settlesInterruptedCreates``).
    var resendsAfterLookup: Bool { self != .expenseServer }
}

extension Configuration {
    /// The keys only some backends read; the table in Configuration.swift ends with them.
    static let backendKeys: [Key] = [
        Key(name: "backend", flag: "--backend", valueName: "expense-server|ihatemoney|fava", help: "what kind of backend 'server' is (default expense-server)") { c, v throws(ConfigurationError) in
            guard let kind = BackendKind(rawValue: v) else { throw ConfigurationError("must be expense-server, ihatemoney or fava") }
            c.backend = kind
        },
        Key(name: "ihatemoney_payer", flag: "--ihatemoney-payer", valueName: "MEMBER", help: "ihatemoney: the member who pays the default account's expenses") { c, v throws(ConfigurationError) in
            c.ihatemoneyPayer = try memberName(v)
        },
        Key(name: "ihatemoney_payers", flag: "--ihatemoney-payers", valueName: "ACCOUNT:MEMBER,...", help: "ihatemoney: the member who pays each account's expenses (with accounts_dir)") { c, v throws(ConfigurationError) in
            c.ihatemoneyPayers = try payers(v)
        },
        Key(name: "ihatemoney_payed_for", flag: "--ihatemoney-payed-for", valueName: "all|MEMBER,...", help: "ihatemoney: the members paid for (default all)") { c, v throws(ConfigurationError) in
            if v == "all" {
                c.ihatemoneyPayedFor = nil
                return
            }
            var names: [String] = []
            for part in v.split(separator: ",", omittingEmptySubsequences: false) {
                let name = try memberName(String(part).trimmingSpaces())
                if !names.contains(name) { names.append(name) }
            }
            c.ihatemoneyPayedFor = names
        },
        Key(name: "fava_expense_account", flag: "--fava-expense-account", valueName: "TEMPLATE", help: "fava: the expense account, {category} replaced (default Expenses:{category})") { c, v throws(ConfigurationError) in
            c.favaExpenseAccount = try accountTemplate(v)
        },
        Key(name: "fava_funding_account", flag: "--fava-funding-account", valueName: "ACCOUNT", help: "fava: the account the money came from (default Assets:Cash)") { c, v throws(ConfigurationError) in
            guard BeancountAccount.isValid(v) else { throw ConfigurationError("must be a beancount account like Assets:Cash") }
            c.favaFundingAccount = v
        },
    ]

    /// What one backend's keys need of the others, checked once all are read.
    /// - Throws: ``ConfigurationError`` naming the key to set or drop.
    func checkBackend() throws(ConfigurationError) {
        let ihatemoneyKeys = ihatemoneyPayer != nil || ihatemoneyPayedFor != nil || !ihatemoneyPayers.isEmpty
        let favaKeys = favaExpenseAccount != Self.defaultFavaExpenseAccount || favaFundingAccount != Self.defaultFavaFundingAccount
        if ihatemoneyKeys && backend != .ihatemoney {
            throw ConfigurationError("ihatemoney_payer, ihatemoney_payers and ihatemoney_payed_for need backend = ihatemoney (backend is \(backend.rawValue))")
        }
        if favaKeys && backend != .fava {
            throw ConfigurationError("fava_expense_account and fava_funding_account need backend = fava (backend is \(backend.rawValue))")
        }
        if accountsDirectory != nil && backend == .fava {
            // One ledger and no users: every account would write and see the
            // same entries, with nothing to tell whose each is.
            throw ConfigurationError("accounts_dir needs backend = expense-server or ihatemoney: fava serves one ledger with no users, so accounts could not be kept apart")
        }
        if !ihatemoneyPayers.isEmpty && accountsDirectory == nil {
            throw ConfigurationError("ihatemoney_payers needs accounts_dir, whose files are its accounts; without it, ihatemoney_payer names the one payer")
        }
        guard serverURL != nil else { return }
        switch backend {
        case .expenseServer, .fava:
            break
        case .ihatemoney:
            // With accounts, each account's payer comes from ihatemoney_payers,
            // and one without a payer has its creates held with the reason.
            guard ihatemoneyPayer != nil || accountsDirectory != nil else {
                throw ConfigurationError("backend = ihatemoney needs ihatemoney_payer, the member who paid")
            }
            guard let url = serverURL, IhatemoneyURL.projectID(of: url) != nil else {
                throw ConfigurationError("backend = ihatemoney needs server = <ihatemoney>/api/projects/<project id>")
            }
        }
    }

    static let defaultFavaExpenseAccount = "Expenses:{category}"
    static let defaultFavaFundingAccount = "Assets:Cash"
}

/// The project id at the end of an ihatemoney project's API URL.
enum IhatemoneyURL {
    static func projectID(of url: String) -> String? {
        guard let range = url.firstRange(of: "/api/projects/") else { return nil }
        let id = url[range.upperBound...]
        guard !id.isEmpty, !id.contains("/"), !id.contains("?"), !id.contains("#") else { return nil }
        return String(id)
    }
}

/// A member's name as ihatemoney shows it: not empty, one line, no comma
/// (the list separator).
private func memberName(_ v: String) throws(ConfigurationError) -> String {
    guard !v.isEmpty else { throw ConfigurationError("must name a member, not be empty") }
    guard !v.contains(","), !v.contains(where: { $0.isNewline }), v.count <= 200 else {
        throw ConfigurationError("must be member names separated by commas, or 'all'")
    }
    return v
}

/// `account:Member, account:Member`: account names that can be files of
/// `accounts_dir` (a local user's name has no colon), each once, and
/// member names as ``memberName(_:)`` takes them.
private func payers(_ v: String) throws(ConfigurationError) -> [String: String] {
    var payers: [String: String] = [:]
    for part in v.split(separator: ",", omittingEmptySubsequences: false) {
        let entry = String(part).trimmingSpaces()
        guard let colon = entry.firstIndex(of: ":") else {
            throw ConfigurationError("must be account:member pairs separated by commas, like alice:Alice, bob:Bob")
        }
        let account = String(entry[..<colon]).trimmingSpaces()
        guard AccountTokens.isFileName(account), !account.contains(where: { $0.isNewline || $0 == ":" }) else {
            throw ConfigurationError("'\(account.escapingControlCharacters().prefix(64))' is not an account name (a file name in accounts_dir, not hidden)")
        }
        guard payers[account] == nil else { throw ConfigurationError("account '\(account.prefix(64))' is given twice") }
        payers[account] = try memberName(String(entry[entry.index(after: colon)...]).trimmingSpaces())
    }
    return payers
}

/// An account template: a beancount account once `{category}` is replaced
/// by a category made into an account component.
private func accountTemplate(_ v: String) throws(ConfigurationError) -> String {
    guard BeancountAccount.isValid(BeancountAccount.expand(v, category: "Misc")) else {
        throw ConfigurationError("must be a beancount account, {category} allowed, like Expenses:{category}")
    }
    return v
}
