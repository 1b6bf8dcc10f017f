import ExpenseCore
import ExpenseTestSupport
import Foundation
import SQLite
import Testing

/// `expense-server serve --tls-cert --tls-key` with a test CA: expensed
/// syncs over https:// trusting it (`--ca-file`), refuses a certificate
/// another CA signed as a transport failure with the reason, and the
/// server takes a new certificate on SIGHUP.
@Suite struct TLSTests {
    /// A CA and a certificate for 127.0.0.1 it signed, made by openssl.
    struct Authority {
        let ca: String
        let certificate: String
        let key: String

        init(_ name: String, in directory: String) throws {
            ca = "\(directory)/\(name)-ca.pem"
            certificate = "\(directory)/\(name)-server.pem"
            key = "\(directory)/\(name)-server.key"
            let caKey = "\(directory)/\(name)-ca.key", request = "\(directory)/\(name).csr", extensions = "\(directory)/\(name).ext"
            _ = FileManager.default.createFile(atPath: extensions, contents: Data("subjectAltName=IP:127.0.0.1\n".utf8))
            let ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
            for arguments in [
                ["req", "-x509"] + ec + ["-keyout", caKey, "-out", ca, "-days", "2", "-subj", "/CN=expensed test CA \(name)"],
                ["req"] + ec + ["-keyout", key, "-out", request, "-subj", "/CN=127.0.0.1"],
                ["x509", "-req", "-in", request, "-CA", ca, "-CAkey", caKey, "-CAcreateserial", "-out", certificate, "-days", "2",
                 "-extfile", extensions],
            ] {
                let result = try runCommand("/usr/bin/openssl", arguments)
                guard result.status == 0 else { throw TestFailure("openssl \(arguments[0]): \(result.stderr)") }
            }
        }
    }

    @Test func expensedSyncsOverHTTPS_refusesAnotherCAsCertificate_andTheServerReloadsOnSIGHUP() throws {
        let directory = TemporaryDirectory(prefix: "tls")
        let first = try Authority("one", in: directory.path), second = try Authority("two", in: directory.path)
        // The server reads the files named on its command line: copies it can be given new ones in.
        let cert = directory.at("server.pem"), key = directory.at("server.key")
        try FileManager.default.copyItem(atPath: first.certificate, toPath: cert)
        try FileManager.default.copyItem(atPath: first.key, toPath: key)
        let data = directory.at("server")
        let server = try ServerProcess(dataDirectory: data, arguments: ["--tls-cert", cert, "--tls-key", key], outputDirectory: directory.path)
        defer { server.stop() }
        let tokenFile = directory.at("token")
        #expect(FileManager.default.createFile(atPath: tokenFile, contents: Data((server.token + "\n").utf8), attributes: [.posixPermissions: 0o600]))
        func daemon(trusting ca: String) throws -> DaemonHarness {
            let daemon = DaemonHarness(arguments: [
                "--server", "https://127.0.0.1:\(server.port)", "--token-file", tokenFile, "--ca-file", ca,
                "--drain-interval", "200ms", "--backoff-base", "50ms", "--backoff-cap", "500ms", "--connect-timeout", "2s", "--request-timeout", "10s",
            ])
            try daemon.start()
            return daemon
        }
        func status(_ daemon: DaemonHarness) throws -> JSONValue? { try daemon.request(["op": "status"])["result"] }

        let trusting = try daemon(trusting: first.ca)
        defer { _ = trusting.stop() }
        #expect(try trusting.ctl(["add", "--merchant", "Over TLS", "--amount", "3.00", "--currency", "EUR", "--date", "2026-11-29"]).status == 0)
        try trusting.waitForQueue(timeout: 60, "the expense to sync over https")
        let db = try Connection(path: "\(data)/expense-server.db")
        #expect(try db.scalarInt("SELECT count(*) FROM expenses WHERE merchant = 'Over TLS'") == 1)

        // A daemon that trusts only the other CA refuses this certificate:
        // a transport failure, kept and retried, with libcurl's reason.
        let wary = try daemon(trusting: second.ca)
        defer { _ = wary.stop() }
        #expect(try wary.ctl(["add", "--merchant", "Held back", "--amount", "4.00", "--currency", "EUR", "--date", "2026-11-29"]).status == 0)
        try waitUntil(timeout: 60, "the certificate to be refused") { try status(wary)?["last_error_class"] == "transport" }
        let refused = try #require(try status(wary))
        let reason = refused["last_error"]?.stringValue ?? ""
        #expect(reason.contains("SSL certificate problem") || reason.contains("certificate"), "\(reason)")
        #expect(refused["needs_attention"] == 0, "\(refused)")
        #expect(refused["queued"]?.intValue.map { $0 + (refused["sending"]?.intValue ?? 0) } == 1, "\(refused)")
        #expect(try wary.ctl(["status"]).stdout.contains("certificate"))
        #expect(try db.scalarInt("SELECT count(*) FROM expenses WHERE merchant = 'Held back'") == 0)

        // The other CA's certificate, in place, then SIGHUP: the wary daemon's
        // retry gets through; the first daemon now refuses the server.
        #expect(FileManager.default.createFile(atPath: cert, contents: try Data(contentsOf: URL(fileURLWithPath: second.certificate))))
        #expect(FileManager.default.createFile(atPath: key, contents: try Data(contentsOf: URL(fileURLWithPath: second.key))))
        server.child.signal(SIGHUP)
        do {
            try waitUntil(timeout: 20, "the reload") { server.child.standardError.contains("reloaded the TLS certificate") }
        } catch {
            Issue.record("\(server.child.standardError.split(separator: "\n").filter { !$0.hasPrefix("GET") && !$0.hasPrefix("POST") })")
            throw error
        }
        try waitUntil(timeout: 60, "the held-back expense to sync after the reload") {
            try db.scalarInt("SELECT count(*) FROM expenses WHERE merchant = 'Held back'") == 1
        }
        // A new connection gets the new certificate: trusted through the
        // second CA, refused through the first. (Connections open at the
        // reload finish on the old one.)
        let url = "https://127.0.0.1:\(server.port)/healthz"
        #expect(try runCommand("/usr/bin/curl", ["-s", "-f", "--cacert", second.ca, url]).status == 0)
        let old = try runCommand("/usr/bin/curl", ["-s", "-S", "--cacert", first.ca, url])
        #expect(old.status == 60 && old.stderr.contains("certificate"), "\(old.status): \(old.stderr)")
        // A reload whose files are not usable keeps the certificate in service.
        _ = FileManager.default.createFile(atPath: key, contents: Data("not a key".utf8))
        server.child.signal(SIGHUP)
        try waitUntil(timeout: 20, "the failed reload") { server.child.standardError.contains("Failed to reload the TLS certificate") }
        #expect(try wary.ctl(["add", "--merchant", "Still served", "--amount", "6.00", "--currency", "EUR", "--date", "2026-11-29"]).status == 0)
        try waitUntil(timeout: 60, "the next expense to sync") { try db.scalarInt("SELECT count(*) FROM expenses WHERE merchant = 'Still served'") == 1 }

        // The web interface's cookies are Secure over TLS.
        let page = try runCommand("/usr/bin/curl", ["-s", "-i", "--cacert", second.ca, "https://127.0.0.1:\(server.port)/sign-in"])
        #expect(page.stdout.contains("Set-Cookie: es_signin=") && page.stdout.contains("SameSite=Strict; Secure"), "\(page.stdout)")
        #expect(!server.child.standardError.contains("BEGIN"), "no key material in the log")
    }

    @Test func serve_refusesTLSFilesItCannotUse_withExit1() throws {
        let directory = TemporaryDirectory(prefix: "tls")
        let authority = try Authority("one", in: directory.path)
        let binary = BuiltProducts.path("expense-server")
        let cases: [([String], String)] = [
            (["--tls-cert", directory.at("missing.pem"), "--tls-key", authority.key], "Failed to read the TLS certificate"),
            (["--tls-cert", authority.certificate, "--tls-key", directory.at("missing.key")], "Failed to read the TLS key"),
            (["--tls-cert", authority.certificate, "--tls-key", "/etc/hostname"], "not a PEM file"),
            (["--tls-cert", authority.key, "--tls-key", authority.certificate], "libmicrohttpd refused to start"),
        ]
        for (arguments, says) in cases {
            let result = try runCommand(binary, ["serve", "--listen", "127.0.0.1:0", "--data-dir", directory.at("data")] + arguments, timeout: 30)
            #expect(result.status == 1, "\(arguments): \(result.stderr)")
            #expect(result.stderr.contains(says), "\(arguments): \(result.stderr)")
            #expect(!result.stderr.contains("PRIVATE KEY"), "\(result.stderr)")
        }
    }
}
