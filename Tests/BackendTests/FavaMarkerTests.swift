import ExpenseCore
import ExpenseTestSupport
import Foundation
import Testing

/// An entry in the real fava's answers that lacks half of its marker (the
/// `transaction_id`/`client_id` metadata, or the `^link`), as a hand edit
/// of the ledger leaves it: the lookup before a resend still finds it by
/// the other half and adopts it (docs/backends.md, "Exactly once without
/// idempotency keys"), so the create is not made twice, nothing is held
/// up, and a refresh loses nothing.
@Suite struct FavaMarkerTests {
    enum Removed: String, CaseIterable, Sendable { case metadata, link }

    @Test(arguments: Removed.allCases)
    func anEntryMissingHalfItsMarker_isFoundNotMadeAgain(_ removed: Removed) throws {
        // The daemon dies once fava answered the create, before recording
        // it: the next start must look the entry up before sending again.
        let (h, id) = try FavaHarness.crashedWithACreateInFlight()

        let text = try String(contentsOfFile: h.fava.ledgerPath, encoding: .utf8)
        var lines = text.components(separatedBy: "\n")
        switch removed {
        case .metadata: lines.removeAll { $0.contains("transaction_id: \"\(id)\"") || $0.contains("client_id: \"") }
        case .link: lines = lines.map { $0.replacingOccurrences(of: " ^\(id)", with: "") }
        }
        let edited = lines.joined(separator: "\n")
        #expect(edited != text, "the ledger had the \(removed.rawValue) to remove")
        try edited.write(toFile: h.fava.ledgerPath, atomically: false, encoding: .utf8)
        let ours = { (ledger: BeancountLedger) in
            ledger.transactions.filter { $0.links.contains(id) || $0.meta["transaction_id"] == id }
        }
        #expect(ours(try h.fava.loadLedger()).count == 1)

        try h.daemon.start()
        do {
            try h.waitUntilDrained()
        } catch {
            Issue.record("\(error): \(try h.daemon.ctlJSON(["show", id]).serialized()) \(h.daemon.log.suffix(2000))")
        }
        let shown = try h.daemon.ctlJSON(["show", id])
        #expect(shown["state"] == "synced", "\(shown.serialized())")
        #expect(shown["amount"] == "99.00" && shown["merchant"] == "Garage")
        let ledger = try h.fava.loadLedger()
        #expect(ledger.errors.isEmpty, "\(ledger.errors)")
        #expect(ours(ledger).count == 1, "adopted, not made again: \(ours(ledger).map(\.links))")
        #expect(ledger.transactions.count == 1)
        #expect(h.daemon.log.contains("replayed"), "\(h.daemon.log.suffix(1500))")

        // A refresh lists our entries by their metadata: one without it is
        // not listed, and the expense stays as it was, not dropped.
        #expect(try h.daemon.ctl(["sync", "--refresh", "--wait"]).status == 0)
        let list = try h.daemon.list()
        #expect(list.count == 1 && list.first?["transaction_id"]?.stringValue == id, "\(list.map { $0.serialized() })")
        #expect(try h.daemon.ctlJSON(["show", id])["amount"] == "99.00")
    }
}
