import ControlProtocol
import ExpenseCore
import Testing

/// What expensectl sends is what the daemon parses: every command, encoded
/// and parsed again, is the same command.
@Suite struct ControlRequestEncodingTests {
    static var cleared: ExpenseFields {
        var fields = ExpenseFields(amount: "13.00")
        fields.clear("comment")
        return fields
    }

    static let commands: [ControlRequest.Command] = [
        .add(fields: ExpenseFields(merchant: "M", amount: "10.00", currency: "EUR", date: "2026-11-29"), clientID: "1b4e28ba-2fa1-11d2-883f-0000f87d3b6e", hasReceipt: false),
        .add(fields: ExpenseFields(), clientID: nil, hasReceipt: true),
        .add(fields: ExpenseFields(), clientID: nil, hasReceipt: true, receiptPath: "/home/ann/scans/r\\1.pdf"),
        .list(ListQuery()), .status, .watch(), .watch(changes: true), .stats,
        .list(ListQuery(state: .needsAttention, incomplete: true, since: "2026-01-01", until: "2026-12-31", merchant: "50%_off\\",
                        category: "Meals", sort: .amount, reverse: true, limit: 50, offset: 100, totals: true)),
        .list(ListQuery(state: .conflict, sort: .merchant)),
        .show(ref: "cp-0206"), .retry(ref: "cp-0206"), .discard(ref: "1b4e28ba"), .delete(ref: "cp-0206e11a39722b8b0b0d34"),
        .sync(refresh: false), .sync(refresh: true), .sync(refresh: false, now: true), .sync(refresh: true, now: true),
        .edit(ref: "cp-0206", fields: cleared),
        .edit(ref: "cp-0206", fields: ExpenseFields(), hasReceipt: true), .edit(ref: "cp-0206", fields: cleared, hasReceipt: true),
        .receipt(ref: "cp-0206e11a"),
        .receipt(ref: "cp-0206e11a", original: true),
        .resolve(ref: "cp-0206", takeMine: true), .resolve(ref: "cp-0206", takeMine: false),
        .read(ref: "cp-0206e11a"),
    ]

    @Test(arguments: commands)
    func encodedCommand_parsesBackToItself(_ command: ControlRequest.Command) throws {
        let request = ControlRequest(id: 12, command: command)
        #expect(try ControlRequest.parse(request.json.serializedBytes()).get() == request)
    }

    @Test func everyOperation_hasAnEncodedCommand() {
        #expect(Set(Self.commands.map(\.operation)) == Set(ControlOperation.allCases))
        #expect(ControlRequest.operations == ControlOperation.allCases.map(\.rawValue))
    }

    @Test func theLinesExpensectlSends_areTheDocumentedOnes() {
        #expect(ControlRequest(id: 5, command: .list(ListQuery())).json.serialized() == #"{"id":5,"op":"list"}"#)
        #expect(ControlRequest(id: 6, command: .list(ListQuery(state: .needsAttention, sort: .date, limit: 50))).json.serialized()
                == #"{"id":6,"limit":50,"op":"list","sort":"date","state":"needs_attention"}"#)
        #expect(ControlRequest(id: 1, command: .sync(refresh: false)).json.serialized() == #"{"id":1,"op":"sync","refresh":false}"#)
        #expect(ControlRequest(id: 1, command: .sync(refresh: false, now: true)).json.serialized() == #"{"id":1,"now":true,"op":"sync","refresh":false}"#)
        #expect(ControlRequest(id: 2, command: .resolve(ref: "cp-1", takeMine: true)).json.serialized() == #"{"id":2,"op":"resolve","ref":"cp-1","take":"mine"}"#)
        #expect(ControlRequest(id: 3, command: .edit(ref: "cp-1", fields: Self.cleared)).json.serialized()
                == #"{"id":3,"op":"edit","ref":"cp-1","set":{"amount":"13.00","comment":null}}"#)
        #expect(ControlRequest(id: 4, command: .add(fields: ExpenseFields(), clientID: "c", hasReceipt: true)).json.serialized()
                == #"{"client_id":"c","expense":{},"id":4,"op":"add","receipt":true}"#)
        #expect(ControlRequest(id: 5, command: .add(fields: ExpenseFields(), clientID: "c", hasReceipt: true, receiptPath: "/r.pdf")).json.serialized()
                == #"{"client_id":"c","expense":{},"id":5,"op":"add","receipt":true,"receipt_path":"/r.pdf"}"#)
        #expect(ControlRequest(id: 5, command: .edit(ref: "cp-1", fields: ExpenseFields(), hasReceipt: true)).json.serialized()
                == #"{"id":5,"op":"edit","receipt":true,"ref":"cp-1"}"#)
        #expect(ControlRequest(id: 6, command: .receipt(ref: "cp-1")).json.serialized() == #"{"id":6,"op":"receipt","ref":"cp-1"}"#)
        #expect(ControlRequest(id: 7, command: .receipt(ref: "cp-1", original: true)).json.serialized() == #"{"id":7,"op":"receipt","original":true,"ref":"cp-1"}"#)
    }
}
