import ExpenseCore
import ExpenseTestSupport
import Foundation
import Testing

/// Several people on one machine: real local users (made and removed by
/// each test), each with a token file in `accounts_dir`, the real daemon
/// and the real `expense-server` with one server user per account.
/// Serialized: users and groups are the machine's.
@Suite(.serialized) struct AccountTests {
    /// alice and bob each add and each drop a spool file: on the server each
    /// expense is under the right user, once; each sees only their own, and
    /// gets "no such expense" for the other's on every verb; root and an
    /// admin_group member see both; a user without an account is refused.
    @Test func twoAccounts_eachSeesAndChangesOnlyTheirOwn_andAdminsSeeBoth() throws {
        let h = try AccountHarness(withoutAccount: ["carol"], admins: ["dave"])
        defer { h.users.remove() }
        try h.startDaemon()
        defer { h.daemon.stop() }
        let receipt = h.directory.at("r.jpg")
        SampleReceipt.write(SampleReceipt.jpeg(size: 3000, seed: 5), to: receipt)
        chmod(receipt, 0o644)
        let alice1 = try h.add("alice", merchant: "Alice One", receipt: receipt)
        let alice2 = try h.add("alice", merchant: "Alice Two")
        let bob1 = try h.add("bob", merchant: "Bob One")
        try h.drop("alice", name: "alice-scan", merchant: "Alice Spool")
        try h.drop("bob", name: "bob-scan", merchant: "Bob Spool")
        try waitUntil(timeout: 30, "both spool files to be taken") { try h.serverRows().count == 5 || (try h.listed("root", ["--all-accounts"]).count == 5) }
        try h.waitUntilDrained()
        try waitUntil(timeout: 30, "the server to hold all five") { try h.serverRows().count == 5 }

        let rows = try h.serverRows()
        #expect(Set(rows.map(\.transactionID)).count == 5, "each expense once")
        #expect(Set(rows.filter { $0.user == "alice" }.compactMap(\.merchant)) == ["Alice One", "Alice Two", "Alice Spool"])
        #expect(Set(rows.filter { $0.user == "bob" }.compactMap(\.merchant)) == ["Bob One", "Bob Spool"])
        let alices = Set(rows.filter { $0.user == "alice" }.map(\.transactionID))
        let bobs = Set(rows.filter { $0.user == "bob" }.map(\.transactionID))
        #expect(alices.isSuperset(of: [alice1, alice2]) && bobs.contains(bob1))

        #expect(try h.listed("alice") == alices)
        #expect(try h.listed("bob") == bobs)
        #expect(try h.listed("root", ["--all-accounts"]) == alices.union(bobs))
        #expect(try h.listed("dave", ["--all-accounts"]) == alices.union(bobs), "an admin_group member")
        #expect(try h.listed("root", ["--account", h.users.name("bob")]) == bobs)
        #expect(try h.listed("root") == alices.union(bobs), "root has no account of its own: it sees every account")

        // Every verb on the other's expense: no such expense, and nothing changes.
        for (verb, extra) in [("show", []), ("edit", ["--comment", "mine now"]), ("delete", []), ("retry", []), ("discard", []),
                              ("resolve", ["--take", "mine"]), ("receipt", []), ("edit", ["--receipt", receipt])] as [(String, [String])] {
            for ref in [bob1, String(bob1.prefix(10))] {
                let result = try h.ctl("alice", [verb, ref] + extra)
                #expect(result.status == 1, "\(verb) \(ref): \(result.stderr)")
                #expect(result.stderr.contains("no expense matches"), "\(verb): \(result.stderr)")
            }
        }
        #expect(try h.ctl("bob", ["show", bob1]).status == 0, "bob still has it")
        // Her own receipt comes back from the server, fetched with her token.
        let outputs = h.directory.at("alice-out")
        try FileManager.default.createDirectory(atPath: outputs, withIntermediateDirectories: true)
        chmod(outputs, 0o777)
        let own = try h.ctl("alice", ["receipt", alice1, "-o", "\(outputs)/r.jpg"])
        #expect(own.status == 0, "\(own.stderr)")
        #expect(FileManager.default.contents(atPath: "\(outputs)/r.jpg").map { [UInt8]($0) } == SampleReceipt.jpeg(size: 3000, seed: 5))
        // An admin's fetch of it goes with alice's token: root has none, and its own would not be hers to use.
        for scope in [["--all-accounts"], ["--account", h.users.name("alice")]] {
            let byAdmin = try h.ctl("root", ["receipt", alice1, "-o", "\(outputs)/by-root.jpg"] + scope)
            #expect(byAdmin.status == 0, "\(scope): \(byAdmin.stderr)")
            #expect(FileManager.default.contents(atPath: "\(outputs)/by-root.jpg").map { [UInt8]($0) } == SampleReceipt.jpeg(size: 3000, seed: 5))
        }
        #expect(try h.serverRows().count == 5)
        // Naming another account is for admins only.
        for extra in [["--account", h.users.name("bob")], ["--all-accounts"]] {
            let result = try h.ctl("alice", ["list"] + extra)
            #expect(result.status == 77, "\(extra): \(result.stderr)")
            #expect(result.stderr.contains("only root and members of admin_group"), "\(result.stderr)")
        }
        #expect(try h.ctl("alice", ["list", "--account", h.users.name("alice")]).status == 0, "her own account by name")

        // stats and status are the caller's: alice's three applied, not five.
        #expect(try h.ctlJSON("alice", ["stats"])["since_start"]?["applied"] == 4, "three creates and one receipt")
        #expect(try h.ctlJSON("root", ["stats", "--all-accounts"])["since_start"]?["applied"] == 6)
        let aliceStatus = try h.ctlJSON("alice", ["status"])
        #expect(aliceStatus["account"]?.stringValue == h.users.name("alice"))
        #expect(aliceStatus["accounts"] == nil, "only admins see every account")
        let rootStatus = try h.ctlJSON("root", ["status"])
        #expect(rootStatus["accounts"]?.arrayValue?.compactMap { $0["account"]?.stringValue }.sorted() == [h.users.name("alice"), h.users.name("bob")].sorted())

        // carol has no account: refused, saying what to configure.
        let refused = try h.ctl("carol", ["add", "--merchant", "C", "--amount", "1", "--currency", "EUR", "--date", "2026-11-29"])
        #expect(refused.status == 77, "\(refused.stderr)")
        #expect(refused.stderr.contains("('\(h.users.name("carol"))') has no account"), "\(refused.stderr)")
        #expect(refused.stderr.contains("\(h.accountsDirectory)/\(h.users.name("carol"))"), "\(refused.stderr)")
        #expect(try h.ctl("carol", ["list"]).status == 77)
        // root has no account to add to (no token_file): refused too, unless it names one.
        #expect(try h.ctl("root", ["add", "--merchant", "R", "--amount", "1", "--currency", "EUR", "--date", "2026-11-29"]).status == 77)
        let forBob = try h.ctlJSON("root", ["add", "--account", h.users.name("bob"), "--merchant", "For Bob", "--amount", "1", "--currency", "EUR", "--date", "2026-11-29"])
        let forBobID = forBob["transaction_id"]?.stringValue ?? ""
        try h.waitUntilDrained()
        #expect(try h.listed("bob").contains(forBobID))
        try waitUntil(timeout: 20, "root's add for bob on the server") { try h.serverRows().contains { $0.transactionID == forBobID && $0.user == "bob" } }
    }

    /// `list`'s filters, orders, pages and totals are the caller's
    /// account's: alice's merchant filter never finds bob's expense of the
    /// same name, her totals hold her amounts alone (synced and queued),
    /// and admins total one account or both.
    @Test func listFiltersAndTotals_areEachAccountsOwn() throws {
        let h = try AccountHarness(admins: ["dave"])
        defer { h.users.remove() }
        try h.startDaemon()
        defer { h.daemon.stop() }
        func add(_ role: String, _ merchant: String, _ amount: String, _ date: String) throws -> String {
            let added = try h.ctlJSON(role, ["add", "--merchant", merchant, "--amount", amount, "--currency", "EUR", "--date", date])
            guard let id = added["transaction_id"]?.stringValue else { throw TestFailure("add as \(role): \(added)") }
            return id
        }
        func ids(_ role: String, _ arguments: [String]) throws -> [String] {
            let json = try h.ctlJSON(role, ["list"] + arguments)
            return (json.arrayValue ?? json["expenses"]?.arrayValue ?? []).compactMap { $0["transaction_id"]?.stringValue }
        }
        func totals(_ role: String, _ arguments: [String]) throws -> JSONValue? {
            try h.ctlJSON(role, ["list", "--totals"] + arguments)["totals"]
        }
        let alice1 = try add("alice", "Blue Bottle", "4.50", "2026-11-02")
        let bob1 = try add("bob", "Blue Bottle", "100.00", "2026-11-01")
        let alice2 = try add("alice", "Hotel Adlon", "310.00", "2026-10-15")
        try h.waitUntilDrained()
        // The server gone: what is added now stays pending, and counts.
        h.stopServer()
        let bob2 = try add("bob", "Blue Bottle bar", "7.00", "2026-11-20")
        let alice3 = try add("alice", "blue bottle bar", "12.25", "2026-11-21")

        #expect(try ids("alice", ["--merchant", "bottle"]) == [alice1, alice3])
        #expect(try ids("bob", ["--merchant", "bottle", "--sort", "date"]) == [bob1, bob2])
        #expect(try ids("alice", ["--state", "synced", "--sort", "amount", "--reverse"]) == [alice2, alice1])
        #expect(try ids("alice", ["--sort", "date", "--limit", "2", "--offset", "1"]) == [alice1, alice3], "pages of her own alone")
        #expect(try ids("bob", ["--since", "2026-11-01", "--until", "2026-11-30", "--sort", "amount"]) == [bob2, bob1])
        #expect(try totals("alice", []) == [["currency": "EUR", "count": 3, "amount": "326.75", "pending_count": 1, "pending_amount": "12.25"]])
        #expect(try totals("bob", ["--merchant", "bottle"])
                == [["currency": "EUR", "count": 2, "amount": "107.00", "pending_count": 1, "pending_amount": "7.00"]])
        #expect(try totals("dave", ["--account", h.users.name("bob")])
                == [["currency": "EUR", "count": 2, "amount": "107.00", "pending_count": 1, "pending_amount": "7.00"]])
        #expect(try totals("root", ["--all-accounts"]) == [["currency": "EUR", "count": 5, "amount": "433.75", "pending_count": 2, "pending_amount": "19.25"]])
        #expect(try ids("root", ["--all-accounts", "--merchant", "bottle", "--sort", "amount"]) == [alice1, bob2, alice3, bob1])
        let refused = try h.ctl("alice", ["list", "--totals", "--account", h.users.name("bob")])
        #expect(refused.status == 77, "\(refused.stderr)")
    }

    /// A spool file of a user without an account, and one of root when
    /// root has none, go to rejected/ saying whose they were and what to
    /// configure; nothing is queued.
    @Test func spoolFileOfAUserWithoutAccount_isRejectedWithItsReason() throws {
        let h = try AccountHarness(accounts: ["alice"], withoutAccount: ["carol"])
        defer { h.users.remove() }
        try h.startDaemon()
        defer { h.daemon.stop() }
        try h.drop("carol", name: "carol-scan", merchant: "Carol")
        try h.drop("root", name: "root-scan", merchant: "Root")
        let rejected = "\(h.daemon.spoolDirectory)/rejected"
        try waitUntil(timeout: 30, "both files in rejected/") {
            FileManager.default.fileExists(atPath: "\(rejected)/carol-scan.json") && FileManager.default.fileExists(atPath: "\(rejected)/root-scan.json")
        }
        let carolReason = try String(contentsOfFile: "\(rejected)/carol-scan.json.reason", encoding: .utf8)
        #expect(carolReason.contains("is owned by uid \(h.users.uid("carol")) ('\(h.users.name("carol"))'), who has no account"), "\(carolReason)")
        #expect(carolReason.contains("\(h.accountsDirectory)/\(h.users.name("carol"))"), "\(carolReason)")
        let rootReason = try String(contentsOfFile: "\(rejected)/root-scan.json.reason", encoding: .utf8)
        #expect(rootReason.contains("is owned by uid 0 ('root'), who has no account"), "\(rootReason)")
        #expect(try h.listed("root", ["--all-accounts"]).isEmpty, "nothing queued")
        // The count follows the move into rejected/ by a moment.
        try waitUntil("status to count both rejected files") { try h.ctlJSON("root", ["status"])["spool_rejected"] == 2 }
    }

    /// bob's token is revoked on the server: bob's jobs pause and status
    /// says so; alice's keep syncing; bob's token is replaced and his drain
    /// resumes, nothing lost or duplicated.
    @Test func revokedToken_pausesThatAccountAlone_andItResumesOnceFixed() throws {
        let h = try AccountHarness()
        defer { h.users.remove() }
        try h.startDaemon()
        defer { h.daemon.stop() }
        _ = try h.add("alice", merchant: "Alice Before")
        _ = try h.add("bob", merchant: "Bob Before")
        try h.waitUntilDrained()
        try h.serverUser("revoke", "bob")

        var bobs: [String] = [], alices: [String] = []
        for n in 1...3 {
            bobs.append(try h.add("bob", merchant: "Bob \(n)"))
            alices.append(try h.add("alice", merchant: "Alice \(n)"))
        }
        try waitUntil(timeout: 30, "alice's expenses on the server") {
            Set(try h.serverRows().map(\.transactionID)).isSuperset(of: alices)
        }
        // Waited for, as the pause shows from the first refusal on: jobs
        // claimed with it are "sending" until the pass puts them back, and
        // alice's last answers are recorded after the server has them.
        try waitUntil(timeout: 30, "bob's account paused, his three expenses queued") {
            let bob = try h.ctlJSON("bob", ["status"])
            return bob["server"]?.stringValue == "needs_credentials" && bob["queued"] == 3 && bob["sending"] == 0
        }
        try waitUntil(timeout: 30, "alice's queue empty, her account not paused") {
            let alice = try h.ctlJSON("alice", ["status"])
            return alice["server"]?.stringValue == "ok" && alice["queued"] == 0 && alice["sending"] == 0
        }
        let admin = try h.ctlJSON("root", ["status"])
        #expect(admin["server"]?.stringValue == "needs_credentials")
        let states = admin["accounts"]?.arrayValue ?? []
        #expect(states.first { $0["account"]?.stringValue == h.users.name("bob") }?["server"]?.stringValue == "needs_credentials")
        #expect(states.first { $0["account"]?.stringValue == h.users.name("alice") }?["server"]?.stringValue == "ok")
        #expect(try h.ctl("root", ["status"]).stdout.contains("paused, needs credentials"))
        // A watch of alice's shows her queue, not the pause of bob's.
        let watch = try h.users.run(as: "alice", "/usr/bin/timeout", ["2", BuiltProducts.path("expensectl"), "--socket", h.daemon.socketPath, "watch", "--summary", "--json"])
        let first = try JSONValue.parse(Array((watch.stdout.split(separator: "\n").first ?? "").utf8))
        #expect(first["server"]?.stringValue == "ok" && first["queued"] == 0, "\(watch.stdout)")
        #expect(h.daemon.log.contains("of account \(h.users.name("bob")); its sending is paused"), "\(h.daemon.log)")
        // bob's 401 is his: while it is the server's last error, alice's
        // status does not show it; an admin sees it as bob's.
        try waitUntil(timeout: 30, "bob's refusal as the server's last error") {
            if try h.ctlJSON("root", ["status"])["last_error_class"]?.stringValue != "auth" { _ = try h.ctl("bob", ["sync"]) }
            guard try h.ctlJSON("root", ["status"])["last_error_class"]?.stringValue == "auth" else { return false }
            let hers = try h.ctlJSON("alice", ["status"])
            #expect(hers["last_error"] == .null && hers["last_error_class"] == .null, "\(hers)")
            // Her text has no error line (a bare "401" could be part of a time).
            let text = try h.ctl("alice", ["status"]).stdout
            #expect(!text.split(separator: "\n").contains { $0.hasPrefix("Last error") || $0.hasPrefix("Credentials") }, "\(text)")
            return true
        }
        #expect(try h.ctlJSON("bob", ["status"])["last_error_class"]?.stringValue == "auth")
        let perAccount = try h.ctlJSON("root", ["status"])["accounts"]?.arrayValue ?? []
        #expect(perAccount.first { $0["account"]?.stringValue == h.users.name("bob") }?["last_error_class"]?.stringValue == "auth")
        #expect(perAccount.first { $0["account"]?.stringValue == h.users.name("alice") }?["last_error_class"] == .null)
        try waitUntil(timeout: 30, "bob paused again") { try h.ctlJSON("bob", ["status"])["server"]?.stringValue == "needs_credentials" }

        h.writeToken(try h.serverUser("rotate", "bob"), for: "bob")
        try h.waitUntilDrained()
        try waitUntil(timeout: 30, "bob's expenses on the server") { Set(try h.serverRows().map(\.transactionID)).isSuperset(of: bobs) }
        let rows = try h.serverRows()
        #expect(rows.count == 8 && Set(rows.map(\.transactionID)).count == 8, "nothing lost, nothing twice")
        #expect(Set(rows.filter { $0.user == "bob" }.map(\.transactionID)).isSuperset(of: bobs))
        #expect(Set(rows.filter { $0.user == "alice" }.map(\.transactionID)).isSuperset(of: alices))
        #expect(try h.ctlJSON("bob", ["status"])["server"]?.stringValue == "ok")
    }

    /// kill -9 while a drain of both accounts' expenses is under way (at a
    /// response received, not yet recorded), then start again: each
    /// expense once on the server, under its own user, and once in the cache.
    @Test func killDuringAMixedDrain_eachExpenseOnceUnderItsUser() throws {
        let h = try AccountHarness()
        defer { h.users.remove() }
        h.stopServer()
        try h.startDaemon()
        var ids: [String: String] = [:]
        for n in 1...8 {
            ids[try h.add("alice", merchant: "A\(n)")] = "alice"
            ids[try h.add("bob", merchant: "B\(n)")] = "bob"
        }
        h.daemon.stop()
        h.daemon.environment["EXPENSED_FAULT"] = "after-response@7"
        try h.startServer()
        // Launched, not started: the drain begins at start and can reach
        // the fault point before the daemon has answered a status.
        guard try h.daemon.launch().waitForExit(timeout: 30) != nil else { throw TestFailure("the daemon did not reach its fault point") }
        #expect(h.daemon.process?.termination == .signaled(SIGKILL))
        h.daemon.environment["EXPENSED_FAULT"] = nil
        #expect(try h.serverRows().count < 16, "killed mid-drain")
        try h.startDaemon()
        defer { h.daemon.stop() }
        try h.waitUntilDrained()
        try waitUntil(timeout: 30, "all sixteen on the server") { try h.serverRows().count >= 16 }
        let rows = try h.serverRows()
        #expect(rows.count == 16 && Set(rows.map(\.transactionID)) == Set(ids.keys), "each once")
        for row in rows { #expect(ids[row.transactionID] == row.user, "\(row.transactionID) under \(row.user)") }
        #expect(try h.listed("alice") == Set(ids.filter { $0.value == "alice" }.keys))
        #expect(try h.listed("bob") == Set(ids.filter { $0.value == "bob" }.keys))
    }

    /// A token file others may read is no one's credential: its account
    /// waits, nothing of it is sent, status says why; once made private
    /// (chmod 600, nothing else changed) the account syncs.
    @Test func tokenFileOthersMayRead_holdsItsAccount_untilMadePrivate() throws {
        let h = try AccountHarness()
        defer { h.users.remove() }
        let bobFile = "\(h.accountsDirectory)/\(h.users.name("bob"))"
        chmod(bobFile, 0o644)
        try h.startDaemon()
        defer { h.daemon.stop() }
        let bob = try h.add("bob", merchant: "Bob Waits")
        let alice = try h.add("alice", merchant: "Alice Goes")
        try waitUntil(timeout: 30, "alice's expense on the server") { try h.serverRows().contains { $0.transactionID == alice } }
        try waitUntil(timeout: 30, "bob's account held") {
            try h.ctlJSON("root", ["status"])["accounts"]?.arrayValue?.first { $0["account"]?.stringValue == h.users.name("bob") }?["server"] == "needs_credentials"
        }
        let state = try h.ctlJSON("root", ["status"])["accounts"]?.arrayValue?.first { $0["account"]?.stringValue == h.users.name("bob") }
        let problem = state?["token_problem"]?.stringValue ?? ""
        #expect(problem.contains("is mode 644") && problem.contains("must be a file of mode 600 owned by uid 0"), "\(problem)")
        #expect(!(try h.serverRows().contains { $0.transactionID == bob }), "nothing of bob's was sent")
        #expect(!(h.server?.accessLog.contains { $0.contains(bob) } ?? true), "not even refused: never sent")
        #expect(h.daemon.log.contains("No usable token"), "\(h.daemon.log)")
        chmod(bobFile, 0o600)
        try waitUntil(timeout: 30, "bob's expense on the server") { try h.serverRows().contains { $0.transactionID == bob && $0.user == "bob" } }
    }

    /// What each account's other devices made comes with that account's
    /// refresh (its token, its cursor) into its own part of the cache.
    @Test func refresh_bringsEachAccountsExpensesIntoItsOwnCache() throws {
        let h = try AccountHarness()
        defer { h.users.remove() }
        let fromAlice = try h.createOnServer(as: "alice", merchant: "Alice Elsewhere")
        let fromBob = try h.createOnServer(as: "bob", merchant: "Bob Elsewhere")
        try h.startDaemon()
        defer { h.daemon.stop() }
        try waitUntil(timeout: 30, "both refreshed") { try h.listed("root", ["--all-accounts"]) == [fromAlice, fromBob] }
        #expect(try h.listed("alice") == [fromAlice])
        #expect(try h.listed("bob") == [fromBob])
        let later = try h.createOnServer(as: "bob", merchant: "Bob Later")
        #expect(try h.ctl("bob", ["sync", "--refresh", "--wait"]).status == 0)
        try waitUntil(timeout: 30, "bob's later one") { try h.listed("bob") == [fromBob, later] }
        #expect(try h.listed("alice") == [fromAlice])
    }

    @Test func accountsDirectoryThatIsNotThere_stopsTheDaemonAtStart() throws {
        let daemon = DaemonHarness(arguments: ["--accounts-dir", "/nonexistent/accounts-\(getpid())"])
        let result = try runCommand(BuiltProducts.path("expensed"), daemon.arguments, timeout: 20)
        #expect(result.status == 78, "\(result.stderr)")
        #expect(result.stderr.contains("accounts_dir '/nonexistent/accounts-\(getpid())' is not a directory expensed can read"), "\(result.stderr)")
    }

    /// Whoever may write in accounts_dir may give anyone an account: a
    /// directory others or its group may write, or one owned by another
    /// user, stops the daemon at start.
    @Test(arguments: [(0o777 as UInt32, 0 as UInt32), (0o770, 0), (0o700, 65534)])
    func accountsDirectoryOthersMayWrite_stopsTheDaemonAtStart(mode: UInt32, owner: UInt32) throws {
        let directory = TemporaryDirectory(prefix: "accounts-mode")
        let accounts = directory.at("accounts")
        #expect(mkdir(accounts, 0o700) == 0 && chmod(accounts, mode_t(mode)) == 0 && chown(accounts, owner, 0) == 0)
        let daemon = DaemonHarness(arguments: ["--accounts-dir", accounts], directory: directory)
        let result = try runCommand(BuiltProducts.path("expensed"), daemon.arguments, timeout: 20)
        #expect(result.status == 78, "\(result.stderr)")
        #expect(result.stderr.contains("accounts_dir '\(accounts)' is mode \(String(mode, radix: 8)) owned by uid \(owner); it must be writable by its owner only"),
                "\(result.stderr)")
    }

    @Test func adminGroupThatDoesNotExist_stopsTheDaemonAtStart() throws {
        let daemon = DaemonHarness(arguments: ["--admin-group", "no-such-group-\(getpid())"])
        let result = try runCommand(BuiltProducts.path("expensed"), daemon.arguments, timeout: 20)
        #expect(result.status == 78, "\(result.stderr)")
        #expect(result.stderr.contains("Admin group 'no-such-group-\(getpid())' does not exist"), "\(result.stderr)")
    }
}
