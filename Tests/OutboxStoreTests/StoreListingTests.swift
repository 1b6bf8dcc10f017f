import ExpenseCore
@testable import OutboxStore
import ExpenseTestSupport
import Foundation
import SQLite
import Testing

/// The listing index (kept by triggers) against the fold in memory
/// (`ExpenseView.fold` over every row, `Store.views`): after every kind of
/// change the store makes, through its own methods, each query answers
/// what filtering and sorting the folded views answers.
@Suite struct StoreListingTests {
    static let merchants = ["Blue Bottle", "blue bottle bar", "Café Zed", "Taxi 50%", "ACME_corp", "Zoo", "apple"]
    static let categories = ["Meals", "meals", "Travel", "Office"]
    static let currencies = ["EUR", "JPY", "BHD", "USD"]

    /// Random but repeatable work on a store: adds (some incomplete), edits
    /// that set and clear, deletes, discards, refresh pages (new expenses,
    /// newer versions, tombstones, conflicts), claims, and answers of each kind.
    /// Adds, changes and refreshes are `account`'s, as its caller's would be.
    static func churn(_ store: Store, seed: UInt64, steps: Int, account: String = AccountName.defaultName) async throws {
        let scope = AccountScope.account(account)
        var random = SeededRandom(seed: seed)
        var now: Int64 = 1_800_000_000_000
        var serverOnly = 0
        func someFields(complete: Bool) -> ExpenseFields {
            let currency = currencies[random.next(currencies.count)]
            let units = Currency.minorUnits(currency) ?? 2
            var amount = String(random.next(500))
            if units > 0 { amount += "." + String(random.next(Int(pow(10, Double(units))))).leftPadded(units) }
            if random.next(6) == 0 { amount = "-" + amount }
            if amount.hasPrefix("-0") && amount.allSatisfy({ "-0.".contains($0) }) { amount = "0" + (units > 0 ? "." + String(repeating: "0", count: units) : "") }
            var fields = ExpenseFields(merchant: merchants[random.next(merchants.count)], amount: amount, currency: currency,
                                       date: "2026-\(String(1 + random.next(12)).leftPadded(2))-\(String(1 + random.next(28)).leftPadded(2))",
                                       category: random.next(3) == 0 ? nil : categories[random.next(categories.count)])
            if !complete {
                switch random.next(3) {
                case 0: fields.merchant = nil
                case 1: fields.amount = nil
                default: fields.date = nil
                }
            }
            return fields
        }
        func anyID() async throws -> String? {
            let all = try await store.views(in: scope).map(\.transactionID)
            return all.isEmpty ? nil : all[random.next(all.count)]
        }
        for _ in 0..<steps {
            now += Int64(1 + random.next(5000))
            switch random.next(10) {
            case 0, 1, 2:
                _ = try await store.enqueueCreate(fields: someFields(complete: random.next(4) != 0), clientID: ClientID.make(), receipt: nil, now: now,
                                                  account: account)
            case 3:
                guard let id = try await anyID() else { continue }
                var change = ExpenseFields()
                switch random.next(4) {
                case 0: change.merchant = merchants[random.next(merchants.count)]
                case 1: change.date = "2025-0\(1 + random.next(9))-15"
                case 2: change.clear("category")
                default: change.category = categories[random.next(categories.count)]
                }
                _ = try? await store.edit(ref: id, fields: change, now: now, in: scope)
            case 4:
                guard let id = try await anyID() else { continue }
                _ = try? await store.delete(ref: id, now: now, in: scope)
            case 5:
                guard let id = try await anyID() else { continue }
                _ = try? await store.discard(ref: id, in: scope)
            case 6:
                // The server's own expenses, and newer versions or tombstones of ours.
                var page: [CanonicalExpense] = []
                for _ in 0..<(1 + random.next(4)) {
                    serverOnly += 1
                    let id = random.next(3) == 0 ? try await anyID() : nil
                    let clientID = ClientID.make()
                    // A newer version of one of ours is its fields with another merchant, as an edit elsewhere makes.
                    var fields = someFields(complete: true)
                    if let id, let current = try? await store.view(ref: id, in: scope) {
                        fields = current.fields.values
                        fields.merchant = merchants[random.next(merchants.count)]
                    }
                    let created = Timestamp.format(milliseconds: now - Int64(random.next(100_000_000)))
                    page.append(CanonicalExpense(
                        transactionID: id ?? TransactionID.derive(from: clientID), clientID: clientID, fields: fields,
                        version: 1 + random.next(5), createdAt: created, updatedAt: created,
                        deleted: id != nil && random.next(3) == 0, conflict: random.next(5) == 0))
                }
                _ = try await store.storeRefreshPage(page, cursor: "c\(serverOnly)", now: now, account: account)
            case 7:
                _ = try await store.claim(limit: 1 + random.next(3), now: now)
            default:
                let claimed = try await store.claim(limit: 1 + random.next(3), now: now)
                var answers: [(job: OutboxJob, update: JobUpdate, goneOnServer: Bool)] = []
                for job in claimed {
                    let update: JobUpdate
                    switch random.next(3) {
                    case 0:
                        let created = Timestamp.format(milliseconds: now)
                        update = .applied(job.kind == .create
                            ? CanonicalExpense(transactionID: job.transactionID, clientID: job.uuid, fields: job.fields, createdAt: created, updatedAt: created)
                            : nil)
                    case 1: update = .needsAttention(attempts: 1, transientAttempts: 0, error: "422 invalid_field amount", errorClass: "rejected")
                    default: update = .retry(nextAttemptAt: now + 1000, attempts: 1, transientAttempts: 0, error: "503", errorClass: "transient")
                    }
                    answers.append((job, update, false))
                }
                _ = try await store.complete(answers, now: now)
            }
        }
    }

    /// When `view` was added, as the listing orders it.
    static func added(_ view: ExpenseView) -> Int64 {
        view.createdAt.flatMap(Timestamp.parse) ?? view.jobs.first { $0.kind == .create }?.createdMilliseconds ?? 0
    }

    /// `query` answered by filtering and sorting the folded views in memory.
    static func expected(_ views: [ExpenseView], _ query: ListQuery) -> [ExpenseView] {
        func lower(_ s: String?) -> String? { s.map { String($0.unicodeScalars.map { ("A"..."Z").contains($0) ? Character(Unicode.Scalar($0.value + 32)!) : Character($0) }) } }
        var matches = views.filter { view in
            let f = view.fields
            switch query.state {
            case nil: break
            case .conflict?: if !view.conflict { return false }
            case let state?: if view.state.rawValue != state.rawValue { return false }
            }
            if query.incomplete && f.merchant != nil && f.amount != nil && f.date != nil { return false }
            if let since = query.since, (f.date ?? "") < since { return false }
            if let until = query.until, f.date == nil || f.date! > until { return false }
            if let merchant = query.merchant, !(lower(f.merchant)?.contains(lower(merchant)!) ?? false) { return false }
            if let category = query.category, lower(f.category) != lower(category) { return false }
            return true
        }
        // Nulls first, then the key, then the transaction id; reversed whole.
        func key(_ view: ExpenseView) -> (Int, Double, String) {
            switch query.sort {
            case .date: view.fields.date.map { (1, 0, $0) } ?? (0, 0, "")
            case .amount: view.fields.amount.map { (1, Double($0)!, "") } ?? (0, 0, "")
            case .merchant: lower(view.fields.merchant).map { (1, 0, $0) } ?? (0, 0, "")
            case .added: (1, Double(added(view)), "")
            }
        }
        matches.sort { a, b in
            let ka = key(a), kb = key(b)
            if ka != kb { return query.reverse ? ka > kb : ka < kb }
            return query.reverse ? a.transactionID > b.transactionID : a.transactionID < b.transactionID
        }
        let page = matches.dropFirst(query.offset)
        return Array(query.limit.map { page.prefix($0) } ?? page)
    }

    static let queries: [ListQuery] = {
        var queries: [ListQuery] = []
        for sort in ListQuery.Sort.allCases {
            for reverse in [false, true] {
                queries.append(ListQuery(sort: sort, reverse: reverse))
                queries.append(ListQuery(sort: sort, reverse: reverse, limit: 3, offset: 2))
            }
        }
        for state in ListQuery.State.allCases { queries.append(ListQuery(state: state, sort: .date)) }
        queries += [
            ListQuery(incomplete: true), ListQuery(incomplete: true, sort: .amount),
            ListQuery(since: "2026-03-01"), ListQuery(until: "2026-06-30", sort: .date, reverse: true),
            ListQuery(since: "2026-03-01", until: "2026-03-31", sort: .merchant),
            ListQuery(merchant: "BOTTLE"), ListQuery(merchant: "50%", sort: .amount), ListQuery(merchant: "e_c"), ListQuery(merchant: "é"),
            ListQuery(category: "MEALS", sort: .date), ListQuery(category: "office"),
            ListQuery(state: .queued, merchant: "bottle", sort: .amount, reverse: true, limit: 2),
        ]
        return queries
    }()

    @Test(arguments: [1, 2, 3] as [UInt64])
    func everyQuery_answersWhatTheFoldInMemoryAnswers(seed: UInt64) async throws {
        let dir = TemporaryDirectory()
        let store = try Store(stateDirectory: dir.at("state"))
        for round in 0..<4 {
            try await Self.churn(store, seed: seed * 100 + UInt64(round), steps: 40)
            let views = try await store.views()
            #expect(try await store.list(ListQuery()).views == views, "round \(round): the default order is the old one")
            for query in Self.queries {
                let page = try await store.list(query)
                let expected = Self.expected(views, query)
                #expect(page.views.map(\.transactionID) == expected.map(\.transactionID), "round \(round): \(query)")
                #expect(page.views == expected, "round \(round): \(query)")
            }
            // Every row kept by the triggers since its expense was first
            // read, or left for the catch-up, is the row a refresh of every
            // expense writes now (an update of each job and cache row fires it).
            let (kept, refreshed) = try await store.write { db, _ in
                let kept = try Self.listingRows(db)
                try db.execute("UPDATE jobs SET payload = payload")
                try db.execute("UPDATE expenses SET conflict = conflict")
                return ((kept, try Self.listingRows(db)), [])
            }
            #expect(!kept.isEmpty)
            #expect(kept == refreshed, "round \(round)")
        }
    }

    /// The totals of `query` (its state and category) over the folded
    /// views, summed independently: minor units as integers.
    static func expectedTotals(_ views: [ExpenseView], _ query: ListQuery) -> (totals: [ListTotal], withoutAmount: Int) {
        var sums: [String: (count: Int, minor: Int, pendingCount: Int, pendingMinor: Int)] = [:]
        var withoutAmount = 0
        for view in Self.expected(views, ListQuery(state: query.state, category: query.category)) {
            guard let amount = view.fields.amount, let currency = view.fields.currency else {
                withoutAmount += 1
                continue
            }
            let minor = Int(amount.replacingOccurrences(of: ".", with: ""))!
            var sum = sums[currency] ?? (0, 0, 0, 0)
            sum.count += 1
            sum.minor += minor
            if view.state != .synced {
                sum.pendingCount += 1
                sum.pendingMinor += minor
            }
            sums[currency] = sum
        }
        func text(_ minor: Int, _ currency: String) -> String {
            let digits = Currency.minorUnits(currency)!
            guard digits > 0 else { return String(minor) }
            let scale = Int(pow(10, Double(digits)))
            return (minor < 0 ? "-" : "") + "\(abs(minor) / scale)." + String(abs(minor) % scale).leftPadded(digits)
        }
        let totals = sums.sorted { $0.key < $1.key }.map { currency, s in
            ListTotal(currency: currency, count: s.count, amount: text(s.minor, currency), pendingCount: s.pendingCount,
                      pendingAmount: text(s.pendingMinor, currency))
        }
        return (totals, withoutAmount)
    }

    @Test func totals_areExactPerCurrency_pendingWorkIncluded() async throws {
        let dir = TemporaryDirectory()
        let store = try Store(stateDirectory: dir.at("state"))
        try await Self.churn(store, seed: 42, steps: 120)
        let views = try await store.views()
        for query in [ListQuery(totals: true), ListQuery(state: .queued, totals: true), ListQuery(category: "meals", limit: 1, totals: true)] {
            let page = try await store.list(query)
            let (expected, withoutAmount) = Self.expectedTotals(views, query)
            #expect(page.totals == expected, "\(query)")
            #expect(page.withoutAmount == withoutAmount, "\(query)")
            #expect(!expected.isEmpty)
        }
    }

    /// Three accounts changing their own expenses side by side: each
    /// account's list and totals hold its own expenses alone, whatever the
    /// query, an account without expenses sees none, and every account's
    /// scope sees them all. An admin's edit of another's expense (scope
    /// all) leaves it in its owner's list.
    @Test(arguments: [4, 5] as [UInt64])
    func eachAccount_listsAndTotalsItsOwnAlone(seed: UInt64) async throws {
        let dir = TemporaryDirectory()
        let store = try Store(stateDirectory: dir.at("state"))
        let accounts = ["alice", "bob", AccountName.defaultName]
        for round in 0..<3 {
            for (n, account) in accounts.enumerated() {
                try await Self.churn(store, seed: seed * 1000 + UInt64(round * 10 + n), steps: 30, account: account)
            }
        }
        if let bobs = try await store.views(in: .account("bob")).first {
            _ = try await store.edit(ref: bobs.transactionID, fields: ExpenseFields(merchant: "Edited By Root"), now: 1_900_000_000_000, in: .all)
        }
        var seen: [String: Set<String>] = [:]
        for scope in accounts.map(AccountScope.account) + [.account("nobody"), .all] {
            let views = try await store.views(in: scope)
            #expect(try await store.list(ListQuery(), in: scope).views == views, "\(scope): the default order")
            for query in Self.queries {
                let page = try await store.list(query, in: scope)
                #expect(page.views == Self.expected(views, query), "\(scope): \(query)")
            }
            for query in [ListQuery(totals: true), ListQuery(state: .queued, totals: true), ListQuery(category: "meals", limit: 1, totals: true)] {
                let page = try await store.list(query, in: scope)
                let (totals, withoutAmount) = Self.expectedTotals(views, query)
                #expect(page.totals == totals, "\(scope): \(query)")
                #expect(page.withoutAmount == withoutAmount, "\(scope): \(query)")
            }
            if case .account(let name) = scope { seen[name] = Set(views.map(\.transactionID)) }
        }
        #expect(seen["nobody"] == [])
        for account in accounts { #expect(seen[account]?.isEmpty == false, "\(account) has expenses to list") }
        let all = Set(try await store.list(ListQuery(), in: .all).views.map(\.transactionID))
        #expect(all == seen["alice"]!.union(seen["bob"]!).union(seen[AccountName.defaultName]!))
        #expect(all.count == seen["alice"]!.count + seen["bob"]!.count + seen[AccountName.defaultName]!.count, "no expense in two accounts")
        #expect(try await store.list(ListQuery(merchant: "Edited By Root"), in: .account("bob")).views.count == 1)
        #expect(try await store.list(ListQuery(merchant: "Edited By Root"), in: .account("alice")).views.isEmpty)
    }

    /// A new expense gets no row when it is added (schema 15), nor when
    /// an upload is queued beside it or its jobs change, and the catch-up
    /// before a read writes the row the refresh folds (which folds every
    /// job and the cache), whatever the payload holds as the store writes
    /// it: every field, some, none, a cleared one, a number where text
    /// belongs, a negative or whole amount, an object that is not the
    /// fields, and a payload that is not JSON.
    @Test func aNewExpensesRow_isWrittenAtItsFirstRead_asTheRefreshFoldsIt() async throws {
        let store = try Store(stateDirectory: TemporaryDirectory().at("state"))
        let payloads = [
            #"{"fields":{"merchant":"Blue Bottle","amount":"12.50","currency":"EUR","date":"2026-11-29","category":"Meals"}}"#,
            #"{"fields":{"merchant":"Only A Merchant"}}"#,
            #"{"fields":{}}"#,
            #"{"fields":{"merchant":null,"amount":"-3.075","currency":"BHD"}}"#,
            #"{"fields":{"amount":12.5,"merchant":"Number Amount"}}"#,
            #"{"fields":{"amount":"40","currency":"JPY","comment":"whole"}}"#,
            #"{"fields":"not an object"}"#,
            #"{}"#,
            "not json at all",
        ]
        let (afterAdds, behind) = try await store.write { db, _ in
            for (n, payload) in payloads.enumerated() {
                try db.execute("""
                    INSERT INTO jobs (seq, uuid, kind, transaction_id, payload, created_at, account)
                    VALUES (\(Store.nextSeq), ?, 'create', ?, ?, ?, 'alice')
                    """, [.text(ClientID.make()), .text("cp-listing\(n)"), .text(payload), .integer(Int64(1000 + n))])
            }
            // An upload queued beside three of them, as an add with a receipt makes it, and a claim.
            for n in 0..<3 {
                try db.execute("""
                    INSERT INTO jobs (seq, uuid, kind, transaction_id, payload, created_at, receipt_file, receipt_type, receipt_size, account)
                    VALUES (\(Store.nextSeq), ?, 'receipt', ?, '{}', ?, 'r.jpg', 'jpeg', 10, 'alice')
                    """, [.text(ClientID.make()), .text("cp-listing\(n)"), .integer(Int64(2000 + n))])
            }
            try db.execute("UPDATE jobs SET state = 'sending' WHERE transaction_id = 'cp-listing1'")
            return ((try Self.listingRows(db), try db.scalarInt(ListingSchema.isBehind)), [])
        }
        #expect(afterAdds.isEmpty, "an add writes no listing row: \(afterAdds)")
        #expect(behind == 1)
        let caughtUp = try await store.list(ListQuery()).views.map(\.transactionID).sorted()
        #expect(caughtUp == payloads.indices.map { "cp-listing\($0)" })
        let (lazy, folded, after) = try await store.write { db, _ in
            let lazy = try Self.listingRows(db)
            // The refresh, made to run for each: an update of the payload fires it, now that each has a row.
            try db.execute("UPDATE jobs SET payload = payload")
            return ((lazy, try Self.listingRows(db), try db.scalarInt(ListingSchema.isBehind)), [])
        }
        #expect(after == 0)
        #expect(lazy.count == payloads.count)
        #expect(lazy == folded)
        #expect(lazy.first?[4...8] == ["Blue Bottle", "12.50", "EUR", "2026-11-29", "Meals"], "\(lazy.first ?? [])")
        #expect(lazy[1][2] == "sending", "\(lazy[1])")
    }

    /// A catch-up that cannot be written (a temporary trigger refuses it
    /// here, as a full disk would) is made in the page's own read and
    /// undone: the page and its totals show every expense, the rows are
    /// still due after it, and the next page that can write them does.
    /// Every row of the listing, every column as text, by transaction id.
    static func listingRows(_ db: Connection) throws -> [[String]] {
        try db.query("SELECT * FROM listing ORDER BY transaction_id") { row in (0..<14).map { row.optionalString($0) ?? "NULL" } }
    }

    /// The merchants a reading looks for come from the listing too: an
    /// expense added and never listed is among them, its account's only.
    @Test func knownMerchants_includeExpensesAddedButNeverListed() async throws {
        let store = try Store(stateDirectory: TemporaryDirectory().at("state"))
        for (i, (merchant, account)) in [("Tesco", "ana"), ("Tesco", "ana"), ("Corner Shop", "ana"), ("Bakery", "ben")].enumerated() {
            _ = try await store.enqueueCreate(fields: ExpenseFields(merchant: merchant, amount: "1.00", currency: "EUR", date: "2026-01-0\(i + 1)"),
                                              clientID: ClientID.make(), receipt: nil, now: Int64(i), account: account)
        }
        #expect(try await store.read { db in try db.scalarInt("SELECT count(*) FROM listing") } == 0)
        #expect(try await store.knownMerchants(of: "ana") == ["Tesco", "Corner Shop"])
        #expect(try await store.knownMerchants(of: "ben") == ["Bakery"])
    }

    @Test func aCatchUpThatCannotBeWritten_isMadeInThePagesReadAndUndone() async throws {
        let store = try Store(stateDirectory: TemporaryDirectory().at("state"))
        for i in 0..<3 {
            _ = try await store.enqueueCreate(fields: ExpenseFields(merchant: "M\(i)", amount: "1.25", currency: "EUR", date: "2026-01-0\(i + 1)"),
                                              clientID: ClientID.make(), receipt: nil, now: Int64(i))
        }
        try await store.write { db, _ in
            try db.execute("""
                CREATE TEMP TRIGGER refuse_catch_up BEFORE UPDATE ON main.counters WHEN NEW.name = 'listing_seq'
                BEGIN SELECT RAISE(ABORT, 'database or disk is full'); END
                """)
            return ((), [])
        }
        let listed = { @Sendable () async throws -> (rows: Int64?, behind: Int64?) in
            try await store.read { db in (try db.scalarInt("SELECT count(*) FROM listing"), try db.scalarInt(ListingSchema.isBehind)) }
        }
        let page = try await store.list(ListQuery(totals: true))
        #expect(page.views.map(\.fields.merchant) == ["M0", "M1", "M2"])
        #expect(page.totals == [ListTotal(currency: "EUR", count: 3, amount: "3.75", pendingCount: 3, pendingAmount: "3.75")])
        #expect(try await store.knownMerchants(of: AccountName.defaultName) == ["M0", "M1", "M2"])
        let refused = try await listed()
        #expect(refused.rows == 0 && refused.behind == 1, "\(refused)")

        try await store.write { db, _ in
            try db.execute("DROP TRIGGER temp.refuse_catch_up")
            return ((), [])
        }
        #expect(try await store.list(ListQuery()).views.map(\.fields.merchant) == ["M0", "M1", "M2"])
        let written = try await listed()
        #expect(written.rows == 3 && written.behind == 0, "\(written)")
    }

    @Test func aPage_saysWhetherMoreFollow() async throws {
        let dir = TemporaryDirectory()
        let store = try Store(stateDirectory: dir.at("state"))
        for i in 0..<5 {
            _ = try await store.enqueueCreate(fields: ExpenseFields(merchant: "M\(i)", amount: "1.00", currency: "EUR", date: "2026-01-0\(i + 1)"),
                                              clientID: ClientID.make(), receipt: nil, now: Int64(i))
        }
        let first = try await store.list(ListQuery(limit: 2))
        #expect(first.views.map(\.fields.merchant) == ["M0", "M1"])
        #expect(first.hasMore)
        let last = try await store.list(ListQuery(limit: 2, offset: 4))
        #expect(last.views.map(\.fields.merchant) == ["M4"])
        #expect(!last.hasMore)
        #expect(try await store.list(ListQuery(limit: 5)).hasMore == false)
        #expect(try await store.list(ListQuery(offset: 9)).views.isEmpty)
    }

    /// A database of schema version 3 (accounts, no listing), with cached
    /// and pending expenses of two accounts, gets its listing filled by the
    /// migration, each expense under its account.
    @Test func aVersion3Database_isIndexedByTheMigration() async throws {
        let dir = TemporaryDirectory()
        let state = dir.at("state")
        let expected: [ExpenseView], alices: [ExpenseView]
        do {
            let store = try Store(stateDirectory: state)
            try await Self.churn(store, seed: 7, steps: 60)
            try await Self.churn(store, seed: 8, steps: 60, account: "alice")
            expected = try await store.views()
            alices = try await store.views(in: .account("alice"))
            #expect(!alices.isEmpty && alices.count < expected.count)
        }
        // Back to version 3: the index and its triggers as if never made
        // (and the migrations after it, made again on the way up).
        let db = try Connection(path: "\(state)/expensed.db")
        try SchemaRollback.back(db, to: 3)
        #expect(try db.schemaVersion() == 3)
        let store = try Store(stateDirectory: state)
        #expect(try await store.read { try $0.schemaVersion() } == Schema.migrations.map(\.version).max())
        #expect(try await store.list(ListQuery()).views == expected)
        #expect(try await store.list(ListQuery(sort: .merchant)).views == Self.expected(expected, ListQuery(sort: .merchant)))
        #expect(try await store.list(ListQuery(sort: .amount), in: .account("alice")).views == Self.expected(alices, ListQuery(sort: .amount)))
    }
}
