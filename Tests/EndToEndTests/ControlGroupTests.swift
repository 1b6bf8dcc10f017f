import ExpenseTestSupport
import Foundation
import Testing

/// `control_group` with a socket the daemon binds itself (no socket
/// activation, as `scripts/run` or a hand-written unit runs it): real
/// local users, made by the test, run `expensectl`. Serialized: users and
/// groups are the machine's.
@Suite(.serialized) struct ControlGroupTests {
    /// The socket belongs to the control group, mode 0660: alice and bob,
    /// members, both add and list through it; a user outside the group is
    /// kept out by the socket's mode and told so, naming the socket's
    /// owner, group and mode; a user the group database lists but whose
    /// session began before is told to log in again.
    @Test func socketTheDaemonBinds_belongsToTheControlGroup() throws {
        let h = try AccountHarness()
        defer { h.users.remove() }
        try h.users.addUser("erin")
        try h.users.addUser("frank", groups: ["ctl"])
        try h.startDaemon()
        defer { h.daemon.stop() }

        var status = stat()
        #expect(stat(h.daemon.socketPath, &status) == 0)
        let control = try #require(h.users.groups["ctl"])
        let controlID = try #require(getgrnam(control)?.pointee.gr_gid)
        #expect(status.st_gid == controlID, "the socket's group is \(status.st_gid), not the control group's \(controlID)")
        #expect(status.st_uid == 0)
        #expect(status.st_mode & 0o7777 == 0o660)

        let alices = try h.add("alice", merchant: "Alice Socket")
        let bobs = try h.add("bob", merchant: "Bob Socket")
        #expect(try h.listed("alice") == [alices])
        #expect(try h.listed("bob") == [bobs])

        let outsider = try h.ctl("erin", ["status"])
        #expect(outsider.status == 77, "\(outsider.stderr)")
        #expect(outsider.stderr.contains("Permission denied"), "\(outsider.stderr)")
        #expect(outsider.stderr.contains("owned by root:\(control), mode 0660"), "\(outsider.stderr)")
        #expect(outsider.stderr.contains("(\(h.users.name("erin"))) are not in group '\(control)'"), "\(outsider.stderr)")
        #expect(outsider.stderr.contains("usermod -aG \(control) \(h.users.name("erin"))"), "\(outsider.stderr)")

        // Listed in the group, in a session that began before it was.
        let frank = h.users.name("frank")
        let stale = try runCommand("/usr/bin/setpriv", ["--reuid=\(frank)", "--regid=\(frank)", "--clear-groups", "--",
                                                       BuiltProducts.path("expensectl"), "--socket", h.daemon.socketPath, "status"])
        #expect(stale.status == 77, "\(stale.stderr)")
        #expect(stale.stderr.contains("were added to group '\(control)' after this session began; log in again"), "\(stale.stderr)")

        // A member whom the socket's mode keeps out.
        #expect(chmod(h.daemon.socketPath, 0o600) == 0)
        let member = try h.ctl("alice", ["status"])
        #expect(member.status == 77, "\(member.stderr)")
        #expect(member.stderr.contains("are in group '\(control)', but the mode keeps its group out"), "\(member.stderr)")
    }

    /// Without a control group, the socket the daemon binds belongs to the
    /// admin group, whose members may use it; without either, to the
    /// daemon's own group.
    @Test func withoutAControlGroup_theSocketBelongsToTheAdminGroup() throws {
        let users = LocalUsers()
        defer { users.remove() }
        let admin = try users.addGroup("adm")
        let adminID = try #require(getgrnam(admin)?.pointee.gr_gid)
        for (arguments, group) in [(["--admin-group", admin], adminID), ([], getegid())] {
            let daemon = DaemonHarness(arguments: arguments)
            try daemon.start()
            defer { daemon.stop() }
            var status = stat()
            #expect(stat(daemon.socketPath, &status) == 0)
            #expect(status.st_gid == group, "\(arguments): the socket's group is \(status.st_gid)")
            #expect(status.st_mode & 0o7777 == 0o660)
        }
    }

    /// A daemon that may not give its socket to the control group (not
    /// root, not a member) refuses to start and says why.
    @Test func daemonThatCannotGiveTheSocketToItsGroup_refusesToStart() throws {
        let users = LocalUsers()
        defer { users.remove() }
        let control = try users.addGroup("ctl")
        try users.addUser("runner")
        let directory = TemporaryDirectory(prefix: "ctlgroup")
        chown(directory.path, users.uid("runner"), 0)
        let socket = directory.at("control.sock")
        _ = FileManager.default.createFile(atPath: directory.at("expensed.conf"), contents: Data())
        let result = try users.run(as: "runner", BuiltProducts.path("expensed"), [
            "--config", directory.at("expensed.conf"), "--state-dir", directory.at("state"), "--socket", socket, "--spool-dir", "none",
            "--log-target", "stderr", "--control-group", control,
        ], timeout: 30)
        #expect(result.status == 73, "\(result.stderr)")
        #expect(result.stderr.contains("Failed to give control socket '\(socket)' to control group '\(control)'"), "\(result.stderr)")
        #expect(result.stderr.contains("must run as root or as a member of that group"), "\(result.stderr)")
    }
}
