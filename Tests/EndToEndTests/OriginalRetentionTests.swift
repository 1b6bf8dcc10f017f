import ExpenseCore
import ExpenseTestSupport
import Foundation
import Testing

/// `receipt_original_retention`: the original of a receipt sent as a copy
/// goes once its copy was sent and the retention passed, never before;
/// `show` and `receipt --original` say when it went, and the backend's
/// copy is still there.
@Suite struct OriginalRetentionTests {
    @Test(arguments: ["no", "2s"])
    func anOriginal_isRemovedAsTheRetentionSays_andShowSaysWhen(_ retention: String) throws {
        let files = TemporaryDirectory(prefix: "retention")
        // A phone photo with its location: it goes as a copy without it.
        let located = try RealReceiptFiles.makeLocated(in: files)
        let sync = try SyncHarness(daemonArguments: ["--receipt-original-retention", retention])
        try sync.daemon.start()
        defer { sync.daemon.stop() }
        let id = try #require(try sync.daemon.ctlJSON(["add", "--merchant", "Taxi", "--receipt", located])["transaction_id"]?.stringValue)
        try sync.waitUntilDrained(timeout: 120)

        try waitUntil(timeout: 60, "the original to be removed") {
            try sync.daemon.ctlJSON(["show", id])["original"]?["removed_at"]?.stringValue != nil
        }
        let original = try #require(try sync.daemon.ctlJSON(["show", id])["original"])
        let size = try #require(FileManager.default.attributesOfItem(atPath: located)[.size] as? Int)
        #expect(original["kind"] == "jpeg" && original["size"]?.intValue == Int64(size), "\(original)")
        let received = try #require(original["received_at"]?.stringValue.flatMap(Timestamp.parse))
        let removed = try #require(original["removed_at"]?.stringValue.flatMap(Timestamp.parse))
        #expect(removed - received >= (retention == "no" ? 0 : 2000), "never before the retention passed: \(original)")
        try sync.daemon.waitUntilNoReceiptFiles()

        let asked = try sync.daemon.ctl(["receipt", id, "--original", "-o", files.at("back.jpg")])
        #expect(asked.status != 0 && asked.stderr.contains("was removed on") && asked.stderr.contains("receipt_original_retention"), "\(asked.stderr)")
        #expect(!FileManager.default.fileExists(atPath: files.at("back.jpg")))
        let text = try sync.daemon.ctl(["show", id])
        #expect(text.stdout.contains("Original:") && text.stdout.contains("removed"), "\(text.stdout)")
        // The backend's copy is still there, and `receipt` writes it.
        #expect(try sync.daemon.ctlJSON(["receipt", id, "-o", files.at("copy.jpg")])["kind"] == "jpeg")
        #expect(sync.daemon.log.contains("Removed the original of its receipt"), "\(sync.daemon.log)")
    }
}
