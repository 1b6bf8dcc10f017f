import Digest
import ExpenseTestSupport
import Foundation
import Testing

/// `PUT /v1/expenses/{id}/receipt` and `GET` on its `receipt_url`.
@Suite struct ReceiptTests {
    private func expense(_ server: TestServer) throws -> String {
        try #require(try server.create(key: TestServer.key()).transactionID)
    }

    @Test(arguments: StorageEngine.allCases)
    func rightDigest_storesIdenticalBytesAndServesThemBack(_ engine: StorageEngine) throws {
        let server = try TestServer(engine)
        let id = try expense(server)
        let bytes = TestServer.png(3 << 20, seed: 7)
        let put = try server.putReceipt(id, key: TestServer.key(), bytes: bytes)
        #expect(put.status == 200)
        #expect(put.expense["receipt_url"] as? String == "/v1/expenses/\(id)/receipt")
        #expect(put.expense["version"] as? Int == 2)
        #expect(!put.isReplay)

        let url = try #require(put.expense["receipt_url"] as? String)
        let get = try server.get(url)
        #expect(get.status == 200)
        #expect(get.header("Content-Type") == "image/png")
        #expect(get.header("Repr-Digest") == TestServer.digest(of: bytes))
        #expect(SHA256.hash(get.body) == SHA256.hash(bytes))
        #expect(get.body.count == bytes.count)
        // The bytes as stored, too.
        #expect(try server.storage.storedReceiptDigests() == [Hex.encode(SHA256.hash(bytes))])
        #expect(server.stagedUploads.isEmpty)
    }

    @Test(arguments: StorageEngine.allCases, [("image/jpeg", [0xFF, 0xD8, 0xFF, 0xE0] as [UInt8]), ("application/pdf", Array("%PDF-1.7\n".utf8))])
    func otherKinds_areAcceptedWithTheirContentType(_ engine: StorageEngine, _ kind: (type: String, magic: [UInt8])) throws {
        let (type, magic) = kind
        let server = try TestServer(engine)
        let id = try expense(server)
        let bytes = magic + Array(repeating: 0x41, count: 500)
        #expect(try server.putReceipt(id, key: TestServer.key(), bytes: bytes, contentType: type).status == 200)
        let get = try server.get("/v1/expenses/\(id)/receipt")
        #expect(get.header("Content-Type") == type)
        #expect(get.body == bytes)
    }

    @Test(arguments: StorageEngine.allCases)
    func wrongDigest_is400AndStoresNothing(_ engine: StorageEngine) throws {
        let server = try TestServer(engine)
        let id = try expense(server)
        let bytes = TestServer.png(200_000)
        let wrong = TestServer.digest(of: bytes.dropLast() + [0])
        let put = try server.putReceipt(id, key: TestServer.key(), bytes: bytes, digest: wrong)
        #expect(put.status == 400)
        #expect(put.errorCode == "digest_mismatch")
        #expect(put.isJSONError)
        #expect(try server.storedReceiptCount() == 0)
        #expect(server.stagedUploads.isEmpty)
        let now = try server.get("/v1/expenses/\(id)")
        #expect(now.expense["receipt_url"] is NSNull)
        #expect(now.expense["version"] as? Int == 1)
        #expect(try server.get("/v1/expenses/\(id)/receipt").errorCode == "receipt_not_found")
    }

    @Test(arguments: StorageEngine.allCases, ["", "sha-256=abc", "sha-256=:bm90IDMyIGJ5dGVz:", "sha-512=:AAAA:", "md5=:AAAA:"]) func missingOrMalformedDigest_is400(_ engine: StorageEngine, _ header: String) throws {
        let server = try TestServer(engine)
        let id = try expense(server)
        var headers = [("Content-Type", "image/png"), ("Idempotency-Key", TestServer.key())]
        if !header.isEmpty { headers.append(("Repr-Digest", header)) }
        let put = try server.request("PUT", "/v1/expenses/\(id)/receipt", headers: headers, body: TestServer.png())
        #expect(put.status == 400)
        #expect(put.errorCode == "digest_required")
    }

    @Test(arguments: StorageEngine.allCases)
    func oversize_is413BeforeTheBodyIsRead_andNeverBuffered(_ engine: StorageEngine) throws {
        let limit = 1 << 20
        let server = try TestServer(engine, ["--receipt-max-bytes", "\(limit)"])
        let id = try expense(server)
        let baseline = try Self.peakResidentKiB(server.process.child.pid)
        let size = 64 << 20
        let connection = try server.connect()
        try connection.send(HTTPConnection.encode("PUT", "/v1/expenses/\(id)/receipt", headers: [
            ("Authorization", "Bearer \(server.token)"), ("Content-Type", "image/png"), ("Idempotency-Key", TestServer.key()),
            ("Repr-Digest", TestServer.digest(of: [1])), ("Content-Length", "\(size)"),
        ]))
        // The answer comes before a single body byte was sent.
        let response = try connection.readResponse(method: "PUT")
        #expect(response.status == 413)
        #expect(response.errorCode == "payload_too_large")
        #expect(response.text.contains("1048576 bytes (1 MiB)"))
        // Sending the 64 MiB anyway ends with the connection closed, and
        // the server never held them.
        let chunk = [UInt8](repeating: 0x5A, count: 1 << 20)
        var sent = 0
        do {
            while sent < size {
                try connection.send(chunk)
                sent += chunk.count
            }
        } catch {}
        #expect(sent < size)
        let peak = try Self.peakResidentKiB(server.process.child.pid)
        #expect(peak - baseline < 16 << 10, "peak RSS grew from \(baseline) KiB to \(peak) KiB")
        #expect(server.stagedUploads.isEmpty)
        #expect(server.isHealthy)
    }

    @Test(arguments: StorageEngine.allCases)
    func overTheDefaultLimit_is413WithTheLimitInTheMessage(_ engine: StorageEngine) throws {
        let server = try TestServer(engine)
        let id = try expense(server)
        let connection = try server.connect()
        try connection.send(HTTPConnection.encode("PUT", "/v1/expenses/\(id)/receipt", headers: [
            ("Authorization", "Bearer \(server.token)"), ("Content-Type", "image/png"), ("Idempotency-Key", TestServer.key()),
            ("Repr-Digest", TestServer.digest(of: [1])), ("Content-Length", "\((25 << 20) + 1)"),
        ]))
        let response = try connection.readResponse(method: "PUT")
        #expect(response.status == 413)
        #expect(response.text.contains("26214400 bytes (25 MiB)"))
    }

    @Test(arguments: StorageEngine.allCases)
    func wrongMagic_is415AndStoresNothing(_ engine: StorageEngine) throws {
        let server = try TestServer(engine)
        let id = try expense(server)
        let png = TestServer.png(50_000)
        let asJPEG = try server.putReceipt(id, key: TestServer.key(), bytes: png, contentType: "image/jpeg")
        #expect(asJPEG.status == 415)
        #expect(asJPEG.errorCode == "receipt_type_mismatch")
        let text = Array("just some text, not an image".utf8)
        #expect(try server.putReceipt(id, key: TestServer.key(), bytes: text).status == 415)
        let empty = try server.putReceipt(id, key: TestServer.key(), bytes: [])
        #expect(empty.status == 415)
        #expect(try server.storedReceiptCount() == 0)
        #expect(server.stagedUploads.isEmpty)
        #expect(try server.get("/v1/expenses/\(id)").expense["version"] as? Int == 1)
    }

    @Test(arguments: StorageEngine.allCases, ["image/gif", "text/plain", "application/octet-stream", ""]) func otherContentTypes_are415(_ engine: StorageEngine, _ type: String) throws {
        let server = try TestServer(engine)
        let id = try expense(server)
        let response = try server.putReceipt(id, key: TestServer.key(), bytes: TestServer.png(), contentType: type)
        #expect(response.status == 415)
        #expect(response.errorCode == "unsupported_media_type")
    }

    @Test(arguments: StorageEngine.allCases)
    func beforeTheCreate_is404WithoutReadingTheBody(_ engine: StorageEngine) throws {
        let server = try TestServer(engine)
        let connection = try server.connect()
        try connection.send(HTTPConnection.encode("PUT", "/v1/expenses/cp-0206e11a39722b8b0b0d34/receipt", headers: [
            ("Authorization", "Bearer \(server.token)"), ("Content-Type", "image/png"), ("Idempotency-Key", TestServer.key()),
            ("Repr-Digest", TestServer.digest(of: [1])), ("Content-Length", "\(10 << 20)"),
        ]))
        let response = try connection.readResponse(method: "PUT")
        #expect(response.status == 404)
        #expect(response.errorCode == "expense_not_found")
    }

    @Test(arguments: StorageEngine.allCases)
    func afterADelete_is410(_ engine: StorageEngine) throws {
        let server = try TestServer(engine)
        let id = try expense(server)
        #expect(try server.delete(id, key: TestServer.key()).status == 200)
        let put = try server.putReceipt(id, key: TestServer.key(), bytes: TestServer.png())
        #expect(put.status == 410)
        #expect(put.errorCode == "expense_deleted")
        #expect(try server.storedReceiptCount() == 0)
    }

    @Test(arguments: StorageEngine.allCases)
    func sameBytesAgain_isAReplayAndNothingIsDuplicated(_ engine: StorageEngine) throws {
        let server = try TestServer(engine)
        let id = try expense(server)
        let bytes = TestServer.png(10_000)
        #expect(try server.putReceipt(id, key: TestServer.key(), bytes: bytes).status == 200)
        // A new job (another key) with the same bytes.
        let again = try server.putReceipt(id, key: TestServer.key(), bytes: bytes)
        #expect(again.status == 200)
        #expect(again.isReplay)
        #expect(again.expense["version"] as? Int == 2)
        #expect(try server.storedReceiptCount() == 1)
    }

    @Test(arguments: StorageEngine.allCases)
    func otherBytes_replaceTheReceiptAndTheOldFileGoes(_ engine: StorageEngine) throws {
        let server = try TestServer(engine)
        let id = try expense(server)
        #expect(try server.putReceipt(id, key: TestServer.key(), bytes: TestServer.png(1000, seed: 1)).status == 200)
        let first = try server.storage.storedReceiptDigests()
        let newer = TestServer.png(2000, seed: 2)
        let put = try server.putReceipt(id, key: TestServer.key(), bytes: newer)
        #expect(put.status == 200)
        #expect(put.expense["version"] as? Int == 3)
        let now = try server.storage.storedReceiptDigests()
        #expect(now.count == 1)
        #expect(now != first)
        #expect(try server.get("/v1/expenses/\(id)/receipt").body == newer)
    }

    @Test(arguments: StorageEngine.allCases)
    func withoutContentLength_is411(_ engine: StorageEngine) throws {
        let server = try TestServer(engine)
        let id = try expense(server)
        let connection = try server.connect()
        try connection.send(HTTPConnection.encode("PUT", "/v1/expenses/\(id)/receipt", headers: [
            ("Authorization", "Bearer \(server.token)"), ("Content-Type", "image/png"), ("Idempotency-Key", TestServer.key()),
            ("Repr-Digest", TestServer.digest(of: TestServer.png())), ("Transfer-Encoding", "chunked"),
        ]) + Array("10\r\n".utf8) + Array(TestServer.png().prefix(16)) + Array("\r\n0\r\n\r\n".utf8))
        let response = try connection.readResponse(method: "PUT")
        #expect(response.status == 411)
        #expect(response.errorCode == "length_required")
        // A Content-Length beside Transfer-Encoding does not count: the
        // size would still be unknown until the end.
        let both = try server.connect()
        try both.send(HTTPConnection.encode("PUT", "/v1/expenses/\(id)/receipt", headers: [
            ("Authorization", "Bearer \(server.token)"), ("Content-Type", "image/png"), ("Idempotency-Key", TestServer.key()),
            ("Repr-Digest", TestServer.digest(of: TestServer.png())), ("Content-Length", "16"), ("Transfer-Encoding", "chunked"),
        ]))
        #expect(try both.readResponse(method: "PUT").status == 411)
        #expect(server.stagedUploads.isEmpty)
    }

    @Test(arguments: StorageEngine.allCases)
    func uploadCutShort_leavesNoFileAndNoChange(_ engine: StorageEngine) throws {
        let server = try TestServer(engine)
        let id = try expense(server)
        let bytes = TestServer.png(500_000)
        do {
            let connection = try server.connect()
            try connection.send(HTTPConnection.encode("PUT", "/v1/expenses/\(id)/receipt", headers: [
                ("Authorization", "Bearer \(server.token)"), ("Content-Type", "image/png"), ("Idempotency-Key", TestServer.key()),
                ("Repr-Digest", TestServer.digest(of: bytes)), ("Content-Length", "\(bytes.count)"),
            ]) + bytes.prefix(200_000))
            try waitUntil(timeout: 10, "the upload to reach the disk") { !server.stagedUploads.isEmpty }
        }
        // The connection is gone: the temporary file goes with it.
        try waitUntil(timeout: 10, "the temporary file to be removed") { server.stagedUploads.isEmpty }
        #expect(try server.storedReceiptCount() == 0)
        #expect(try server.get("/v1/expenses/\(id)").expense["version"] as? Int == 1)
        #expect(server.isHealthy)
    }

    @Test(arguments: StorageEngine.allCases)
    func receiptOfAnotherUser_orOfNone_is404(_ engine: StorageEngine) throws {
        let server = try TestServer(engine)
        let bob = try server.addUser("bob")
        let id = try expense(server)
        #expect(try server.get("/v1/expenses/\(id)/receipt").errorCode == "receipt_not_found")
        #expect(try server.putReceipt(id, key: TestServer.key(), bytes: TestServer.png()).status == 200)
        #expect(try server.get("/v1/expenses/\(id)/receipt", auth: .token(bob)).errorCode == "expense_not_found")
        #expect(try server.putReceipt(id, key: TestServer.key(), bytes: TestServer.png(), auth: .token(bob)).status == 404)
        #expect(try server.get("/v1/expenses/\(id)/receipt", auth: .none).status == 401)
    }

    /// `VmHWM` of a process: its peak resident memory.
    static func peakResidentKiB(_ pid: Int32) throws -> Int {
        let status = try String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8)
        let line = try #require(status.split(separator: "\n").first { $0.hasPrefix("VmHWM:") })
        return try #require(Int(line.split(separator: " ", omittingEmptySubsequences: true)[1]))
    }
}
