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
        (#"{"op":"list","extra":1}"#, .unknownField),
        (#"{"id":[1],"op":"status"}"#, .invalidField),
        (#"{"op":"resolve","ref":"cp-1"}"#, .missingField),
        (#"{"op":"resolve","ref":"cp-1","take":"both"}"#, .invalidField),
        (#"{"op":"edit","ref":"cp-1","set":{}}"#, .invalidField),
    ] as [(String, ControlErrorCode)])
    func badRequests_getTheRightCode(_ text: String, code: ControlErrorCode) {
        guard case .failure(let failure) = parse(text) else {
            Issue.record("accepted: \(text)")
            return
        }
        #expect(failure.code == code, "\(text): \(failure)")
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
