import ExpenseCore
@testable import ExpenseServerBackend
import Testing

@Suite struct ExpenseServerRequestTests {
    let id = "1b4e28ba-2fa1-11d2-883f-0000f87d3b6e"

    @Test func create_postsTheFieldsWithDeviceIdentity() throws {
        let job = OutboxJob(seq: 17, uuid: id, kind: .create, transactionID: TransactionID.derive(from: id),
                            fields: ExpenseFields(merchant: "Blue Bottle", amount: "12.50", currency: "EUR", date: "2026-11-29"),
                            createdMilliseconds: 1_796_030_102_123)
        let request = ExpenseServerRequest.make(for: job, deviceID: "device-1")
        #expect(request.method == "POST")
        #expect(request.path == "/v1/expenses")
        #expect(request.headers.first { $0.0 == "Idempotency-Key" }?.1 == "\"\(id)\"")
        guard case .json(let bytes) = request.body else {
            Issue.record("expected a JSON body")
            return
        }
        #expect(String(decoding: bytes, as: UTF8.self) == #"{"amount":"12.50","created_at_device":"2026-11-30T09:15:02.123Z","currency":"EUR","date":"2026-11-29","device_id":"device-1","device_seq":17,"merchant":"Blue Bottle"}"#)
        #expect(ExpenseServerRequest.make(for: job, deviceID: "device-1") == request, "the same bytes on every retry")
    }

    @Test func createBody_isTheSortedObjectOfItsMembers_forEverySetOfFields() {
        // The body is written member by member; it must be the bytes the
        // sorted JSON object of the same members gives (what earlier
        // versions sent), or a resent create would fail the server's
        // fingerprint. Every subset of the fields, values needing escapes.
        let names = ExpenseFields.names
        for mask in 0..<(1 << names.count) {
            var fields = ExpenseFields()
            for (bit, name) in names.enumerated() where mask & (1 << bit) != 0 {
                fields[name] = "\(name) \"quoted\" \\ é\u{1}\n\(mask)"
            }
            let job = OutboxJob(seq: Int64(mask) * 7919, uuid: id, kind: .create, transactionID: TransactionID.derive(from: id),
                                fields: fields, createdMilliseconds: 1_796_030_102_123 + Int64(mask))
            var object = fields.jsonMembers
            object["device_id"] = .string("device \"1\"")
            object["device_seq"] = .integer(job.seq)
            object["created_at_device"] = .string(Timestamp.format(milliseconds: job.createdMilliseconds))
            let expected = String(decoding: JSONValue.object(object).serializedBytes(), as: UTF8.self)
            #expect(String(decoding: ExpenseServerRequest.createBody(job, deviceID: "device \"1\""), as: UTF8.self) == expected)
        }
    }

    @Test func receiptEditDelete_haveTheirShapes() {
        let txn = TransactionID.derive(from: id)
        let receipt = ExpenseServerRequest.make(for: OutboxJob(seq: 2, uuid: id, kind: .receipt, transactionID: txn, receiptFile: "f.png", receiptKind: .png, receiptSize: 10), deviceID: "d")
        #expect(receipt.method == "PUT")
        #expect(receipt.path == "/v1/expenses/\(txn)/receipt")
        #expect(receipt.body == .receipt(size: 10, contentType: "image/png"))
        let edit = ExpenseServerRequest.make(for: OutboxJob(seq: 3, uuid: id, kind: .edit, transactionID: txn, fields: ExpenseFields(amount: "13.00"), baseVersion: 3), deviceID: "d")
        #expect(edit.method == "PATCH")
        #expect(edit.body == .json(Array(#"{"base_version":3,"set":{"amount":"13.00"}}"#.utf8)))
        let delete = ExpenseServerRequest.make(for: OutboxJob(seq: 4, uuid: id, kind: .delete, transactionID: txn), deviceID: "d")
        #expect(delete.method == "DELETE")
        #expect(delete.body == ExpenseServerRequest.Body.none)
    }
}
