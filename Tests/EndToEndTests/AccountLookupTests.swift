import ExpenseCore
import ExpenseTestSupport
import Foundation
import Testing

/// How the daemon tells whose a request is: `--account` must name an
/// account; what it learnt of callers follows `accounts_dir` at once; a
/// user database that stops answering for one caller holds up no one
/// else. Real local users and the real daemon, as in ``AccountTests``.
/// Serialized: users and groups are the machine's.
@Suite(.serialized) struct AccountLookupTests {
    static let expense = ["--merchant", "M", "--amount", "1", "--currency", "EUR", "--date", "2026-11-29"]

    /// An admin's `--account` that names no account (no file in
    /// accounts_dir, nor the default account when there is none) is
    /// refused on every verb, reads too, with exit status 77; nothing is
    /// queued for it. The default account, named `''`, is refused when
    /// there is none.
    @Test func accountThatIsNotThere_isRefusedOnEveryVerb() throws {
        let h = try AccountHarness(admins: ["dave"])
        defer { h.users.remove() }
        try h.startDaemon()
        defer { h.daemon.stop() }
        let bob1 = try h.add("bob", merchant: "Bob One")
        let verbs: [[String]] = [["add"] + Self.expense, ["list"], ["show", bob1], ["status"], ["stats"], ["sync"], ["retry", bob1],
                                 ["discard", bob1], ["edit", bob1, "--comment", "x"], ["delete", bob1], ["resolve", bob1, "--take", "mine"],
                                 ["watch"]]
        for role in ["root", "dave"] {
            for (name, why) in [("nobody-\(getpid())", "there is no account 'nobody-\(getpid())': no token file '\(h.accountsDirectory)/nobody-\(getpid())'"),
                                ("", "there is no default account: token_file is not set"), (".hidden", "there is no account '.hidden'")] {
                for verb in verbs {
                    let result = try h.ctl(role, [verb[0], "--account", name] + verb.dropFirst())
                    #expect(result.status == 77, "\(role) \(verb) --account '\(name)': \(result.stderr)")
                    #expect(result.stderr.contains(why), "\(role) \(verb): \(result.stderr)")
                }
            }
        }
        let status = try h.ctlJSON("root", ["status"])
        #expect(status["queued"] == 0 && status["needs_attention"] == 0 && status["sending"] == 0, "\(status)")
        #expect(status["accounts"]?.arrayValue?.compactMap { $0["account"]?.stringValue }.sorted() == [h.users.name("alice"), h.users.name("bob")].sorted())
        #expect(try h.listed("root", ["--all-accounts"]) == [bob1], "bob's expense untouched")
        // An account that is there works by name, as before.
        #expect(try h.listed("dave", ["--account", h.users.name("bob")]) == [bob1])
        // A non-admin naming an unknown account learns nothing of it: refused as any other's.
        let probe = try h.ctl("alice", ["list", "--account", "nobody-\(getpid())"])
        #expect(probe.status == 77 && probe.stderr.contains("only root and members of admin_group"), "\(probe.stderr)")
    }

    /// Without accounts_dir there is one account, the default one: an
    /// add for any other name would wait forever, so it is refused.
    @Test func accountNamedWithoutAccountsDirectory_isRefused() throws {
        let daemon = DaemonHarness()
        try daemon.start()
        defer { daemon.stop() }
        let result = try daemon.ctl(["add", "--account", "bob"] + Self.expense)
        #expect(result.status == 77, "\(result.stderr)")
        #expect(result.stderr.contains("there is no account 'bob': without accounts_dir there is only the default account"), "\(result.stderr)")
        #expect(try daemon.ctl(["add", "--account", ""] + Self.expense).status == 0, "the default account by name")
        #expect(try daemon.ctl(["list", "--account", "bob"]).status == 77)
    }

    /// What the daemon learnt of a caller is forgotten when accounts_dir
    /// changes: a token file that appears gives its user an account at
    /// their next request, and one removed takes it away, with no wait.
    @Test func tokenFileThatAppearsOrGoes_changesTheCallersAccountAtOnce() throws {
        let h = try AccountHarness(withoutAccount: ["carol"], admins: ["dave"])
        defer { h.users.remove() }
        try h.startDaemon()
        defer { h.daemon.stop() }
        let carol = h.users.name("carol")
        for _ in 0..<2 { #expect(try h.ctl("carol", ["list"]).status == 77, "no account, asked twice (the second from what was learnt)") }
        #expect(try h.ctl("dave", ["list", "--account", carol]).status == 77)
        h.writeToken("esk_carol_not_on_the_server", for: "carol")
        let list = try h.ctl("carol", ["list"])
        #expect(list.status == 0, "her file is there now: \(list.stderr)")
        #expect(try h.ctlJSON("carol", ["status"])["account"]?.stringValue == carol)
        #expect(try h.ctl("dave", ["list", "--account", carol]).status == 0)
        #expect(unlink("\(h.accountsDirectory)/\(carol)") == 0)
        let gone = try h.ctl("carol", ["add"] + Self.expense)
        #expect(gone.status == 77 && gone.stderr.contains("has no account"), "\(gone.stderr)")
        #expect(try h.ctl("dave", ["add", "--account", carol] + Self.expense).status == 77)
    }

    /// The user database stops answering for carol's uid (an LD_PRELOAD
    /// shim holds her `getpwuid_r` until released): her add waits, and
    /// meanwhile alice's adds and lists are answered.
    @Test func userDatabaseStuckForOneCaller_holdsUpNoOneElse() throws {
        let h = try AccountHarness(withoutAccount: ["carol"])
        defer { h.users.remove() }
        let entered = h.directory.at("getpwuid-entered"), release = h.directory.at("getpwuid-release")
        h.daemon.environment["LD_PRELOAD"] = try Shim.slowGetpwuid(in: h.directory.path)
        h.daemon.environment["SLOW_GETPWUID_UID"] = "\(h.users.uid("carol"))"
        h.daemon.environment["SLOW_GETPWUID_ENTERED"] = entered
        h.daemon.environment["SLOW_GETPWUID_RELEASE"] = release
        try h.startDaemon()
        defer { h.daemon.stop() }
        _ = try h.add("alice", merchant: "Alice Before")
        let carol = try ChildProcess("/usr/bin/setpriv", ["--reuid=\(h.users.name("carol"))", "--regid=\(h.users.name("carol"))", "--init-groups", "--",
                                                      BuiltProducts.path("expensectl"), "--socket", h.daemon.socketPath, "add"] + Self.expense,
                                     outputDirectory: h.directory.path)
        defer { carol.stop() }
        try waitUntil(timeout: 30, "carol's lookup to be held") { FileManager.default.fileExists(atPath: entered) }
        let during = try h.ctl("alice", ["add", "--merchant", "Alice During", "--amount", "1", "--currency", "EUR", "--date", "2026-11-29", "--json"])
        #expect(during.status == 0, "\(during.stderr)")
        #expect(try h.ctl("alice", ["list"]).status == 0)
        #expect(carol.isRunning, "carol's add is still waiting for the user database")
        _ = FileManager.default.createFile(atPath: release, contents: Data())
        #expect(carol.waitForExit(timeout: 30) == 77, "answered once the user database answers: no account. \(carol.standardError)")
        #expect(carol.standardError.contains("has no account"), "\(carol.standardError)")
    }
}
