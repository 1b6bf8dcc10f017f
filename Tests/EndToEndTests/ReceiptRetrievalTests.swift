import Digest
import ExpenseCore
import ExpenseTestSupport
import Foundation
import SQLite
import Testing

/// `expensectl receipt`: the bytes back from the daemon's own copy while
/// the upload waits, from the server once synced, always checked against
/// the SHA-256 the daemon recorded, through the real daemon and server.
@Suite struct ReceiptRetrievalTests {
    static let jpeg = SampleReceipt.jpeg(size: 300_000, seed: 4)

    /// Adds an expense with `bytes` as its receipt; returns its transaction id.
    static func addWithReceipt(_ daemon: DaemonHarness, _ bytes: [UInt8] = jpeg, name: String = "scan.jpg") throws -> String {
        let path = daemon.directory.at(name)
        SampleReceipt.write(bytes, to: path)
        let result = try daemon.ctl(["add", "--receipt", path, "--merchant", "Taxi"])
        guard result.status == 0 else { throw TestFailure("add: \(result.stderr)") }
        return result.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// Adds as ``addWithReceipt(_:_:name:)`` and waits until the receipt is
    /// on the server and the daemon's copy gone: `receipt` then fetches it.
    static func addSynced(_ sync: SyncHarness, _ bytes: [UInt8] = jpeg, name: String = "scan.jpg") throws -> String {
        let id = try addWithReceipt(sync.daemon, bytes, name: name)
        try sync.waitUntilDrained()
        try sync.daemon.waitUntilNoReceiptFiles()
        return id
    }

    /// Runs `expensectl receipt` with its standard output in a file, and
    /// returns the status, that file's bytes, and standard error.
    static func receiptToStandardOutput(_ daemon: DaemonHarness, _ id: String) throws -> (status: Int32, bytes: [UInt8], stderr: String) {
        let out = daemon.directory.at("stdout-\(UUID().uuidString)")
        let result = try runCommand("/bin/sh", ["-c", "exec \"$0\" --socket \"$1\" receipt \"$2\" > \"$3\"",
                                                BuiltProducts.path("expensectl"), daemon.socketPath, id, out])
        return (result.status, [UInt8](FileManager.default.contents(atPath: out) ?? Data()), result.stderr)
    }

    static func bytes(_ path: String) -> [UInt8]? {
        FileManager.default.contents(atPath: path).map { [UInt8]($0) }
    }

    /// Files in `directory` other than `keeping`: a failed write leaves no temporary file.
    static func strays(in directory: String, keeping: Set<String>) -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []).filter { !keeping.contains($0) }
    }

    @Test func receipt_whileTheServerIsDown_comesFromTheDaemonsCopy_toAFileAndToAPipe() throws {
        let sync = try SyncHarness(startServer: false)
        try sync.daemon.start()
        defer { sync.daemon.stop() }
        let id = try Self.addWithReceipt(sync.daemon)

        let out = sync.daemon.directory.at("out.jpg")
        let json = try sync.daemon.ctlJSON(["receipt", id, "-o", out])
        #expect(Self.bytes(out) == Self.jpeg)
        #expect(json["source"] == "queued")
        #expect(json["size"] == .integer(Int64(Self.jpeg.count)))
        #expect(json["sha256"] == .string(Hex.encode(SHA256.hash(Self.jpeg))))
        #expect(json["content_type"] == "image/jpeg")

        let piped = try Self.receiptToStandardOutput(sync.daemon, id)
        #expect(piped.status == 0, "\(piped.stderr)")
        #expect(piped.bytes == Self.jpeg)
        // Into a pipe (whose buffer expensectl enlarges), read by another program.
        let throughPipe = sync.daemon.directory.at("through-pipe.jpg")
        let viaCat = try runCommand("/bin/bash", ["-c", "set -o pipefail; \"$0\" --socket \"$1\" receipt \"$2\" | cat > \"$3\"",
                                                BuiltProducts.path("expensectl"), sync.daemon.socketPath, id, throughPipe])
        #expect(viaCat.status == 0, "\(viaCat.stderr)")
        #expect(Self.bytes(throughPipe) == Self.jpeg)
        // A prefix of the id works as for every verb.
        #expect(try Self.receiptToStandardOutput(sync.daemon, String(id.prefix(12))).bytes == Self.jpeg)
    }

    /// The descriptors the daemon holds open now (`/proc/PID/fd`).
    static func openDescriptors(_ pid: Int32) throws -> Int {
        try FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/fd").count
    }

    @Test func receipt_handsOutEachDescriptorOnce_andKeepsNone_evenWhenTheClientLeavesFirst() throws {
        let sync = try SyncHarness(startServer: false)
        try sync.daemon.start()
        defer { sync.daemon.stop() }
        let id = try Self.addWithReceipt(sync.daemon)
        let out = sync.daemon.directory.at("out.jpg")
        // Once first: whatever the first request sets up stays, and is no leak.
        #expect(try sync.daemon.ctl(["receipt", id, "-o", out]).status == 0)
        let pid = try sync.daemon.daemonPID()
        // (The connection that asked the pid may still count here: a slack of one, against 21 descriptors handed out.)
        let before = try Self.openDescriptors(pid)

        for _ in 0..<10 {
            #expect(try sync.daemon.ctl(["receipt", id, "-o", out]).status == 0)
        }
        // Clients that ask and leave without reading the answer (or its descriptor).
        for n in 0..<10 {
            let client = try RawClient(path: sync.daemon.socketPath)
            try client.send("{\"id\":\(n),\"op\":\"receipt\",\"ref\":\"\(id)\"}\n")
        }
        // And one that reads the answer but never takes the descriptor out of it.
        do {
            let reader = try RawClient(path: sync.daemon.socketPath)
            try reader.send("{\"id\":1,\"op\":\"receipt\",\"ref\":\"\(id)\"}\n")
            #expect(try reader.readJSONLine()["result"]?["sha256"] == .string(Hex.encode(SHA256.hash(Self.jpeg))))
        }
        #expect(Self.bytes(out) == Self.jpeg)

        // The connections close as the daemon notices; every descriptor it handed out closes with them.
        try waitUntil(timeout: 20, "the daemon to hold no more descriptors than before") {
            try Self.openDescriptors(pid) <= before
        }
    }

    @Test func receipt_afterSync_comesFromTheServer_byteIdentical_withTheAccountsToken() throws {
        let sync = try SyncHarness()
        try sync.daemon.start()
        defer { sync.daemon.stop() }
        let png = SampleReceipt.png(size: 120_000)
        let id = try Self.addSynced(sync, png, name: "scan.png")

        let out = sync.daemon.directory.at("from-server.png")
        let json = try sync.daemon.ctlJSON(["receipt", id, "--output", out])
        #expect(json["source"] == "server")
        #expect(json["kind"] == "png")
        #expect(Self.bytes(out) == png)
        let gets = sync.accessLog(awaiting: 1) { $0.first == "GET" && $0.count > 2 && $0[1] == "/v1/expenses/\(id)/receipt" }
        #expect(gets.count == 1)
        #expect(gets.first?[2] == "200", "fetched with the account's token: \(gets)")
        #expect(try Self.receiptToStandardOutput(sync.daemon, id).bytes == png)
        // The unlinked copy it was handed in leaves nothing behind.
        #expect(sync.daemon.receiptFiles().isEmpty)
    }

    @Test func receipt_whoseTokenTheServerRefuses_saysSo_andNoTokenIsShownOrLogged() throws {
        let sync = try SyncHarness()
        try sync.daemon.start()
        defer { sync.daemon.stop() }
        let id = try Self.addSynced(sync)
        let out = sync.daemon.directory.at("refused.jpg")
        let fetched = try sync.daemon.ctl(["receipt", id, "-o", out])
        #expect(fetched.status == 0, "\(fetched.stderr)")

        let wrong = "not-the-token-5f0e27"
        sync.writeToken(wrong)
        // The token file is looked at again within a second: until then the old token fetches it.
        var refused = fetched
        try waitUntil(timeout: 20, "the fetch to go with the new token") {
            try? FileManager.default.removeItem(atPath: out)
            refused = try sync.daemon.ctl(["receipt", id, "-o", out])
            return refused.status != 0
        }
        #expect(refused.status == 69, "\(refused.stderr)")
        #expect(refused.stderr.contains("the server did not give the receipt of \(id): the server answered 401 (credentials refused)"), "\(refused.stderr)")
        #expect(!FileManager.default.fileExists(atPath: out))
        // Refused as a sync request would be: the account waits for a new token.
        let status = try sync.daemon.ctlJSON(["status"])
        #expect(status["server"] == "needs_credentials", "\(status.serialized())")
        #expect(status["last_error_class"] == "auth", "\(status.serialized())")
        for (what, text) in [("stderr", refused.stderr), ("stdout", refused.stdout + fetched.stdout + fetched.stderr), ("the daemon's log", sync.daemon.log)] {
            #expect(!text.contains(wrong) && !text.contains(sync.token), "no token in \(what)")
        }
    }

    @Test func receipt_onTheServerLargerThanReceiptMaxBytes_isRefused_andWritesNothing() throws {
        let sync = try SyncHarness()
        try sync.daemon.start()
        let id = try Self.addSynced(sync)
        sync.daemon.stop()
        // The receipt (300 000 bytes) was taken under the default limit; read back under a smaller one.
        sync.daemon.arguments += ["--receipt-max-bytes", "100000"]
        try sync.daemon.start()
        defer { sync.daemon.stop() }

        let out = sync.daemon.directory.at("too-large.jpg")
        let result = try sync.daemon.ctl(["receipt", id, "-o", out])
        #expect(result.status == 69, "\(result.stderr)")
        #expect(result.stderr.contains("the receipt is larger than receipt_max_bytes (100000 bytes)"), "\(result.stderr)")
        #expect(!FileManager.default.fileExists(atPath: out))
    }

    @Test func receipt_ofADamagedLocalCopy_namesTheDigestMismatch_andWritesNothing() throws {
        let sync = try SyncHarness(startServer: false)
        try sync.daemon.start()
        defer { sync.daemon.stop() }
        let id = try Self.addWithReceipt(sync.daemon)
        guard let file = sync.daemon.receiptFiles().first else { throw TestFailure("no receipt copy in the state directory") }
        // One byte changed in the middle: still the same size and kind.
        let copy = "\(sync.daemon.stateDirectory)/receipts/\(file)"
        let handle = try #require(FileHandle(forWritingAtPath: copy))
        handle.seek(toFileOffset: 150_000)
        handle.write(Data([Self.jpeg[150_000] ^ 0xFF]))
        handle.closeFile()

        let outputs = sync.daemon.directory.at("outputs")
        try FileManager.default.createDirectory(atPath: outputs, withIntermediateDirectories: true)
        let existing = "\(outputs)/kept.jpg"
        SampleReceipt.write(Array("what was here".utf8), to: existing)
        let result = try sync.daemon.ctl(["receipt", id, "-o", existing])
        #expect(result.status == 65, "\(result.stderr)")
        #expect(result.stderr.contains("damaged: its SHA-256 is "), "\(result.stderr)")
        #expect(result.stderr.contains("recorded \(Hex.encode(SHA256.hash(Self.jpeg)))"), "\(result.stderr)")
        #expect(Self.bytes(existing) == Array("what was here".utf8), "the existing file is untouched")
        #expect(Self.strays(in: outputs, keeping: ["kept.jpg"]).isEmpty, "no temporary file left")

        let piped = try Self.receiptToStandardOutput(sync.daemon, id)
        #expect(piped.status == 65)
        #expect(piped.bytes.isEmpty, "not one byte on standard output")
        #expect(sync.daemon.log.contains("damaged"), "logged by the daemon")
    }

    @Test func receipt_toAnOutputThatCannotBeWritten_exits73_andAsksNothing() throws {
        let sync = try SyncHarness(startServer: false)
        try sync.daemon.start()
        defer { sync.daemon.stop() }
        let id = try Self.addWithReceipt(sync.daemon)
        let missingFolder = try sync.daemon.ctl(["receipt", id, "-o", sync.daemon.directory.at("no/such/folder/r.jpg")])
        #expect(missingFolder.status == 73, "\(missingFolder.stderr)")
        #expect(missingFolder.stderr.contains("cannot write"), "\(missingFolder.stderr)")
        let folder = sync.daemon.directory.at("a-folder")
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        let intoFolder = try sync.daemon.ctl(["receipt", id, "-o", folder])
        #expect(intoFolder.status == 73, "\(intoFolder.stderr)")
        #expect(Self.strays(in: folder, keeping: []).isEmpty)
        // A read-only folder (root passes permission checks, so a read-only mount stands in: /proc).
        let readOnly = try sync.daemon.ctl(["receipt", id, "-o", "/proc/r.jpg"])
        #expect(readOnly.status == 73 || readOnly.status == 77, "\(readOnly.stderr)")
        #expect(readOnly.stderr.contains("cannot write '/proc/r.jpg'"), "\(readOnly.stderr)")
    }

    @Test func receipt_ofASyncedReceipt_whileTheServerIsDown_exits75_andWritesNothing() throws {
        let sync = try SyncHarness()
        try sync.daemon.start()
        defer { sync.daemon.stop() }
        let id = try Self.addSynced(sync)
        #expect(try sync.daemon.ctlJSON(["status"])["server"] == "ok")
        sync.stopServer()

        let out = sync.daemon.directory.at("never.jpg")
        let result = try sync.daemon.ctl(["receipt", id, "-o", out])
        #expect(result.status == 75, "\(result.stderr)")
        #expect(result.stderr.contains("is on the server, which cannot be reached"), "\(result.stderr)")
        #expect(!FileManager.default.fileExists(atPath: out))
        let leftovers = try FileManager.default.contentsOfDirectory(atPath: sync.daemon.directory.path).filter { $0.hasPrefix(".never.jpg.") }
        #expect(leftovers.isEmpty, "no temporary file left: \(leftovers)")
        // The fetch was a contact like any other: status says what it found,
        // as soon as the command has its answer.
        let down = try sync.daemon.ctlJSON(["status"])
        #expect(down["server"] == "unreachable", "\(down.serialized())")
        #expect(down["last_error_class"] == "transport", "\(down.serialized())")
        #expect(down["last_error"]?.stringValue?.isEmpty == false, "\(down.serialized())")

        try sync.startServer()
        #expect(try sync.daemon.ctl(["receipt", id, "-o", out]).status == 0)
        #expect(Self.bytes(out) == Self.jpeg)
        let back = try sync.daemon.ctlJSON(["status"])
        #expect(back["server"] == "ok" && back["last_error"] == .null, "the fetch that worked ends the outage: \(back.serialized())")
    }

    @Test func receipt_whoseServerCopyDiffersFromTheRecordedDigest_isRefused() throws {
        let sync = try SyncHarness()
        try sync.daemon.start()
        defer { sync.daemon.stop() }
        let id = try Self.addSynced(sync)
        // The server's stored file damaged on its disk; the server still
        // sends the digest it recorded, and the daemon's record says the same.
        let db = try Connection(path: "\(sync.serverData)/expense-server.db", readOnly: true)
        let stored = try #require(try db.query("SELECT receipt_file FROM expenses WHERE transaction_id = ?", [.text(id)]) { $0.string(0) }.first)
        var damaged = Self.jpeg
        damaged[1000] ^= 0x01
        SampleReceipt.write(damaged, to: "\(sync.serverData)/receipts/\(stored)")

        let out = sync.daemon.directory.at("server-damaged.jpg")
        let result = try sync.daemon.ctl(["receipt", id, "-o", out])
        #expect(result.status == 65, "\(result.stderr)")
        #expect(result.stderr.contains("the server's receipt of \(id) is damaged"), "\(result.stderr)")
        #expect(!FileManager.default.fileExists(atPath: out))
    }

    @Test func receipt_withOpen_handsAPrivateCopyToXdgOpen() throws {
        let sync = try SyncHarness(startServer: false)
        try sync.daemon.start()
        defer { sync.daemon.stop() }
        let id = try Self.addWithReceipt(sync.daemon)
        // A stand-in viewer on PATH: it records what it was asked to open.
        let bin = sync.daemon.directory.at("bin")
        try FileManager.default.createDirectory(atPath: bin, withIntermediateDirectories: true)
        let seen = sync.daemon.directory.at("opened")
        let viewer = "\(bin)/xdg-open"
        try "#!/bin/sh\ncp \"$1\" \"\(seen)\"\nprintf '%s' \"$1\" > \"\(seen).path\"\n".write(toFile: viewer, atomically: true, encoding: .utf8)
        chmod(viewer, 0o755)
        let tmp = sync.daemon.directory.at("tmp")
        try FileManager.default.createDirectory(atPath: tmp, withIntermediateDirectories: true)

        let result = try sync.daemon.ctl(["receipt", id, "--open"], environment: ["PATH": "\(bin):/usr/bin:/bin", "TMPDIR": tmp])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(Self.bytes(seen) == Self.jpeg)
        let opened = try String(contentsOfFile: "\(seen).path", encoding: .utf8)
        #expect(opened.hasPrefix("\(tmp)/expensectl-receipt-") && opened.hasSuffix("/\(id).jpg"), "\(opened)")
        #expect(result.stdout.trimmingCharacters(in: .whitespacesAndNewlines) == opened)
        let folder = (opened as NSString).deletingLastPathComponent
        let mode = try FileManager.default.attributesOfItem(atPath: folder)[.posixPermissions] as? Int
        #expect(mode == 0o700, "a private folder")

        let noViewer = try sync.daemon.ctl(["receipt", id, "--open"], environment: ["PATH": "/nonexistent", "TMPDIR": tmp])
        #expect(noViewer.status == 69, "\(noViewer.stderr)")
        #expect(noViewer.stderr.contains("xdg-open is not on PATH"), "\(noViewer.stderr)")
    }

    @Test func receipt_ofGarbage_isAClearError() throws {
        let sync = try SyncHarness(startServer: false)
        try sync.daemon.start()
        defer { sync.daemon.stop() }
        let plain = try sync.daemon.ctl(["add", "--merchant", "Cafe", "--amount", "3.00", "--currency", "EUR", "--date", "2026-11-29"])
        let withoutReceipt = plain.stdout.trimmingCharacters(in: .whitespacesAndNewlines)

        let none = try sync.daemon.ctl(["receipt", withoutReceipt, "-o", sync.daemon.directory.at("x.jpg")])
        #expect(none.status == 1, "\(none.stderr)")
        #expect(none.stderr.contains("\(withoutReceipt) has no receipt"), "\(none.stderr)")
        #expect(!FileManager.default.fileExists(atPath: sync.daemon.directory.at("x.jpg")))

        let unknown = try Self.receiptToStandardOutput(sync.daemon, "cp-0000000000")
        #expect(unknown.status == 1)
        #expect(unknown.stderr.contains("no expense matches"), "\(unknown.stderr)")
        let notAnID = try Self.receiptToStandardOutput(sync.daemon, "zzz; rm")
        #expect(notAnID.status == 1)
        #expect(notAnID.stderr.contains("that is not an expense id"), "\(notAnID.stderr)")
        #expect(try sync.daemon.ctl(["receipt"]).status == 64)
        #expect(try sync.daemon.ctl(["receipt", withoutReceipt, "--json"]).status == 64, "--json needs -o or --open")
        #expect(try sync.daemon.ctl(["receipt", withoutReceipt, "-o", ""]).status == 64)

        // On a terminal, without -o: refused before anything is asked.
        let id = try Self.addWithReceipt(sync.daemon)
        let onTerminal = try runCommand("/usr/bin/script", ["-qec", "\(BuiltProducts.path("expensectl")) --socket \(sync.daemon.socketPath) receipt \(id)", "/dev/null"])
        #expect(onTerminal.status == 64, "\(onTerminal.stdout)")
        #expect(onTerminal.stdout.contains("will not write a receipt's bytes to a terminal; use -o FILE"), "\(onTerminal.stdout)")
    }
}
