import Testing
@testable import ControlProtocol
import ExpenseCore

@Suite struct ControlProtocolTests {
    private func parse(_ text: String) -> Result<ControlRequest, ControlFailure> {
        ControlRequest.parse(Array(text.utf8))
    }

    @Test func add_isParsedWithItsFields() throws {
        let request = try parse(#"{"id":7,"op":"add","expense":{"merchant":"Blue Bottle","amount":"12.50","currency":"EUR","date":"2026-11-29"}}"#).get()
        #expect(request.id == .integer(7))
        #expect(request.command == .add(fields: ExpenseFields(merchant: "Blue Bottle", amount: "12.50", currency: "EUR", date: "2026-11-29"), clientID: nil, hasReceipt: false))
    }

    @Test(arguments: [
        ("{", ControlErrorCode.invalidJSON),
        ("[]", .notAnObject),
        ("42", .notAnObject),
        ("\"add\"", .notAnObject),
        ("null", .notAnObject),
        ("{}", .missingField),
        (#"{"op":7}"#, .invalidField),
        (#"{"op":"fly"}"#, .unknownOp),
        (#"{"op":"show"}"#, .missingField),
        (#"{"op":"show","ref":5}"#, .invalidField),
        (#"{"op":"show","ref":"../../etc"}"#, .invalidField),
        (#"{"op":"add","expense":"lunch"}"#, .invalidField),
        (#"{"op":"add","expense":{"amount":12.5,"currency":"EUR"}}"#, .invalidField),
        (#"{"op":"add","expense":{"amout":"1.00"}}"#, .unknownField),
        (#"{"op":"add","expense":{"merchant":"A","amount":"1.999","currency":"EUR","date":"2026-01-01"}}"#, .invalidField),
        (#"{"op":"add","expense":{"merchant":"A","amount":"1.00","currency":"EUR"}}"#, .missingField),
        (#"{"op":"add"}"#, .missingField),
        (#"{"op":"add","expense":null,"receipt":false}"#, .missingField),
        (#"{"op":"add","expense":{"merchant":"A","amount":"-0","currency":"EUR","date":"2026-01-01"}}"#, .invalidField),
        (#"{"op":"edit","ref":"cp-1","set":{"merchant":null}}"#, .invalidField),
        (#"{"op":"add","client_id":"not-a-uuid","receipt":true}"#, .invalidField),
        (#"{"op":"add","receipt":"yes"}"#, .invalidField),
        (#"{"op":"add","receipt":true,"receipt_path":""}"#, .invalidField),
        (#"{"op":"add","receipt":true,"receipt_path":5}"#, .invalidField),
        ("{\"op\":\"add\",\"receipt\":true,\"receipt_path\":\"/\(String(repeating: "a", count: 4096))\"}", .invalidField),
        (#"{"op":"list","extra":1}"#, .unknownField),
        (#"{"op":"list","state":"lost"}"#, .invalidField),
        (#"{"op":"list","state":5}"#, .invalidField),
        (#"{"op":"list","sort":"size"}"#, .invalidField),
        (#"{"op":"list","sort":"DATE"}"#, .invalidField),
        (#"{"op":"list","since":"2026-13-01"}"#, .invalidField),
        (#"{"op":"list","since":"yesterday"}"#, .invalidField),
        (#"{"op":"list","until":"2026-02-30"}"#, .invalidField),
        (#"{"op":"list","since":"2026-12-01","until":"2026-11-01"}"#, .invalidField),
        (#"{"op":"list","limit":-1}"#, .invalidField),
        (#"{"op":"list","limit":0}"#, .invalidField),
        (#"{"op":"list","limit":100001}"#, .invalidField),
        (#"{"op":"list","limit":1.5}"#, .invalidField),
        (#"{"op":"list","limit":"50"}"#, .invalidField),
        (#"{"op":"list","limit":1e30}"#, .invalidField),
        (#"{"op":"list","offset":-5}"#, .invalidField),
        (#"{"op":"list","merchant":""}"#, .invalidField),
        (#"{"op":"list","merchant":"a\u0000b"}"#, .invalidField),
        (#"{"op":"list","category":7}"#, .invalidField),
        (#"{"op":"list","totals":"yes"}"#, .invalidField),
        (#"{"op":"list","incomplete":1}"#, .invalidField),
        (#"{"id":[1],"op":"status"}"#, .invalidField),
        (#"{"op":"resolve","ref":"cp-1"}"#, .missingField),
        (#"{"op":"resolve","ref":"cp-1","take":"both"}"#, .invalidField),
        (#"{"op":"read"}"#, .missingField),
        (#"{"op":"read","ref":5}"#, .invalidField),
        (#"{"op":"read","ref":""}"#, .invalidField),
        (#"{"op":"read","ref":"cp-1","set":{"amount":"1.00"}}"#, .unknownField),
        (#"{"op":"edit","ref":"cp-1","set":{}}"#, .invalidField),
    ] as [(String, ControlErrorCode)])
    func badRequests_getTheRightCode(_ text: String, code: ControlErrorCode) {
        guard case .failure(let failure) = parse(text) else {
            Issue.record("accepted: \(text)")
            return
        }
        #expect(failure.code == code, "\(text): \(failure)")
    }

    /// Each bad `list` value is refused naming its member and saying why.
    @Test(arguments: [
        (#"{"op":"list","state":"lost"}"#, "state", "unknown state 'lost'"),
        (#"{"op":"list","sort":"size"}"#, "sort", "unknown sort 'size'; known: date, amount, merchant, added"),
        (#"{"op":"list","since":"2026-13-01"}"#, "since", "month 13 does not exist"),
        (#"{"op":"list","until":"soon"}"#, "until", "must be YYYY-MM-DD"),
        (#"{"op":"list","since":"2026-12-01","until":"2026-11-01"}"#, "until", "is before since"),
        (#"{"op":"list","limit":-1}"#, "limit", "must be from 1 to 100000, got -1"),
        (#"{"op":"list","offset":-5}"#, "offset", "must not be negative"),
    ])
    func badListValues_nameTheMemberAndWhy(_ text: String, field: String, reason: String) {
        guard case .failure(let failure) = parse(text) else {
            Issue.record("accepted: \(text)")
            return
        }
        #expect(failure.field == field, "\(failure)")
        #expect(failure.message.contains(reason), "\(failure.message)")
    }

    @Test func list_takesBothSpellingsOfAState() throws {
        for spelling in ["needs_attention", "needs-attention"] {
            let request = try parse(#"{"op":"list","state":"\#(spelling)"}"#).get()
            #expect(request.command == .list(ListQuery(state: .needsAttention)))
        }
    }

    @Test func invalidUTF8_isNamed() {
        guard case .failure(let failure) = ControlRequest.parse([0x7B, 0xFF, 0xFE, 0x7D]) else {
            Issue.record("accepted invalid UTF-8")
            return
        }
        #expect(failure.code == .invalidUTF8)
    }

    @Test func failure_carriesTheRequestID() {
        guard case .failure(let failure) = parse(#"{"id":"abc","op":"nope"}"#) else {
            Issue.record("accepted")
            return
        }
        #expect(failure.id == .string("abc"))
        #expect(failure.json["error"]?["code"] == .string("unknown_op"))
    }

    @Test func hugeNumbers_areRejectedNotCrashed() {
        let result = parse(#"{"id":1e400,"op":"status"}"#)
        guard case .failure = result else {
            Issue.record("accepted a number out of range")
            return
        }
    }
}
