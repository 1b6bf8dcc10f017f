@testable import SyncEngine
import ExpenseTestSupport
import Foundation
import Synchronization
import Testing

@Suite struct TokenSourceTests {
    static func write(_ token: String, to path: String) throws {
        // A new file (new inode), as an editor or systemd would put it there.
        let temporary = path + ".new"
        try Data((token + "\n").utf8).write(to: URL(fileURLWithPath: temporary))
        #expect(rename(temporary, path) == 0)
    }

    @Test func manyRequestsAtOnce_allGetTheToken() async throws {
        let dir = TemporaryDirectory()
        let path = dir.at("token")
        try Self.write("first-token", to: path)
        let tokens = TokenSource(configuredPath: path)
        // Every send asks for the token; several run at once, on threads of
        // their own here, for long enough that the file is looked at again
        // a few times while others ask. None may trap (the once-a-second
        // check compares clock readings taken on different threads), and
        // all see the file's token.
        let wrong = Atomic<Int>(0), calls = Atomic<Int>(0), ready = Atomic<Int>(0)
        let end = Date().addingTimeInterval(2.5)
        let threads = (0..<4).map { _ in
            Thread {
                // All ask for the first time together: the file is read by
                // several at once, and must still count as one version.
                ready.add(1, ordering: .relaxed)
                while ready.load(ordering: .relaxed) < 4 {}
                while Date() < end {
                    for _ in 0..<1000 where tokens.current().token != "first-token" { wrong.add(1, ordering: .relaxed) }
                    calls.add(1000, ordering: .relaxed)
                }
            }
        }
        threads.forEach { $0.start() }
        while threads.contains(where: { !$0.isFinished }) { try await Task.sleep(for: .milliseconds(50)) }
        #expect(calls.load(ordering: .relaxed) > 10_000)
        #expect(wrong.load(ordering: .relaxed) == 0)
        #expect(tokens.generation == 1, "the unchanged file was read once")
    }

    @Test func replacedFile_isReadWithinASecondBySends_andAtOnceByAReload() throws {
        let dir = TemporaryDirectory()
        let path = dir.at("token")
        try Self.write("first-token", to: path)
        let tokens = TokenSource(configuredPath: path)
        #expect(tokens.current().token == "first-token")
        try Self.write("second-token", to: path)
        #expect(tokens.current().token == "first-token", "looked at less than a second ago")
        #expect(tokens.reloadIfChanged())
        let (token, problem, generation) = tokens.current()
        #expect(token == "second-token" && problem == nil && generation == 2)

        try Self.write("third-token", to: path)
        try waitUntil(timeout: 3, "the replaced file to be read by a send") { tokens.current().token == "third-token" }
        #expect(tokens.generation == 3)
    }

    /// A symbolic link in accounts_dir is not followed to a private file
    /// elsewhere: what is checked (owner, mode) is the file read.
    @Test func accountFileThatIsASymbolicLink_isRefused_notFollowed() throws {
        let dir = TemporaryDirectory()
        _ = FileManager.default.createFile(atPath: dir.at("elsewhere"), contents: Data("esk_elsewhere\n".utf8), attributes: [.posixPermissions: 0o600])
        #expect(mkdir(dir.at("accounts"), 0o700) == 0 && symlink(dir.at("elsewhere"), dir.at("accounts/alice")) == 0)
        let source = TokenSource(accountFile: dir.at("accounts/alice"), owner: geteuid())
        let (token, problem, _) = source.current()
        #expect(token == nil)
        #expect(problem?.contains("is a symbolic link") == true, "\(problem ?? "no problem")")
        // Replaced by a private file of its own: that is read.
        #expect(unlink(dir.at("accounts/alice")) == 0)
        _ = FileManager.default.createFile(atPath: dir.at("accounts/alice"), contents: Data("esk_alice\n".utf8), attributes: [.posixPermissions: 0o600])
        #expect(source.reloadIfChanged() && source.current().token == "esk_alice")
    }

    /// A FIFO as the token file neither holds the reader (an open that
    /// waits for a writer) nor counts as a token.
    @Test func tokenFileThatIsAFIFO_isRefusedWithoutWaiting() throws {
        let dir = TemporaryDirectory()
        #expect(mkfifo(dir.at("token"), 0o600) == 0)
        // On a thread of its own: an open that waits for a writer would
        // never return, and the test must end to say so.
        let answer = Mutex<(token: String?, problem: String?)?>(nil)
        let source = TokenSource(configuredPath: dir.at("token"))
        Thread {
            let (token, problem, _) = source.current()
            answer.withLock { $0 = (token, problem) }
        }.start()
        try waitUntil(timeout: 30, "the FIFO to be looked at") { answer.withLock { $0 != nil } }
        let (token, problem) = try #require(answer.withLock { $0 })
        #expect(token == nil)
        #expect(problem == "token file '\(dir.at("token"))' is not a regular file")
    }
}

/// Which account a local user has, from `accounts_dir` and `token_file`.
@Suite struct AccountTokensTests {
    /// systemd's layout: `--accounts-dir %d --token-file %d/token`, one directory for both.
    @Test func tokenFileInTheAccountsDirectory_isTheDefaultAccountsNotAUsers() throws {
        let dir = TemporaryDirectory()
        for name in ["token", "alice"] {
            _ = FileManager.default.createFile(atPath: dir.at(name), contents: Data("esk_\(name)\n".utf8), attributes: [.posixPermissions: 0o600])
        }
        let tokens = AccountTokens(tokenFile: dir.at("token"), accountsDirectory: dir.path + "/")
        #expect(tokens.accountsToRefresh() == ["", "alice"], "the default account once, no account named 'token'")
        #expect(try tokens.account(ofUser: "alice") == "alice")
        #expect(try tokens.account(ofUser: "token") == "", "a user named as the file has the default account, not the file as theirs")
        #expect(try tokens.account(ofUser: "bob") == "")
        #expect(tokens.tokenProblem(of: "token") != nil, "no account's token source reads the default account's file")
        #expect(tokens.isAccountFileName("alice") && !tokens.isAccountFileName("token") && !tokens.isAccountFileName(""))
        // Apart, the file's name is a name like any other.
        let apart = AccountTokens(tokenFile: "/etc/expensed/token", accountsDirectory: dir.path)
        #expect(apart.accountsToRefresh() == ["", "alice", "token"])
    }

    @Test func userFileThatCannotBeLookedAt_isNoAccount_notTheDefault() throws {
        let dir = TemporaryDirectory()
        // accounts_dir replaced by a file while the daemon runs: lstat of a
        // user's file fails with ENOTDIR, which does not say it is absent.
        _ = FileManager.default.createFile(atPath: dir.at("accounts"), contents: Data())
        let tokens = AccountTokens(tokenFile: dir.at("default"), accountsDirectory: dir.at("accounts"))
        #expect(throws: AccountTokens.Unknown.self) { try tokens.account(ofUser: "alice") }
        #expect(try tokens.account(ofUser: nil) == "", "a uid without a name has the default account")
    }
}
