import ExpenseCore

/// Which expense backend `server` names, and each backend's own keys
/// (docs/backends.md).
public enum BackendKind: String, Sendable, Equatable, CaseIterable {
    /// The reference server's contract (docs/contract.md): the default.
    case expenseServer = "expense-server"
    /// An ihatemoney project's bills, `…/api/projects/<project>`.
    case ihatemoney
    /// A beancount ledger served by fava, `…/<ledger slug>`.
    case fava
}

extension Configuration {
    /// The keys only some backends read; the table in Configuration.swift ends with them.
    static let backendKeys: [Key] = [
        Key(name: "backend", flag: "--backend", valueName: "expense-server|ihatemoney|fava", help: "what kind of backend 'server' is (default expense-server)") { c, v throws(ConfigurationError) in
            guard let kind = BackendKind(rawValue: v) else { throw ConfigurationError("must be expense-server, ihatemoney or fava") }
            c.backend = kind
        },
        Key(name: "ihatemoney_payer", flag: "--ihatemoney-payer", valueName: "MEMBER", help: "ihatemoney: the member who paid") { c, v throws(ConfigurationError) in
            c.ihatemoneyPayer = try memberName(v)
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
        let ihatemoneyKeys = ihatemoneyPayer != nil || ihatemoneyPayedFor != nil
        let favaKeys = favaExpenseAccount != Self.defaultFavaExpenseAccount || favaFundingAccount != Self.defaultFavaFundingAccount
        if ihatemoneyKeys && backend != .ihatemoney {
            throw ConfigurationError("ihatemoney_payer and ihatemoney_payed_for need backend = ihatemoney (backend is \(backend.rawValue))")
        }
        if favaKeys && backend != .fava {
            throw ConfigurationError("fava_expense_account and fava_funding_account need backend = fava (backend is \(backend.rawValue))")
        }
        if accountsDirectory != nil && backend != .expenseServer {
            // ihatemoney's project and fava's ledger are one pot for every
            // token: each account's refresh would see the others' records.
            throw ConfigurationError("accounts_dir needs backend = expense-server, whose users keep their expenses apart (backend is \(backend.rawValue))")
        }
        guard serverURL != nil else { return }
        switch backend {
        case .expenseServer, .fava:
            break
        case .ihatemoney:
            guard ihatemoneyPayer != nil else { throw ConfigurationError("backend = ihatemoney needs ihatemoney_payer, the member who paid") }
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

/// An account template: a beancount account once `{category}` is replaced
/// by a category made into an account component.
private func accountTemplate(_ v: String) throws(ConfigurationError) -> String {
    guard BeancountAccount.isValid(BeancountAccount.expand(v, category: "Misc")) else {
        throw ConfigurationError("must be a beancount account, {category} allowed, like Expenses:{category}")
    }
    return v
}
