import ExpenseCore
@testable import OutboxStore
import ExpenseTestSupport
import Foundation
import SQLite
import Testing

/// A database written by the expensed of before accounts (schema 2: two
/// synced expenses, one queued with its receipt, an offline edit; made by
/// `Tests/Fixtures/schema2/make-fixture.sh`) opens, migrates, and files
/// everything under the default account.
@Suite struct AccountMigrationTests {
    /// A copy of the fixture's state directory, so the fixture stays as made.
    static func copyOfFixture() throws -> (TemporaryDirectory, String) {
        let fixture = #filePath.split(separator: "/").dropLast(2).joined(separator: "/")
        let directory = TemporaryDirectory()
        try FileManager.default.copyItem(atPath: "/\(fixture)/Fixtures/schema2/state", toPath: directory.at("state"))
        return (directory, directory.at("state"))
    }

    @Test func schema2Database_migratesThroughAccountsAndListing_withEveryJobAndExpenseInTheDefaultAccount() async throws {
        let (directory, state) = try Self.copyOfFixture()
        _ = directory
        let before = try Connection(path: "\(state)/expensed.db")
        #expect(try before.schemaVersion() == 2)
        let oldTotals = try before.query("SELECT name, value FROM counters WHERE name LIKE 'latency.%' ORDER BY name") { "\($0.string(0))=\($0.int(1))" }
        #expect(!oldTotals.isEmpty, "the fixture has sent expenses")

        let store = try Store(stateDirectory: state)
        let version = try await store.read { try $0.schemaVersion() }
        #expect(version == Schema.migrations.map(\.version).max(), "through accounts (3), the listing (4), where expenses came from (5) receipt digests (6) and the jobs' account index (7)")
        let accounts = try await store.read { db in
            (try db.query("SELECT DISTINCT account FROM jobs") { $0.string(0) }, try db.query("SELECT DISTINCT account FROM expenses") { $0.string(0) })
        }
        #expect(accounts.0 == [AccountName.defaultName])
        #expect(accounts.1 == [AccountName.defaultName])

        let everyone = try await store.views(in: .all)
        let mine = try await store.views(in: .account(AccountName.defaultName))
        #expect(everyone.map(\.fields.merchant) == ["Synced One", "Synced Two", "Queued Three"])
        #expect(mine == everyone)
        #expect(everyone.allSatisfy { $0.source == nil }, "made before sources were kept: none is invented")
        #expect(try await store.views(in: .account("alice")).isEmpty, "another account sees none of it")
        // The listing the newest migration filled holds the same, in the default account alone.
        #expect(try await store.list(ListQuery(), in: .account(AccountName.defaultName)).views == everyone)
        #expect(try await store.list(ListQuery(sort: .merchant, reverse: true), in: .all).views.map(\.fields.merchant)
                == ["Synced Two", "Synced One", "Queued Three"])
        // Queued: the offline edit of Synced One, and Queued Three.
        #expect(try await store.list(ListQuery(state: .queued), in: .account(AccountName.defaultName)).views.map(\.fields.merchant)
                == ["Synced One", "Queued Three"])
        #expect(try await store.list(ListQuery(totals: true), in: .account("alice")) == ListingPage(views: [], hasMore: false, totals: [], withoutAmount: 0))

        // The default account's queue is the whole queue, counted per account from the migration on.
        let total = try await store.summary(in: .all)
        let own = try await store.summary(in: .account(AccountName.defaultName))
        #expect(total.queued == 3)
        #expect(own == total)
        #expect(try await store.summary(in: .account("alice")) == QueueSummary())
        #expect(try await store.accountSummaries() == [AccountName.defaultName: own])
        // So are the totals stats shows.
        #expect(try await store.totals(in: .account(AccountName.defaultName)).latencyBuckets == (try await store.totals(in: .all)).latencyBuckets)
        #expect(try await store.refreshCursor(account: AccountName.defaultName) == "c1-0", "the cursor of before goes on")

        // The jobs go out as the default account's, and a new add of the
        // same client id from another account is refused.
        let claimed = try await store.claim(limit: 10, now: Int64.max / 2)
        #expect(Set(claimed.map(\.account)) == [AccountName.defaultName])
        #expect(claimed.count == 2, "the queued create and the edit (the receipt waits for its create)")
        let synced = everyone[0]
        await #expect(throws: StoreError.self) {
            _ = try await store.enqueueCreate(fields: synced.fields, clientID: synced.clientID, receipt: nil, now: 1, account: "alice")
        }
        #expect(try await store.enqueueCreate(fields: synced.fields, clientID: synced.clientID, receipt: nil, now: 1).isNew == false)
    }

    @Test func accounts_seeAndChangeOnlyTheirOwn() async throws {
        let directory = TemporaryDirectory()
        let store = try Store(stateDirectory: directory.at("state"))
        let fields = ExpenseFields(merchant: "Blue Bottle", amount: "12.50", currency: "EUR", date: "2026-11-29")
        let alice = try await store.enqueueCreate(fields: fields, clientID: ClientID.make(), receipt: nil, now: 1, account: "alice")
        let bob = try await store.enqueueCreate(fields: fields, clientID: ClientID.make(), receipt: nil, now: 2, account: "bob")
        #expect(try await store.views(in: .account("alice")).map(\.transactionID) == [alice.transactionID])
        #expect(try await store.views(in: .all).count == 2)
        for ref in [bob.transactionID, String(bob.transactionID.prefix(8)), bob.clientID] {
            await #expect(throws: StoreError.self) { _ = try await store.view(ref: ref, in: .account("alice")) }
            await #expect(throws: StoreError.self) { _ = try await store.edit(ref: ref, fields: ExpenseFields(comment: "x"), now: 3, in: .account("alice")) }
            await #expect(throws: StoreError.self) { _ = try await store.delete(ref: ref, now: 3, in: .account("alice")) }
            await #expect(throws: StoreError.self) { _ = try await store.discard(ref: ref, in: .account("alice")) }
            await #expect(throws: StoreError.self) { _ = try await store.retry(ref: ref, in: .account("alice")) }
        }
        // "cp-" is a prefix of both: to alice it is hers alone, not ambiguous.
        #expect(try await store.view(ref: "cp-", in: .account("alice")).transactionID == alice.transactionID)

        // An edit made by an admin for bob goes with bob's account.
        _ = try await store.claim(limit: 10, now: 10)
        _ = try await store.edit(ref: bob.transactionID, fields: ExpenseFields(comment: "for bob"), now: 11, in: .all)
        let accountsOfEdits = try await store.read { db in try db.query("SELECT account FROM jobs WHERE kind = 'edit'") { $0.string(0) } }
        #expect(accountsOfEdits == ["bob"])
        #expect(try await store.summary(in: .account("bob")).sending == 1)
        #expect(try await store.summary(in: .account("bob")).queued == 1)
        #expect(try await store.summary(in: .account("alice")).sending == 1)
        let summaries = try await store.accountSummaries()
        #expect(summaries.keys.sorted() == ["alice", "bob"])
        #expect(summaries["bob"]?.oldestJobMilliseconds == 2)

        // A paused account's jobs are not claimed; the others' are.
        try await store.startPass()
        let claimed = try await store.claim(limit: 10, now: 20, paused: ["bob"])
        #expect(claimed.map(\.account) == ["alice"])
    }

    /// An account's oldest job comes from the index on (account, seq), not
    /// from a scan of the outbox up to its first job, however many jobs
    /// of another account come before.
    @Test func oldestJobOfAnAccount_isFoundThroughAnIndex_behindAnotherAccountsJobs() async throws {
        let directory = TemporaryDirectory()
        let store = try Store(stateDirectory: directory.at("state"))
        let fields = ExpenseFields(merchant: "Blue Bottle", amount: "12.50", currency: "EUR", date: "2026-11-29")
        for n in 1...50 { _ = try await store.enqueueCreate(fields: fields, clientID: ClientID.make(), receipt: nil, now: Int64(n), account: "bob") }
        _ = try await store.enqueueCreate(fields: fields, clientID: ClientID.make(), receipt: nil, now: 100, account: "alice")
        _ = try await store.enqueueCreate(fields: fields, clientID: ClientID.make(), receipt: nil, now: 101, account: "alice")
        #expect(try await store.summary(in: .account("alice")).oldestJobMilliseconds == 100)
        #expect(try await store.summary(in: .account("bob")).oldestJobMilliseconds == 1)
        let plan = try await store.read { db in
            try db.query("EXPLAIN QUERY PLAN " + Store.oldestJobQuery, [.text("alice")]) { $0.string(3) }
        }
        #expect(plan.contains { $0.contains("USING INDEX jobs_by_account (account=?)") } && !plan.contains { $0.hasPrefix("SCAN") }, "\(plan)")
    }
}
